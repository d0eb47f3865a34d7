"""Per-submission cgroups: memory, processes and a fair CPU share for each submission.

Trusted side only. A pool makes one directory, `sdpa-sandbox-<pid>-<token>`, below its own
cgroup: in each cgroup v1 hierarchy of the memory, pids and cpu controllers, or in the v2
hierarchy when those three controllers are delegated to it (enabled for its children, or
enabled here when the grading process is alone in its cgroup: it then moves into a leaf
`sdpa-grader-<pid>`, as the v2 rules require). Each submission gets a child directory:

- memory: `memory_mb`, plus the sizes of its private /tmp and /dev/shm (tmpfs pages are
  charged to it) and a little for the runtime pages its processes copy on write; swap is
  counted where the kernel accounts it. The kernel's OOM killer acts inside the cgroup, and
  the trusted side reads its OOM-kill count to report ``memory-limit``;
- pids: `processes`;
- cpu: the default weight, equal among submissions, so that all the processes of one
  submission together get one submission's share of the processors.

A worker joins its submission's cgroups before anything else, by writing "0" to the
`cgroup.procs` files opened here (the kernel checks the opener's credentials, not the
writer's). `Cgroups.create` says why none can be used (no permission to create cgroups, no
delegated v2 controllers, not Linux); the pool then reports what is bounded without them.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import signal
import time
from dataclasses import dataclass

CONTROLLERS = ("memory", "pids", "cpu")
POOL_PREFIX = "sdpa-sandbox-"
RUNTIME_SLACK_MB = 64  # runtime pages a worker copies on write (measured: ~20 MiB)
REMOVE_SECONDS = 2.0


def _unescape(text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(mount point, root within its file system, fstype, super options) per mount."""
    mounts = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        mounts.append((_unescape(fields[4]), _unescape(fields[3]), tail[0],
                       set(tail[2].split(","))))
    return mounts


def _memberships(proc_cgroup: str) -> dict[str, str]:
    """Controller (v1) or "" (v2) -> this process's cgroup path, from /proc/self/cgroup."""
    found = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            found[controller] = parts[2]
    return found


def _below(mount_point: str, mount_root: str, path: str) -> str | None:
    """The directory of cgroup `path` in a hierarchy mounted at mount_point, if visible."""
    root = mount_root.rstrip("/")
    if path != root and not path.startswith(root + "/"):
        return None
    relative = path[len(root):].strip("/")
    return os.path.join(mount_point, relative) if relative else mount_point


def locate(mountinfo: str, proc_cgroup: str) -> tuple[str, dict[str, list[str]]]:
    """Where this process's cgroups are: ("v2", {dir: controllers}) when a cgroup v2 hierarchy
    offers the three controllers, else ("v1", {dir: controllers}) for the v1 hierarchies that
    have them; ("", {}) when neither covers all three."""
    mounts, member = _mounts(mountinfo), _memberships(proc_cgroup)
    for point, root, fstype, _ in mounts:
        if fstype == "cgroup2" and "" in member:
            directory = _below(point, root, member[""])
            try:
                with open(os.path.join(directory or "", "cgroup.controllers")) as offered:
                    controllers = offered.read().split()
            except OSError:
                continue
            if directory and all(c in controllers for c in CONTROLLERS):
                return "v2", {directory: list(CONTROLLERS)}
    dirs: dict[str, list[str]] = {}
    for point, root, fstype, options in mounts:
        if fstype != "cgroup":
            continue
        for controller in CONTROLLERS:
            if controller in options and controller in member and not any(
                    controller in listed for listed in dirs.values()):
                directory = _below(point, root, member[controller])
                if directory:
                    dirs.setdefault(directory, []).append(controller)
    if sorted(c for listed in dirs.values() for c in listed) == sorted(CONTROLLERS):
        return "v1", dirs
    return "", {}


def _write(path: str, text: str) -> None:
    with open(path, "w") as target:
        target.write(text)


def _read(path: str) -> str:
    with open(path) as source:
        return source.read()


def _remove_tree(directory: str, kill: bool = True) -> None:
    """rmdir a cgroup and its children, killing what still runs there (with `kill`); waits
    briefly for exiting processes, gives up quietly (a later pool removes stale directories)."""
    for entry in sorted(os.scandir(directory), key=lambda e: e.name) if os.path.isdir(
            directory) else ():
        if entry.is_dir(follow_symlinks=False):
            _remove_tree(entry.path, kill)
    deadline = time.monotonic() + (REMOVE_SECONDS if kill else 0)
    while True:
        try:
            os.rmdir(directory)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or not kill or time.monotonic() > deadline:
                return
        try:
            for pid in _read(os.path.join(directory, "cgroup.procs")).split():
                os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError):
            pass
        time.sleep(0.01)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _remove_stale(parent: str) -> None:
    """Remove the empty pool directories of grading processes that died without cleaning up
    (a pid may be alive in another PID namespace: what still runs there is left alone)."""
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for name in entries:
        found = re.fullmatch(POOL_PREFIX + r"(\d+)-[0-9a-f]+", name)
        if found and not _alive(int(found.group(1))):
            _remove_tree(os.path.join(parent, name), kill=False)


@dataclass
class SubmissionCgroup:
    """One submission's cgroup directories (one per v1 hierarchy, or one v2 directory)."""

    version: str
    dirs: dict[str, list[str]]  # directory -> its controllers

    def _dir(self, controller: str) -> str:
        return next(d for d, listed in self.dirs.items() if controller in listed)

    def open_procs(self) -> list[int]:
        """Descriptors of each directory's cgroup.procs, for the worker to join through."""
        return [os.open(os.path.join(d, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
                for d in self.dirs]

    def oom_kills(self) -> int:
        """Processes the OOM killer has killed in this cgroup so far."""
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        try:
            text = _read(os.path.join(self._dir("memory"), name))
        except OSError:
            return 0
        found = re.search(r"^oom_kill (\d+)$", text, re.MULTILINE)
        return int(found.group(1)) if found else 0

    def remove(self) -> None:
        for directory in self.dirs:
            _remove_tree(directory)


class Cgroups:
    """A pool's cgroup directories; `submission` makes one per submission."""

    def __init__(self, version: str, dirs: dict[str, list[str]]):
        self.version = version
        self.dirs = dirs  # pool directory -> its controllers
        self._count = 0

    @classmethod
    def create(cls) -> tuple[Cgroups | None, str]:
        """The pool's cgroups, or (None, why none can be used)."""
        try:
            with open("/proc/self/mountinfo") as info, open("/proc/self/cgroup") as member:
                version, own = locate(info.read(), member.read())
        except OSError:
            return None, "this system has no cgroups"
        if not version:
            return None, "no cgroup hierarchy offers the memory, pids and cpu controllers"
        dirs: dict[str, list[str]] = {}
        token = f"{POOL_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            if version == "v2":
                own = {_delegated_v2(next(iter(own))): list(CONTROLLERS)}
            for directory, controllers in own.items():
                _remove_stale(directory)
                os.mkdir(os.path.join(directory, token))
                dirs[os.path.join(directory, token)] = controllers
                if version == "v2":
                    _write(os.path.join(directory, token, "cgroup.subtree_control"),
                           " ".join(f"+{c}" for c in CONTROLLERS))
        except OSError as exc:
            for directory in dirs:
                _remove_tree(directory)
            # Name the hierarchy, not this pool's own folder: the reason is then the same in
            # every process, so warnings compare and group across a class.
            where = str(exc.filename or "").split(f"/{token}")[0] or "/"
            return None, f"cgroups cannot be created here ({exc.strerror}: {where})"
        return cls(version, dirs), ""

    def describe(self) -> str:
        return f"cgroup {self.version} ({', '.join(CONTROLLERS)})"

    def submission(self, limits) -> SubmissionCgroup:
        """A new cgroup with `limits` (a `Limits`) for one submission."""
        self._count += 1
        name = f"submission-{self._count}-{secrets.token_hex(3)}"
        created = SubmissionCgroup(self.version, {})
        memory = (limits.memory_mb + limits.disk_mb + 16 + RUNTIME_SLACK_MB) * 2**20
        try:
            for pool_dir, controllers in self.dirs.items():
                directory = os.path.join(pool_dir, name)
                os.mkdir(directory)
                created.dirs[directory] = controllers
                if self.version == "v2":
                    _write(f"{directory}/memory.max", str(memory))
                    if os.path.exists(f"{directory}/memory.swap.max"):
                        _write(f"{directory}/memory.swap.max", "0")
                    _write(f"{directory}/pids.max", str(limits.processes))
                    _write(f"{directory}/cpu.weight", "100")
                    continue
                if "memory" in controllers:
                    _write(f"{directory}/memory.limit_in_bytes", str(memory))
                    if os.path.exists(f"{directory}/memory.memsw.limit_in_bytes"):
                        _write(f"{directory}/memory.memsw.limit_in_bytes", str(memory))
                if "pids" in controllers:
                    _write(f"{directory}/pids.max", str(limits.processes))
                if "cpu" in controllers:
                    _write(f"{directory}/cpu.shares", "1024")
        except OSError:
            created.remove()
            raise
        return created

    def close(self) -> None:
        for directory in self.dirs:
            _remove_tree(directory)


def _delegated_v2(directory: str) -> str:
    """A v2 cgroup whose children may use the three controllers: `directory` itself, once
    they are enabled there. Enabling them is refused while processes live in it (the v2
    rule), so when this grading process is alone there it first moves into a leaf."""
    wanted = " ".join(f"+{c}" for c in CONTROLLERS)
    enabled = _read(os.path.join(directory, "cgroup.subtree_control")).split()
    if all(c in enabled for c in CONTROLLERS):
        return directory
    try:
        _write(os.path.join(directory, "cgroup.subtree_control"), wanted)
        return directory
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            raise
    members = _read(os.path.join(directory, "cgroup.procs")).split()
    if members != [str(os.getpid())]:
        raise OSError(errno.EBUSY, "other processes share this cgroup, so its controllers "
                      "cannot be delegated", directory)
    leaf = os.path.join(directory, f"sdpa-grader-{os.getpid()}")
    os.makedirs(leaf, exist_ok=True)
    _write(os.path.join(leaf, "cgroup.procs"), str(os.getpid()))
    _write(os.path.join(directory, "cgroup.subtree_control"), wanted)
    return directory
