"""`SandboxPool`: owns one zygote and hands out isolated worker processes forked from it.

A pool can be shared by many `Sandbox` objects (threads included) in one grading process; each
worker is a fresh fork of a zygote that never ran student code, so one student's monkeypatching
cannot reach another. Without an explicit pool, sandboxes share a lazily started default pool.
Grading processes forked from the pool's owner can share its zygote too (`attach_channel` in
the owner, `SandboxPool.attached` in the fork): one zygote's start for a whole class.

A pool refuses to start (`IsolationUnavailable`, saying what to do) where the kernel refuses
the namespaces of mode ``namespaces``; only ``isolation="unsafe-none"``, asked for explicitly,
runs student code without them, and every report then says so in its warnings.
"""

from __future__ import annotations

import atexit
import importlib.machinery
import importlib.util
import json
import marshal
import os
import re
import secrets
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import types
import warnings
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from urllib.parse import unquote, urlparse

from .. import BLAS_THREAD_VARIABLES
from . import private, warm
from .blocker import FORBIDDEN_PACKAGES
from .cgroups import Cgroups, SubmissionCgroup
from .errors import IsolationUnavailable
from .limits import Limits

# Shipped in dependency order and exec'd as the package `_sdpa_sandbox` inside the zygote, so
# the worker never needs the `autograder` package importable there.
SANDBOX_MODULES = ("blocker", "codec", "kernel", "seccomp", "landlock", "rootfs", "isolation",
                   "private", "worker", "zygote")
BOOTSTRAP = """\
# sdpa-course: the sandbox's zygote (see autograder/sandbox/zygote.py)
import marshal, sys, types
order, codes, config = marshal.loads(sys.stdin.buffer.read())
package = types.ModuleType("_sdpa_sandbox")
package.__path__ = []
sys.modules["_sdpa_sandbox"] = package
for name in order:
    module = types.ModuleType("_sdpa_sandbox." + name)
    module.__package__ = "_sdpa_sandbox"
    sys.modules[module.__name__] = module
    setattr(package, name, module)
    exec(codes[name], module.__dict__)
del order, codes
sys.modules["_sdpa_sandbox.zygote"].main(config)
"""
NAMESPACES = "namespaces"
UNSAFE_NONE = "unsafe-none"
ISOLATION_MODES = (NAMESPACES, UNSAFE_NONE)
ZYGOTE_START_SECONDS = 120.0
FIRST_UID = 1_000_000
UID_RANGE = 2**31 - 2 - FIRST_UID
KIT_DISTRIBUTION = "sdpa-course"
KIT_DIRECTORIES = ("source", "solutions", "tests", "release", "submitted", "autograded",
                   "feedback", ".git")
UNSAFE_WARNING = (
    "UNSAFE: student code ran without isolation (isolation='unsafe-none', asked for "
    "explicitly): it could read and change the grader's files and reach the network; only "
    "rlimits, a process group and an audit hook bounded it"
)
_warned: set[str] = set()


def _zygote_payload(config: dict) -> bytes:
    """The zygote's `config` and the sandbox's modules, compiled already, as one marshalled
    payload for `BOOTSTRAP` on its standard input: never on its command line, which every
    worker could read in /proc/self/cmdline (the paths the sandbox hides among it).

    The code comes from the bytecode Python caches beside each module (compiled and cached
    on first use, as any import would): compiling the sources in the zygote took a tenth of
    its start. Each module's code is named `<sandbox NAME>`, not by its path on this machine.
    """
    codes = {}
    for name in SANDBOX_MODULES:
        spec = importlib.util.find_spec(f"{__package__}.{name}")
        codes[name] = _named(spec.loader.get_code(spec.name), f"<sandbox {name}>")
    return marshal.dumps((list(SANDBOX_MODULES), codes, config))


def _sandbox_sources() -> bytes:
    """The source of every module shipped to the zygote: what its code is made from (the
    marshalled code itself differs from one compilation to the next)."""
    sources = []
    for name in SANDBOX_MODULES:
        spec = importlib.util.find_spec(f"{__package__}.{name}")
        sources.append(spec.loader.get_data(spec.origin))
    return b"\0".join(sources)


def _named(code: types.CodeType, filename: str) -> types.CodeType:
    """`code` and every function and class body in it, as if compiled from `filename`."""
    consts = tuple(_named(const, filename) if isinstance(const, types.CodeType) else const
                   for const in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _checkout_paths(checkout: Path) -> list[str]:
    return [str(checkout / d) for d in (*KIT_DIRECTORIES, *FORBIDDEN_PACKAGES)]


class _AskMetadata(Exception):
    """The kit's dist-info cannot be read here exactly as importlib.metadata reads it."""


def _kit_record() -> tuple[Path, list[str], str | None] | None:
    """The kit's distribution as `importlib.metadata.distribution` finds it, read from its
    dist-info directly: (the directory holding the dist-info, the paths its RECORD lists,
    the text of its direct_url.json or None); None when it is not installed.

    Importing importlib.metadata (email, zipfile, inspect...) took about 7 ms of every
    `check` (a thirtieth of a warm one), which needs only this. The search is importlib.
    metadata's: the first
    sys.path entry holding a `*.dist-info` or `*.egg-info` whose name normalises to the
    kit's. Raises `_AskMetadata` wherever that reading could differ from its own (a finder
    of distributions other than the path's, a zip or egg on sys.path, an egg-info, two
    candidates in one directory, a RECORD missing, empty or not of 1 to 3 fields a row).
    """
    import csv  # deferred: only here

    if any(getattr(finder, "find_distributions", None) is not None
           and finder is not importlib.machinery.PathFinder for finder in sys.meta_path):
        raise _AskMetadata
    wanted = re.sub(r"[-_.]+", "-", KIT_DISTRIBUTION).lower().replace("-", "_")
    for entry in sys.path:
        if os.path.basename(entry).lower().endswith(".egg"):
            raise _AskMetadata
        try:
            children = os.listdir(entry or ".")
        except NotADirectoryError:  # a zip: importlib.metadata looks inside
            raise _AskMetadata from None
        except OSError:
            continue
        found = [child for child in children if child.lower().endswith(
            (".dist-info", ".egg-info")) and re.sub(
                r"[-_.]+", "-", child.lower().rpartition(".")[0].partition("-")[0]
            ).replace("-", "_") == wanted]
        if not found:
            continue
        if len(found) != 1 or not found[0].lower().endswith(".dist-info"):
            raise _AskMetadata
        info = Path(entry, found[0])
        try:
            record = (info / "RECORD").read_text(encoding="utf-8")
        except OSError:
            raise _AskMetadata from None
        rows = list(csv.reader(record.splitlines()))
        if not rows or any(not 1 <= len(row) <= 3 for row in rows):
            raise _AskMetadata
        try:
            direct_url = (info / "direct_url.json").read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
            direct_url = None
        return info.parent, [row[0] for row in rows], direct_url
    return None


def _kit_record_by_metadata() -> tuple[Path, list[str], str | None] | None:
    """`_kit_record`, asked of importlib.metadata itself."""
    import importlib.metadata  # deferred: see `_kit_record`

    try:
        dist = importlib.metadata.distribution(KIT_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    return (Path(str(dist.locate_file(""))), [str(file) for file in dist.files or ()],
            dist.read_text("direct_url.json"))


def _installed_kit_paths() -> list[str]:
    """Every top-level file or directory the kit's distribution installed (its packages, the
    data copy of `source/` and `solutions/`, the .pth of an editable install, dist-info),
    and the checkout an editable install points at."""
    try:
        found = _kit_record()
    except _AskMetadata:
        found = _kit_record_by_metadata()
    if found is None:
        return []
    where, files, direct_url = found
    paths = set()
    site_dir = where.resolve()
    for file in files:
        path = (where / file).resolve()
        try:
            first = path.relative_to(site_dir).parts[0]
        except (ValueError, IndexError):
            paths.add(str(path))  # a script outside the site directory
            continue
        paths.add(str(site_dir / first) if first != "__pycache__" else str(path))
    try:
        url = json.loads(direct_url or "{}").get("url", "")
    except ValueError:
        url = ""
    if url.startswith("file://"):
        paths.update(_checkout_paths(Path(unquote(urlparse(url).path))))
    return sorted(paths)


def find_hidden_paths(extra: Iterable[str | os.PathLike] = ()) -> list[str]:
    """Paths student code must not read: the forbidden packages wherever they are imported
    from, the kit's installed files (whatever the install mode), its checkout's course
    material, and `extra` (course directory, gradebook)."""
    paths: list[str] = _installed_kit_paths()
    for name in FORBIDDEN_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        locations = list(spec.submodule_search_locations or []) or [spec.origin]
        for location in locations:
            if location:
                paths.append(os.path.realpath(location))
                checkout = Path(location).resolve().parent
                if (checkout / "pyproject.toml").is_file():
                    paths += _checkout_paths(checkout)
    paths += [os.path.realpath(p) for p in extra]
    return sorted(set(paths))


def _zygote_environment() -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/",
           "MPLBACKEND": "Agg", "TMPDIR": private.temporary_base(tempfile.gettempdir())}
    for name in BLAS_THREAD_VARIABLES:
        env[name] = "1"
    return env


def _host_root() -> bool:
    """Root of the initial user namespace (not of a container's own user namespace)."""
    try:
        with open("/proc/self/uid_map") as uid_map:
            return os.geteuid() == 0 and uid_map.read().split() == ["0", "0", "4294967295"]
    except OSError:
        return False


def write_id_maps(pid: int) -> dict:
    """Write the uid and gid maps of the zygote's new user namespace.

    As root: uid and gid 0, and the range of spare ids, map to themselves, so that each
    submission runs as a spare uid of its own (never root, whose processes RLIMIT_NPROC does
    not count). Otherwise the grader's uid and gid become root of the namespace.
    """
    try:
        if _host_root():
            ids = f"0 0 1\n{FIRST_UID} {FIRST_UID} {UID_RANGE}\n"
            for name in ("uid_map", "gid_map"):
                with open(f"/proc/{pid}/{name}", "w") as id_map:
                    id_map.write(ids)
            return {"ok": True, "spare_uids": True}
        with open(f"/proc/{pid}/setgroups", "w") as setgroups:
            setgroups.write("deny")
        for name, own in (("uid_map", os.geteuid()), ("gid_map", os.getegid())):
            with open(f"/proc/{pid}/{name}", "w") as id_map:
                id_map.write(f"0 {own} 1\n")
        return {"ok": True, "spare_uids": False}
    except OSError as exc:
        return {"ok": False, "error": f"could not write the new user namespace's id maps ({exc})"}


class SandboxPool:
    """One zygote shared by many sandboxes; a context manager.

    isolation: "namespaces" (the default: user, mount, PID, IPC and network namespaces,
    Landlock, seccomp; `IsolationUnavailable` where the kernel refuses them) or "unsafe-none"
    (student code runs as the grader, with rlimits, a process group and an audit hook only;
    every report says so).
    hidden_paths: extra files or directories to hide (course directory, gradebook).
    keep_warm: seconds to keep the zygote after this pool's last use, for the next pool with
    the same configuration to fork its workers from (`warm`; `sdpa-course check`); 0: no.
    """

    def __init__(self, *, isolation: str = NAMESPACES,
                 hidden_paths: Iterable[str | os.PathLike] = (), keep_warm: float = 0.0):
        if isolation not in ISOLATION_MODES:
            raise ValueError(f"isolation must be one of {ISOLATION_MODES}, not {isolation!r}")
        self.isolation = isolation
        self.hidden = find_hidden_paths(hidden_paths)
        self.mode = ""
        self.warnings: list[str] = []
        self.layers: dict[str, object] = {}  # what the kernel granted: landlock ABI, seccomp...
        self.cgroups: Cgroups | None = None
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._owner = os.getpid()
        self._closed = False
        self._pending: tuple[subprocess.Popen, socket.socket] | None = None
        self._cgroups_tried = False
        self._cgroup_note = ""
        self.zygote_pid = 0  # the process that forks the workers (the first one only waits)
        self.boot_seconds: dict[str, float] = {}  # the zygote's start, step by step
        self._launched = 0.0
        self._attached = False  # forks from another pool's zygote (see `attached`)
        self.keep_warm = keep_warm if isolation == NAMESPACES else 0.0
        self.warm = False  # whether this pool's zygote was already running, kept warm
        self.warm_socket: Path | None = None  # where a zygote kept warm listens, if any
        self._warm_socket: Path | None = None  # where the zygote this pool starts will listen
        self._preforked: tuple | None = None  # (limits, uid, cgroup, channels): `prefork`

    def __enter__(self) -> SandboxPool:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def start(self, wait: bool = True) -> None:
        """Start the zygote now rather than at the first submission.

        With wait=False the zygote boots (about half a second of imports) while the caller goes
        on, e.g. reading the submission; the first `spawn` waits for it. Raises
        `IsolationUnavailable` (with wait, or at the first spawn) where namespaces are refused.
        """
        with self._lock:
            if wait:
                self._ensure_started()
            elif self._pending is None and not self._running():
                self._begin_launch()

    def _running(self) -> bool:
        if self._owner != os.getpid():
            return False
        if self._attached:
            return self._control is not None
        return self._process is not None and self._process.poll() is None

    def attach_channel(self) -> socket.socket:
        """A new control channel to this pool's zygote, for a process about to be forked
        from this one (a grading process): there, `SandboxPool.attached(self, channel)`
        forks its workers from this zygote instead of starting one of its own. Close this
        process's copy of the channel once the fork is done."""
        with self._lock:
            self._ensure_started()
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                socket.send_fds(self._control, [json.dumps({"op": "attach"}).encode()],
                                [theirs.fileno()])
                reply = self._control.recv(1 << 16)
            except OSError:
                reply = b""
            finally:
                theirs.close()
            if not reply or json.loads(reply).get("ok") is not True:
                ours.close()
                raise RuntimeError(f"the sandbox zygote refused a channel: {reply!r}")
            return ours

    @classmethod
    def attached(cls, parent: SandboxPool, channel: socket.socket) -> SandboxPool:
        """In a process forked from `parent`'s owner after `parent.attach_channel()`: a pool
        whose workers come from parent's zygote through `channel`, with the same isolation
        and hidden paths, and cgroups of its own. Should that zygote be gone, the pool starts
        one of its own. Closes this process's copy of parent's own control socket."""
        if parent._owner == os.getpid():
            raise RuntimeError("SandboxPool.attached is for a process forked from the pool's")
        if parent._control is not None:
            parent._control.close()  # this process's copy: the parent's end stays open
            parent._control = None
        pool = cls(isolation=parent.isolation)
        pool.hidden = list(parent.hidden)
        pool._control, pool._attached = channel, True
        pool.mode, pool.zygote_pid = parent.mode, parent.zygote_pid
        pool.boot_seconds = dict(parent.boot_seconds)
        pool._ensure_cgroups()
        pool.layers = {**parent.layers,
                       "cgroups": pool.cgroups.describe() if pool.cgroups else ""}
        pool.warnings = pool._describe_gaps()
        return pool

    def _ensure_started(self) -> None:
        if self._closed:
            raise RuntimeError("this SandboxPool is closed")
        if self._owner != os.getpid():  # inherited across fork: the zygote is the parent's
            self._process, self._control, self._pending, self.cgroups = None, None, None, None
            self._owner, self._cgroups_tried, self._attached = os.getpid(), False, False
        if self._pending is not None:
            self._finish_launch()
        if self._running():
            return
        self._stop_zygote()
        self._begin_launch()
        if self._pending is not None:  # not when a warm zygote answered
            self._finish_launch()

    def _ensure_cgroups(self) -> None:
        if not self._cgroups_tried:
            self._cgroups_tried = True
            self.cgroups, why = Cgroups.create() if sys.platform.startswith("linux") else (
                None, "not Linux")
            self._cgroup_note = why

    def _begin_launch(self) -> None:
        self._ensure_cgroups()
        config = {"isolation": self.isolation, "hidden": self.hidden}
        environment = _zygote_environment()
        listener = self._warm_listener(config, environment) if self.keep_warm else None
        if self._attached:  # a warm zygote answered
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # the zygote's pid, below
        config["control_fd"] = theirs.fileno()
        passed = [theirs.fileno()]
        if listener is not None:
            config.update(listen_fd=listener.fileno(), idle_seconds=self.keep_warm)
            passed.append(listener.fileno())
        self._launched = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOTSTRAP],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=passed, env=environment, cwd="/", start_new_session=True)
        theirs.close()
        if listener is not None:
            listener.close()  # the zygote's now
        process.stdin.write(_zygote_payload(config))
        process.stdin.close()
        self._pending = (process, ours)

    def _warm_listener(self, config: dict, environment: dict) -> socket.socket | None:
        """Connect to the warm zygote built from `config` if one runs (then this pool is
        attached to it); otherwise a listening socket for the one about to start, or None
        where none can be kept (no private directory for it, no such sockets: a check then
        goes on as if asked not to keep one)."""
        try:
            path = warm.socket_path(warm.zygote_key(config, environment, _sandbox_sources()))
        except (OSError, ValueError):
            path = None
        if path is None:
            return None
        reached = warm.connect(path)
        if reached is None:
            listener = warm.listen(path)
            if listener is not None:
                self.warm_socket = self._warm_socket = path
            return listener
        self.warm_socket = path
        self._control, hello, self.zygote_pid = reached
        self._attached, self.warm = True, True
        self._adopt(hello)
        return None

    def _finish_launch(self) -> None:
        process, ours = self._pending
        self._pending = None
        ours.settimeout(ZYGOTE_START_SECONDS)
        while True:
            try:
                raw, ancillary, _, _ = ours.recvmsg(1 << 16, socket.CMSG_SPACE(12))
            except OSError:
                raw, ancillary = b"", []
            ready = json.loads(raw) if raw else {"ok": False, "error": "the zygote exited"}
            for level, kind, data in ancillary:
                if (level, kind) == (socket.SOL_SOCKET, socket.SCM_CREDENTIALS):
                    self.zygote_pid = struct.unpack("i", data[:4])[0]
            if ready.get("op") != "map":
                break
            ours.send(json.dumps(write_id_maps(process.pid)).encode())
        if not ready.get("ok"):
            if self._warm_socket is not None:  # nobody will listen there
                warm.remove(self._warm_socket)
            process.kill()
            detail = process.stderr.read().decode(errors="replace")[-2000:]
            process.wait()
            ours.close()
            if "unavailable" in ready:
                raise IsolationUnavailable(str(ready["unavailable"]))
            raise RuntimeError(f"the sandbox could not start: {ready.get('error')}\n{detail}")
        process.stderr.close()
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 0)
        ours.settimeout(30.0)
        self._process, self._control = process, ours
        self.boot_seconds = self._boot_steps(ready.get("marks"))
        self._adopt(ready)

    def _adopt(self, ready: dict) -> None:
        """Take the mode and layers a zygote's ready message (or warm hello) reports."""
        self.mode = ready["mode"]
        self.layers = {"landlock": ready.get("landlock", 0), "seccomp": ready.get("seccomp"),
                       "spare_uids": ready.get("spare_uids"),
                       "cgroups": self.cgroups.describe() if self.cgroups else ""}
        self.warnings = self._describe_gaps()
        for text in self.warnings:
            if text not in _warned:
                _warned.add(text)
                warnings.warn(text, RuntimeWarning, stacklevel=5)

    def _boot_steps(self, marks: object) -> dict[str, float]:
        """Seconds each step of the zygote's start took, from its launch (for benchmarks)."""
        if type(marks) is not dict:
            return {}
        steps, previous = {}, self._launched
        for name, moment in marks.items():
            if type(moment) is float and moment >= previous:
                steps[name] = moment - previous
                previous = moment
        return steps

    def _describe_gaps(self) -> list[str]:
        """What a report must say about how this pool bounds student code, if anything."""
        if self.mode == UNSAFE_NONE:
            return [UNSAFE_WARNING]
        notes = []
        if not self.cgroups:
            notes.append(
                f"no per-submission cgroup ({self._cgroup_note}): each process of a submission "
                f"may use memory_mb of address space (RLIMIT_AS), so up to processes x "
                f"memory_mb in all; processes are bounded by RLIMIT_NPROC in the submission's "
                f"own user namespace or uid, CPU time per process by RLIMIT_CPU; the "
                f"submission's processor share is not isolated from other submissions graded "
                f"at the same time")
        if not self.layers["landlock"]:
            notes.append("Landlock is unavailable on this kernel: files are hidden by the "
                         "mount namespace alone")
        if not self.layers["seccomp"]:
            notes.append("no seccomp filter for this architecture: system calls are bounded "
                         "by the namespaces and the lack of capabilities alone")
        return notes

    def new_cgroup(self, limits: Limits) -> SubmissionCgroup | None:
        """A cgroup for one submission, or None where this pool has none."""
        with self._lock:
            self._ensure_started()
            if self.cgroups is None:
                return None
        return self.cgroups.submission(limits)

    def spawn(self, limits: Limits, uid: int, cgroup: SubmissionCgroup | None = None
              ) -> tuple[socket.socket, int, int]:
        """Fork a worker; return (its socket, its output pipe, its exit report pipe).

        The worker's first message is "ready"; the socket passes credentials until then, so
        that the caller learns the worker's pid from the kernel.
        """
        with self._lock:
            for attempt in range(2):
                self._ensure_started()
                cgroup_fds = cgroup.open_procs() if cgroup is not None else []
                request = json.dumps({"uid": uid, "limits": asdict(limits),
                                      "hidden": self.hidden,
                                      "cgroup_fds": len(cgroup_fds)}).encode()
                ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
                out_read, out_write = os.pipe()
                report_read, report_write = os.pipe()
                try:
                    socket.send_fds(self._control, [request],
                                    [theirs.fileno(), out_write, report_write, *cgroup_fds])
                    reply = self._control.recv(1 << 16)
                except OSError:
                    reply = b""
                finally:
                    theirs.close()
                    for fd in (out_write, report_write, *cgroup_fds):
                        os.close(fd)
                answer = json.loads(reply) if reply else {}
                if answer.get("ok"):
                    return ours, out_read, report_read
                ours.close()
                os.close(out_read)
                os.close(report_read)
                self._stop_zygote()
                if attempt:
                    raise RuntimeError(f"the sandbox zygote could not fork a worker: {reply!r}")
        raise AssertionError("unreachable")

    @staticmethod
    def new_uid() -> int:
        """A spare uid for one submission (random, so concurrent pools rarely collide)."""
        return FIRST_UID + secrets.randbelow(UID_RANGE)

    def _stop_zygote(self) -> None:
        if self._pending is not None:
            try:
                self._finish_launch()
            except RuntimeError:
                pass
        if self._control is not None:
            self._control.close()
        if self._process is not None and self.keep_warm:
            self._process = None  # kept warm: it ends by itself once idle
        if self._process is not None:
            try:
                self._process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process, self._control = None, None
        self._attached = False  # a zygote started again is this pool's own

    def prefork(self, limits: Limits) -> bool:
        """Fork the next submission's worker now, for the first `Sandbox` with these `limits`
        to take (`take_preforked`), if this pool's zygote is running already (kept warm):
        the worker joins its cgroup and isolates itself while the caller goes on (`check`
        imports numpy and the engine meanwhile) instead of while it waits. It is a fresh
        fork like any other, with a uid and a cgroup of its own, and runs no code before the
        sandbox that takes it sends some; one nobody takes ends with the pool. Whether a
        worker was forked."""
        with self._lock:
            if (self._closed or self._preforked is not None or self._pending is not None
                    or not self._running()):
                return False
        uid, cgroup = self.new_uid(), None
        try:
            cgroup = self.new_cgroup(limits)
            channels = self.spawn(limits, uid, cgroup)
        except (OSError, RuntimeError):  # the sandbox's own fork then fails, and says why
            if cgroup is not None:
                cgroup.remove()
            return False
        preforked = (limits, uid, cgroup, channels)
        with self._lock:
            if self._preforked is None and not self._closed:
                self._preforked = preforked
                return True
        _discard_preforked(preforked)  # closed, or another thread forked one meanwhile
        return False

    def take_preforked(self, limits: Limits
                       ) -> tuple[int, SubmissionCgroup | None, tuple] | None:
        """The worker `prefork` started, if it was for these `limits`, as (its uid, its
        cgroup, `spawn`'s channels), and only once; None otherwise."""
        with self._lock:
            preforked, self._preforked = self._preforked, None
        if preforked is None:
            return None
        if preforked[0] != limits or self._owner != os.getpid():
            # in a process forked from the owner, the worker and its cgroup stay the owner's
            _discard_preforked(preforked, owned=self._owner == os.getpid())
            return None
        return preforked[1:]

    def close(self) -> None:
        """Stop the zygote, which takes every worker it forked along, and remove the cgroups."""
        with self._lock:
            self._closed = True
            if self._preforked is not None:
                _discard_preforked(self._preforked, owned=self._owner == os.getpid())
            self._preforked = None
            if self._owner == os.getpid():
                self._stop_zygote()
                if self.cgroups is not None:
                    self.cgroups.close()
                    self.cgroups = None


def _discard_preforked(preforked: tuple, owned: bool = True) -> None:
    """End a worker `prefork` started that no sandbox took: the zygote kills it once its
    report pipe is closed, and its cgroup (killing what is left there) goes. Not `owned`
    (in a process forked from the pool's owner): only this process's copies close."""
    _, _, cgroup, (sock, out_read, report_read) = preforked
    sock.close()
    for fd in (out_read, report_read):
        os.close(fd)
    if cgroup is not None and owned:
        cgroup.remove()


_default_pool: SandboxPool | None = None
_default_lock = threading.Lock()


def default_pool() -> SandboxPool:
    """The process-wide pool used by sandboxes created without one (mode "namespaces")."""
    global _default_pool
    with _default_lock:
        if _default_pool is None or _default_pool._owner != os.getpid():
            _default_pool = SandboxPool()
            atexit.register(_default_pool.close)
        return _default_pool
