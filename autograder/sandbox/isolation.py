"""Operating-system isolation of the sandbox: namespaces, a private root, rlimits, a spare uid.

Runs inside the zygote and its children (shipped as source: standard library only). Three
modes, chosen once per zygote:

- ``namespaces`` (Linux, root): the zygote enters new mount and network namespaces and chroots
  into a fresh tmpfs holding read-only, nosuid bind mounts of only the system and Python
  runtime directories; the forbidden packages are masked even there. Each submission then gets
  its own PID, mount and IPC namespaces, a fresh /proc, a private size-limited /tmp holding
  its empty workdir, and runs as a spare uid with no capabilities and no_new_privs.
- ``uid`` (root, namespaces refused): no file hiding beyond the audit hook and no network
  isolation, but a spare uid, rlimits, and kill-by-uid at the end.
- ``none`` (not root, or not Linux): rlimits, a new session killed as a process group, the
  audit hook refusing the hidden paths, and a temporary workdir.
"""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import signal
import sys
import tempfile

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "localtime",
               "alternatives", "hosts", "protocols", "services", "mime.types")
DEVICES = ("null", "zero", "full", "random", "urandom")
ZYGOTE_MPLCONFIGDIR = "/var/cache/matplotlib"
NAMESPACE_WORKDIR = "/tmp/work"
RUNTIME_HOLD = "/.runtime-hold"  # in the private root: runtime trees under /tmp wait here

_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def setns(fd: int, nstype: int) -> None:
    _check(_libc.setns(fd, nstype), "setns")


def die_with_parent() -> None:
    """SIGKILL this process if the zygote dies (set after the last change of uid)."""
    if _libc is not None:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    def arg(text):
        return None if text is None else os.fsencode(text)

    _check(_libc.mount(arg(source), arg(target), arg(fstype), flags, arg(data)),
           f"mount {target}")


def _bind(source: str, target: str, readonly: bool) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    mount(source, target, None, MS_BIND | MS_REC)
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | (MS_RDONLY | MS_NODEV if readonly else 0)
    mount(None, target, None, flags)


def _mask(target: str) -> None:
    """Hide a file or directory that sits inside a mounted runtime tree."""
    if os.path.isdir(target):
        mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=555")
    elif os.path.exists(target):
        mount("/dev/null", target, None, MS_BIND)


def python_trees() -> list[str]:
    """The Python installation and virtualenv directories, outermost only."""
    trees = {os.path.realpath(p) for p in
             (sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix)}
    outermost = []
    for tree in sorted(trees):
        if not any(tree == t or tree.startswith(t + os.sep) for t in outermost):
            outermost.append(tree)
    return outermost


def _populate_etc(root: str) -> None:
    etc = root + "/etc"
    os.makedirs(etc, exist_ok=True)
    for name in ETC_ENTRIES:
        source = "/etc/" + name
        if os.path.islink(source):
            os.symlink(os.readlink(source), f"{etc}/{name}")
        elif os.path.isdir(source):
            shutil.copytree(source, f"{etc}/{name}", symlinks=True)
        elif os.path.isfile(source):
            shutil.copy(source, f"{etc}/{name}")
    with open(etc + "/passwd", "w") as passwd:
        passwd.write("root:x:0:0:root:/root:/usr/sbin/nologin\n"
                     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    with open(etc + "/group", "w") as group:
        group.write("root:x:0:\nnogroup:x:65534:\n")


def _populate_dev(root: str) -> None:
    dev = root + "/dev"
    os.makedirs(dev + "/shm", exist_ok=True)
    for name in DEVICES:
        _bind("/dev/" + name, f"{dev}/{name}", readonly=False)
    os.symlink("/proc/self/fd", dev + "/fd")
    for number, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{number}", f"{dev}/{name}")


def _private_root_dir() -> tuple[str, str]:
    """A directory for the new root: (its path, the host directory left behind or "").

    When nothing to bind lives under /tmp, a tmpfs over /tmp (private to this mount
    namespace) holds it and nothing is left on the host; otherwise a host temporary directory
    serves as the mount point and must be removed once the zygote has stopped.
    """
    sources = [*SYSTEM_DIRS, *python_trees()]
    if not any(os.path.realpath(p) == "/tmp" or os.path.realpath(p).startswith("/tmp/")
               for p in sources if os.path.exists(p)):
        mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
        os.mkdir("/tmp/root", 0o755)
        return "/tmp/root", ""
    root = tempfile.mkdtemp(prefix="sdpa-sandbox-root-")
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    return root, root


def build_root(hidden: list[str], font_cache: str = "") -> tuple[str, str]:
    """Make the private root; return (its path, a host directory to remove later or "").

    `font_cache`, a host directory only root can enter, is mounted as matplotlib's config
    directory so its font list survives from one zygote to the next. Call in a new mount
    namespace.
    """
    # held open before /tmp may be covered: the cache can live under /tmp (XDG_CACHE_HOME)
    cache = (os.open(font_cache, os.O_PATH | os.O_DIRECTORY)
             if font_cache and os.path.isdir(font_cache) else -1)
    root, leftover = _private_root_dir()
    for top in SYSTEM_DIRS:
        if os.path.islink(top):
            os.symlink(os.readlink(top), root + top)
        elif os.path.isdir(top):
            _bind(top, root + top, readonly=True)
    for tree in python_trees():
        if not os.path.exists(root + tree):
            _bind(tree, root + tree, readonly=True)
    _populate_etc(root)
    _populate_dev(root)
    for path in ("/proc", "/tmp", RUNTIME_HOLD, ZYGOTE_MPLCONFIGDIR):
        os.makedirs(root + path, exist_ok=True)
    if cache >= 0:
        _bind(f"/proc/self/fd/{cache}", root + ZYGOTE_MPLCONFIGDIR, readonly=False)
        os.close(cache)
    os.chmod(root + "/tmp", 0o1777)
    for path in hidden:
        real = os.path.realpath(path)
        if os.path.lexists(root + real):
            _mask(root + real)
    return root, leftover


def enter_zygote(isolation: str, hidden: list[str], font_cache: str = ""
                 ) -> tuple[str, list[str], str]:
    """Isolate the zygote as far as `isolation` ("auto", "namespaces", "none") and the OS allow.

    Returns (mode, warnings, root path on the host or "").
    """
    if isolation == "none":
        return "none", ["degraded sandbox isolation (isolation='none' was asked for): no "
                        "network or file isolation beyond the audit hook; processes bounded by "
                        "rlimits and a process group"], ""
    reason = ""
    if not sys.platform.startswith("linux"):
        reason = f"Linux namespaces are unavailable on {sys.platform}"
    elif os.geteuid() != 0:
        reason = "not running as root, so namespaces and a spare uid are unavailable"
    if not reason:
        try:
            unshare(CLONE_NEWNS | CLONE_NEWNET)
            mount(None, "/", None, MS_REC | MS_PRIVATE)
            root, leftover = build_root(hidden, font_cache)
            os.chroot(root)
            os.chdir("/")
            return "namespaces", [], leftover
        except OSError as exc:
            reason = f"could not set up namespaces ({exc})"
    if isolation == "namespaces":
        raise RuntimeError(f"sandbox isolation 'namespaces' required but {reason}")
    mode = "uid" if os.geteuid() == 0 else "none"
    what = ("student code runs as a spare uid with rlimits, but can reach the network and read "
            "files outside the hidden packages" if mode == "uid" else
            "student code runs as the grader's user with rlimits only; the network is reachable, "
            "processes that leave the process group may survive, and only an audit hook keeps "
            "the hidden files unreadable")
    return mode, [f"degraded sandbox isolation: {reason}; {what}"], ""


def setup_child_mounts(disk_mb: int, uid: int) -> str:
    """In a submission's fresh PID+mount namespace: /proc, private /tmp and /dev/shm, workdir."""
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # A Python runtime under /tmp (a checkout cloned into /tmp) would vanish under the private
    # /tmp: hold it aside, mount the private /tmp, then put the runtime back in it.
    under_tmp = [tree for tree in python_trees() if tree.startswith("/tmp/")]
    if under_tmp:
        mount("/tmp", RUNTIME_HOLD, None, MS_BIND | MS_REC)
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={disk_mb}m,mode=1777")
    for tree in under_tmp:
        os.makedirs(tree, mode=0o755)
        mount(RUNTIME_HOLD + tree[len("/tmp"):], tree, None, MS_BIND | MS_REC)
        mount(None, tree, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    if under_tmp:
        _check(_libc.umount2(os.fsencode(RUNTIME_HOLD), MNT_DETACH), f"umount {RUNTIME_HOLD}")
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=16m,mode=1777")
    os.mkdir(NAMESPACE_WORKDIR, 0o700)
    os.chown(NAMESPACE_WORKDIR, uid, uid)
    return NAMESPACE_WORKDIR


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
    if mode == "none":  # the grader's own uid: count what it already runs
        nproc += len(processes_of(os.getuid()))
    cap(resource.RLIMIT_NPROC, nproc)
    cap(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    cap(resource.RLIMIT_FSIZE, int(limits["disk_mb"]) * 2**20)


def drop_privileges(uid: int) -> None:
    """Become `uid` with no supplementary groups, no capabilities and no way back."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    if _libc is not None:
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def kill_uid(uid: int) -> None:
    """SIGKILL every process of `uid`, from a helper that becomes that uid and kills -1."""
    if os.geteuid() != 0 or uid == 0:
        return
    for _ in range(3):
        if not processes_of(uid):
            return
        pid = os.fork()
        if pid == 0:
            try:
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


def reset_signals() -> None:
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
