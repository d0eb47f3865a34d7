"""Operating-system isolation of the zygote and of each submission's worker.

Runs in the zygote and its workers (shipped as source: standard library only). Two modes,
chosen by the trusted side and fixed for a zygote's life:

``namespaces`` (Linux: as root, as an ordinary user, as root without CAP_SYS_ADMIN)
    The zygote enters new user, mount, network, IPC and PID namespaces (`enter_zygote`;
    the trusted side writes its uid and gid maps: as root, uid 0 and the range of spare uids
    map to themselves; otherwise the grader's own uid becomes root of the namespace), builds
    its private root (`rootfs`) and chroots into it. Each worker (`isolate_worker`) is the
    init of a new PID namespace, takes new mount, IPC and network namespaces (so concurrent
    submissions cannot talk, even over abstract UNIX sockets), mounts its own /proc and
    private size-limited /tmp and /dev/shm, then gives up every privilege: as root it becomes
    a spare uid of its own; otherwise it enters one more user namespace of its own, where its
    processes are counted for RLIMIT_NPROC (Linux >= 5.14 counts that rlimit per user
    namespace), and drops all capabilities. Then rlimits, no_new_privs, Landlock and the
    seccomp filter, and a check that the kernel reports them in force.
``unsafe-none`` (asked for explicitly)
    rlimits, a new session killed as a process group, a temporary workdir, and the audit
    hook of `blocker`; student code runs as the grader with the grader's files and network.
"""

from __future__ import annotations

import os
import resource
import signal

from . import kernel, landlock, seccomp

NAMESPACES = "namespaces"
UNSAFE_NONE = "unsafe-none"
WORKDIR = "/tmp/work"
HOLD = "/proc"  # mountpoint briefly holding the root's /tmp while the private one is built
SHM_MB = 16
ZERO_CAPS = "0000000000000000"


class Unavailable(Exception):
    """The kernel refused the namespaces; the message says which call and why."""


def enter_zygote(write_maps) -> None:
    """Enter new user, mount, network, IPC and PID namespaces; `write_maps()` has the trusted
    side write this process's id maps. The next fork is the new PID namespace's init."""
    if not kernel.LINUX:
        raise Unavailable(f"Linux namespaces are unavailable on {os.uname().sysname}")
    try:
        kernel.unshare(kernel.CLONE_NEWUSER | kernel.CLONE_NEWNS | kernel.CLONE_NEWNET
                       | kernel.CLONE_NEWIPC | kernel.CLONE_NEWPID)
    except OSError as exc:
        why = {1: "unprivileged user namespaces are disabled, or a security policy forbids "
                  "them", 28: "the limit on user namespaces (user.max_user_namespaces) is 0 or "
                  "reached", 22: "the kernel lacks one of them"}.get(exc.errno, exc.strerror)
        raise Unavailable(f"the kernel refused new user, mount, PID, IPC and network "
                          f"namespaces: {why}") from None
    write_maps()


def _private_tmp(disk_mb: int, held: list[str]) -> None:
    """A fresh tmpfs on /tmp; runtime trees the root had under /tmp (a checkout cloned
    there) are bound back into it read-only, through HOLD."""
    flags = kernel.MS_NOSUID | kernel.MS_NODEV
    if held:
        kernel.mount("/tmp", HOLD, None, kernel.MS_BIND | kernel.MS_REC)
    kernel.mount("tmpfs", "/tmp", "tmpfs", flags, f"size={disk_mb}m,mode=1777")
    for name in held:
        source, target = f"{HOLD}/{name}", f"/tmp/{name}"
        if os.path.isdir(source):
            os.mkdir(target, 0o755)
        else:
            open(target, "a").close()
        kernel.mount(source, target, None, kernel.MS_BIND | kernel.MS_REC)
    if held:
        kernel.umount(HOLD)


def isolate_worker(disk_mb: int, held: list[str], owner: int) -> None:
    """In a new PID namespace's init, still root of the zygote's user namespace: new mount,
    IPC, network and cgroup namespaces (its cgroups joined already: it sees them as its
    root), /proc, private /tmp and /dev/shm, the empty workdir."""
    kernel.unshare(kernel.CLONE_NEWNS | kernel.CLONE_NEWIPC | kernel.CLONE_NEWNET
                   | kernel.CLONE_NEWCGROUP)
    _private_tmp(disk_mb, held)  # before /proc: HOLD is /proc's mountpoint
    kernel.mount("proc", "/proc", "proc", kernel.MS_NOSUID | kernel.MS_NODEV | kernel.MS_NOEXEC)
    kernel.mount("tmpfs", "/dev/shm", "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV
                 | kernel.MS_NOEXEC, f"size={SHM_MB}m,mode=1777")
    os.mkdir(WORKDIR, 0o700)
    os.chown(WORKDIR, owner, owner)


def become_student(uid: int, spare_uids: bool) -> None:
    """Give up every privilege. With spare uids (root): become `uid` in the zygote's user
    namespace. Otherwise: enter a user namespace of one's own as `uid`. No capabilities are
    left in any namespace."""
    if spare_uids:
        kernel.limit_capabilities()
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # from uid 0 to none: the kernel clears every capability
        return
    kernel.unshare(kernel.CLONE_NEWUSER)
    kernel.write_file("/proc/self/setgroups", "deny")
    kernel.write_file("/proc/self/uid_map", f"{uid} 0 1")
    kernel.write_file("/proc/self/gid_map", f"{uid} 0 1")
    kernel.limit_capabilities()  # a new user namespace starts with every capability
    kernel.clear_capabilities()


def confine(landlock_abi: int) -> None:
    """no_new_privs, then Landlock and the seccomp filter (where the kernel has them)."""
    kernel.no_new_privs()
    if landlock_abi >= 1:
        landlock.restrict(landlock_abi)
    if seccomp.available():
        seccomp.install()


def check_confined(uid: int, spare_uids: bool) -> None:
    """Refuse to serve unless the kernel reports the student's credentials as intended. (An
    ordinary user's supplementary groups cannot be dropped without privilege: they remain.)"""
    status = kernel.process_status()
    problems = [f"{key} is {status.get(key)}" for key in
                ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
                if status.get(key) != ZERO_CAPS]
    if status.get("NoNewPrivs") != "1":
        problems.append("no_new_privs is not set")
    if seccomp.available() and status.get("Seccomp") != "2":
        problems.append("the seccomp filter is not in force")
    for ids in ("Uid", "Gid"):
        if status.get(ids, "").split() != [str(uid)] * 4:
            problems.append(f"{ids} is {status.get(ids)}")
    if spare_uids and status.get("Groups", "").split():
        problems.append(f"supplementary groups are {status.get('Groups')}")
    if problems:
        raise RuntimeError("worker isolation incomplete: " + "; ".join(problems))


def address_space_bytes() -> int:
    """Current virtual memory size of this process, 0 if unknown."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def processes_of(uid: int) -> list[int]:
    """Pids of the live (not zombie) processes owned by `uid` (Linux /proc), [] where unknown."""
    pids = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return pids
    for entry in entries:
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid != uid:
                    continue
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    state = stat.read().rpartition(b")")[2].split()[0]
            except (OSError, IndexError):
                continue
            if state not in (b"Z", b"X"):
                pids.append(int(entry))
    return pids


def apply_limits(limits: dict, baseline_bytes: int, mode: str) -> None:
    def cap(which, soft, hard=None):
        hard = soft if hard is None else hard
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, current_hard), min(hard, current_hard)
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            pass

    cap(resource.RLIMIT_CORE, 0)
    cap(resource.RLIMIT_CPU, int(limits["cpu_seconds"]), int(limits["cpu_seconds"]) + 1)
    if baseline_bytes:
        cap(resource.RLIMIT_AS, baseline_bytes + int(limits["memory_mb"]) * 2**20)
    nproc = int(limits["processes"])
    if mode == UNSAFE_NONE:  # the grader's own uid: count what it already runs
        nproc += len(processes_of(os.getuid()))
    cap(resource.RLIMIT_NPROC, nproc)
    cap(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    cap(resource.RLIMIT_FSIZE, int(limits["disk_mb"]) * 2**20)


def reset_signals() -> None:
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
