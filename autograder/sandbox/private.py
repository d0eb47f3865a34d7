"""The kit's own folders under a cache root: opened without following a link, or not at all.

`check` keeps state under ``$XDG_CACHE_HOME/sdpa-course`` (or ``~/.cache``): the warm
zygote's socket (`warm`). Run as root with a student's HOME or XDG_CACHE_HOME (``sudo -E``,
a job that inherits them), every level there is the student's to prepare, with links to
root's files.
So each folder is opened as one descriptor, level by level from the cache root:

- the cache root is walked from / one level at a time: a link on its way is followed only
  if root or the running user made it, and the root itself is no link;
- each level under it is made with mode 0700 where missing, then `lstat`ed and opened with
  O_NOFOLLOW (the same inode, checked): a real directory owned by the running uid, with no
  group or other bits, or the kit refuses (`UnsafeFolder`, naming the path). Only
  `sdpa-course` itself, which earlier versions of the kit made 0755, is made private
  through its descriptor (`fchmod`), never through a path;
- files in it are read with O_NOFOLLOW (a regular file of the user's own, or nothing) and
  written through a new temporary name (O_CREAT | O_EXCL | O_NOFOLLOW) renamed into place.

Every later use goes through the descriptor (`*at` calls, `/proc/self/fd/N`), so a level
renamed or replaced by a link afterwards is never followed. Standard library only: the
zygote ships this module with the sandbox's others.
"""

from __future__ import annotations

import os
import stat

KIT_FOLDER = "sdpa-course"
_DIRECTORY = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_FILE_BYTES = 64 << 20  # a font list is about 100 KB


class UnsafeFolder(RuntimeError):
    """A folder the kit would keep state in is a link, another user's, or not a folder."""

    def __init__(self, path: str, reason: str):
        self.path, self.reason = path, reason
        super().__init__(f"{path} {reason}: the kit follows no link and uses no folder of "
                         f"another user's for its cache (run as the owner of that home, or "
                         f"remove {path}, or point XDG_CACHE_HOME at a folder of your own)")


def cache_root() -> str:
    """``$XDG_CACHE_HOME`` or ``~/.cache``; "" where there is none (no HOME, a relative
    path)."""
    root = os.environ.get("XDG_CACHE_HOME", "")
    if not root:
        home = os.environ.get("HOME", "")
        if not home:
            try:
                import pwd  # deferred: only without HOME

                home = pwd.getpwuid(os.geteuid()).pw_dir
            except (ImportError, KeyError):
                home = ""
        root = os.path.join(home, ".cache") if home else ""
    return root if root.startswith("/") else ""


def _open_root(root: str, make: bool = True) -> int:
    """The cache root, walked from / one level at a time: a link on the way is followed
    only if root or the running user made it (a student's link is refused); the root's own
    last level is made 0700 if missing, where its parent is there."""
    names = [name for name in root.split("/") if name not in ("", ".")]
    if ".." in names or not names:  # nothing to keep a cache in: grading goes on without
        raise FileNotFoundError(f"{root!r} is not a plain absolute path below /")
    fd = os.open("/", _DIRECTORY)
    shown = ""
    try:
        for index, name in enumerate(names):
            shown += "/" + name
            if make and index == len(names) - 1:
                try:
                    os.mkdir(name, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode) and info.st_uid not in (0, os.geteuid()):
                raise UnsafeFolder(shown, f"is a link of uid {info.st_uid}'s")
            if stat.S_ISLNK(info.st_mode) and index == len(names) - 1:
                raise UnsafeFolder(shown, "is a link")
            inner = os.open(name, _DIRECTORY & ~os.O_NOFOLLOW
                            if stat.S_ISLNK(info.st_mode) else _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_folder(parent: int, name: str, shown: str, repair: bool = False) -> int:
    """`name` in the folder `parent` (a descriptor), made 0700 if missing: a descriptor of
    it once it is known to be a real folder of the running user's that others may not
    enter (`repair`: made so, through the descriptor; see the module)."""
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
    except FileExistsError:
        pass
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        raise UnsafeFolder(shown, "vanished while it was opened") from None
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFolder(shown, "is a link")
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeFolder(shown, "is not a folder")
    if info.st_uid != os.geteuid():
        raise UnsafeFolder(shown, f"belongs to uid {info.st_uid}, not to uid {os.geteuid()}")
    fd = os.open(name, _DIRECTORY, dir_fd=parent)
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
        os.close(fd)
        raise UnsafeFolder(shown, "was replaced while it was opened")
    if opened.st_mode & 0o077 and repair:
        _make_private(fd)
    elif opened.st_mode & 0o077:
        os.close(fd)
        raise UnsafeFolder(shown, f"may be entered by others (mode {opened.st_mode & 0o777:o})")
    return fd


def _make_private(fd: int) -> None:
    """Take group and other bits off the folder behind `fd` (its own inode, never a path)."""
    readable = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if os.fstat(readable).st_ino == os.fstat(fd).st_ino:
            os.fchmod(readable, 0o700)
    finally:
        os.close(readable)


def open_private(*parts: str, root: str | None = None) -> int:
    """A descriptor (O_PATH) of ``root/sdpa-course/<parts>``, each level checked or made as
    the module says; root defaults to `cache_root()`. Raises `UnsafeFolder` when a level
    is a link or another's, OSError where there is no cache root to be had."""
    root = cache_root() if root is None else root
    if not root:
        raise FileNotFoundError("no cache folder: neither XDG_CACHE_HOME nor HOME is set")
    fd = _open_root(root)
    shown, kit = root, os.path.join(root, KIT_FOLDER)
    try:
        for name in (KIT_FOLDER, *parts):
            shown = os.path.join(shown, name)
            inner = open_folder(fd, name, shown, repair=name == KIT_FOLDER and shown == kit)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def fd_path(fd: int, name: str = "") -> str:
    """The folder behind `fd` (and `name` in it) as a path that cannot be redirected."""
    return f"/proc/self/fd/{fd}" + (f"/{name}" if name else "")


def read_file(folder: int, name: str, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of `name` in `folder`, if it is a regular file of the running user's not
    larger than `limit`; None otherwise (a link, a FIFO, another user's file, none)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=folder)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid()
                or info.st_size > limit):
            return None
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def write_file(folder: int, name: str, data: bytes) -> None:
    """Put `data` at `name` in `folder`: written to a new file (O_EXCL, O_NOFOLLOW, 0600)
    under a temporary name, then renamed over `name` (whatever `name` was, link included,
    is replaced, never written through)."""
    temporary = f".{name}.{os.getpid()}.{os.urandom(4).hex()}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                 | os.O_CLOEXEC, 0o600, dir_fd=folder)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.close(fd)
        fd = -1
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(temporary, dir_fd=folder)
        except OSError:
            pass
        raise


def temporary_base(candidate: str) -> str:
    """`candidate` (the temporary folder, TMPDIR's or the system's) for the kit's temporary
    folders if no other user could rename what is made in it: a real folder, reached
    without a link of another user's, that is this user's, or root's and either closed to
    others or sticky (/tmp); "/tmp" otherwise."""
    try:
        fd = _open_root(candidate, make=False)
    except (OSError, UnsafeFolder):
        return "/tmp"
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    if info.st_uid == os.geteuid():
        return candidate
    if info.st_uid == 0 and (not info.st_mode & 0o022 or info.st_mode & stat.S_ISVTX):
        return candidate
    return "/tmp"
