"""A zygote kept warm between `sdpa-course check`s: where it listens, what names it, how to
reach it.

A self-learner runs `check` after every edit, and half of each run was the zygote's start
(numpy, then the namespaces and the private root). A pool
made with ``keep_warm=seconds`` leaves its zygote running for that long after its last use,
listening on a Unix socket; the next `check` with the same key connects to it and forks its
worker from it at once. Every worker is still a fresh fork of a zygote that never ran student
code, with the same namespaces, root, limits, Landlock and seccomp: nothing about the worker
changes, only who paid for the zygote's start.

Who may connect: the socket lives in a directory of this user's only (mode 0700, owned by
them, no link at any level under the cache root: `private`; otherwise nothing is kept
warm), the client checks that the listener is this
user (SO_PEERCRED), and the zygote checks the same of each client. Student code never holds
the listening socket (each worker closes every descriptor but its own channel) and cannot see
the directory (its private root has no home and no /run).

What names it: a hash of everything the zygote was built from: the sandbox's code and
configuration (isolation, the paths it hides), its environment, the interpreter, the user,
and the modification times of the directories on `sys.path` that packages are imported from
(not the first, the script's or working folder, which a saved notebook changes), so that a
package installed or removed, a kit upgraded or a course's hidden paths changed start a new
zygote (the stale one idles out). ``SDPA_COURSE_WARM_SANDBOX`` sets the idle time in seconds
(0: never keep one).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import private

WARM_VARIABLE = "SDPA_COURSE_WARM_SANDBOX"
DEFAULT_IDLE_SECONDS = 600.0
MAX_IDLE_SECONDS = 86_400.0
HELLO_SECONDS = 5.0
_PEERCRED = struct.Struct("3i")  # pid, uid, gid


def idle_seconds() -> float:
    """How long `check` keeps its zygote after use: ``SDPA_COURSE_WARM_SANDBOX`` seconds
    (0 or a word such as "off": not at all), 600 when unset."""
    text = os.environ.get(WARM_VARIABLE)
    if text is None or not text.strip():
        return DEFAULT_IDLE_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        return 0.0
    return min(seconds, MAX_IDLE_SECONDS) if seconds > 0 else 0.0  # NaN and negatives: off


def _private_directory(path: Path) -> bool:
    """Whether `path` is a real directory of this user's that nobody else may enter."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
            and not info.st_mode & 0o077)


def socket_directory() -> Path | None:
    """This user's private directory for warm zygotes' sockets, made if missing (`private`:
    no link at any level, this user's, 0700); None where none can be had (a shared or
    foreign directory, or a link, is never used)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    candidates = []
    if runtime.startswith("/") and _private_directory(Path(runtime)):  # never made here
        candidates.append((runtime, ()))
    base = private.cache_root()
    if base:
        candidates.append((base, ("warm",)))
    for root, parts in candidates:
        try:
            os.close(private.open_private(*parts, root=root))
        except (OSError, private.UnsafeFolder):
            continue
        return Path(root, private.KIT_FOLDER, *parts)
    return None


def zygote_key(config: dict, environment: dict[str, str], sources: bytes) -> str:
    """What the zygote was built from, hashed (`sources`: its code's); see the module's
    docstring."""
    digest = hashlib.sha256(sources)
    mtimes = []
    for entry in sys.path[1:]:  # not [0], the script's or working folder: see above
        try:
            mtimes.append([entry, os.stat(entry or ".").st_mtime_ns])
        except OSError:
            mtimes.append([entry, None])
    digest.update(json.dumps([config, environment, sys.executable, os.geteuid(), os.getegid(),
                              mtimes], sort_keys=True, default=str).encode())
    return digest.hexdigest()[:20]


def socket_path(key: str) -> Path | None:
    directory = socket_directory()
    return None if directory is None else directory / f"zygote-{key}"


@contextmanager
def _addressed(path: Path) -> Iterator[tuple[int, str]]:
    """`path`'s directory as a descriptor, and `path` as a socket address short enough for
    sun_path's 108 bytes, however deep that directory, through it. The directory must be
    this user's and no link (it may have been swapped since it was checked)."""
    directory = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if os.fstat(directory).st_uid != os.geteuid():
            raise OSError(f"{path.parent} is not this user's folder")
        yield directory, f"/proc/self/fd/{directory}/{path.name}"
    finally:
        os.close(directory)


def peer_uid(connection: socket.socket) -> int:
    raw = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    return _PEERCRED.unpack(raw)[1]


def connect(path: Path) -> tuple[socket.socket, dict, int] | None:
    """A control channel to the warm zygote at `path`: (socket, its hello, its pid), or None
    where there is none, it is not this user's, or it does not answer."""
    try:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except OSError:  # no such sockets here: nothing is kept warm
        return None
    try:
        connection.settimeout(HELLO_SECONDS)
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # its pid, below
        with _addressed(path) as (_, address):
            connection.connect(address)
        if peer_uid(connection) != os.geteuid():
            raise OSError("the warm zygote's socket is another user's")
        raw, ancillary, _, _ = connection.recvmsg(1 << 16, socket.CMSG_SPACE(12))
        hello = json.loads(raw) if raw else {}
        pid = 0
        for level, kind, data in ancillary:
            if (level, kind) == (socket.SOL_SOCKET, socket.SCM_CREDENTIALS):
                pid = struct.unpack("i", data[:4])[0]
        if type(hello) is not dict or hello.get("ok") is not True:
            raise OSError("the warm zygote did not say hello")
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 0)
        connection.settimeout(30.0)
        return connection, hello, pid
    except (OSError, ValueError):
        connection.close()
        return None


def listen(path: Path) -> socket.socket | None:
    """A listening socket at `path`, replacing a stale one (bound under another name first,
    then renamed into place: two `check`s starting at once never both fail)."""
    try:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except OSError:
        return None
    staging = f"{path.name}.{os.getpid()}"
    try:
        with _addressed(path) as (directory, address):
            try:
                os.unlink(staging, dir_fd=directory)
            except FileNotFoundError:
                pass
            try:  # every step through the checked directory's descriptor, none by path
                listener.bind(os.path.join(os.path.dirname(address), staging))
                os.chmod(os.path.join(os.path.dirname(address), staging), 0o600)
                listener.listen(8)
                os.replace(staging, path.name, src_dir_fd=directory, dst_dir_fd=directory)
            except OSError:
                try:
                    os.unlink(staging, dir_fd=directory)
                except OSError:
                    pass
                raise
        return listener
    except OSError:
        listener.close()
        return None


def stop(path: Path) -> bool:
    """Ask the warm zygote at `path` to stop now (it takes its workers along)."""
    reached = connect(path)
    if reached is None:
        return False
    connection, _, _ = reached
    try:
        connection.send(json.dumps({"op": "stop"}).encode())
        connection.recv(16)  # its end: it has stopped
    except OSError:
        pass
    finally:
        connection.close()
    remove(path)
    return True


def remove(path: Path) -> None:
    """Take the socket at `path` away, through its checked directory (never a link)."""
    try:
        with _addressed(path) as (directory, _):
            os.unlink(path.name, dir_fd=directory)
    except OSError:
        pass
