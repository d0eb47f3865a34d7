"""The zygote's private root: the system, the Python runtime and an allowlist of packages.

`plan` runs in the zygote after it imported what every answer needs (numpy) and before it
isolates itself; it decides what student code will see:

- the system directories (/usr, /bin, /sbin, /lib*) and a few /etc files and /dev devices;
- the Python runtime: its executable, shared library, standard library (lib-dynload too) and
  the virtualenv's pyvenv.cfg;
- the allowlist: every distribution that the pre-import loaded a module from (numpy), and
  those an answer may import that the zygote does not preload (matplotlib), each with the
  distributions it requires, as the top-level files and directories its RECORD lists (the
  module's own package directory where a distribution has no RECORD);
- every site directory (site-packages, dist-packages, sys.path entries outside the standard
  library, the well-known system ones under /usr) shown empty but for allowlisted packages:
  no other package of the virtualenv, the kit's own (installed, editable or its data copy of
  the course) included, is there;
- `hidden` (the kit's installed files, its checkout, course directories, the gradebook)
  masked wherever they would still show.

`build` then assembles it on a tmpfs, every bind read-only, nosuid and nodev (devices
excepted), and the root itself read-only; `enter` makes it the mount namespace's root, host
mounts gone. Call both in new user and mount namespaces (sources are surveyed and opened
before the root's tmpfs covers /tmp, and bound through /proc/self/fd, so a runtime under /tmp
stays reachable). Shipped into the zygote as source: standard library only.
"""

from __future__ import annotations

import csv
import ctypes
import glob
import importlib.metadata
import os
import re
import shutil
import site
import sys
import sysconfig
from dataclasses import dataclass, field

from . import kernel

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
SYSTEM_SITE_PATTERNS = ("/usr/lib/python3*/site-packages", "/usr/lib/python3*/dist-packages",
                        "/usr/lib/python3/dist-packages", "/usr/local/lib/python3*/*-packages",
                        "/usr/lib64/python3*/site-packages",
                        "/usr/local/lib64/python3*/site-packages")
ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "localtime",
               "alternatives", "hosts", "protocols", "services", "mime.types")
DEVICES = ("null", "zero", "full", "random", "urandom")
MOUNTPOINT = "/tmp"  # in the zygote's own mount namespace: the root's tmpfs covers it
ROOT_TMPFS = "size=16m,mode=755"
EMPTY_TMPFS = "size=4k,mode=755"


@dataclass
class Plan:
    """What the private root shows, as host paths (see the module docstring)."""

    system: list[str] = field(default_factory=list)  # bound whole, or symlinks recreated
    runtime: list[str] = field(default_factory=list)  # bound read-only at the same place
    emptied: list[str] = field(default_factory=list)  # site directories shown empty
    packages: list[str] = field(default_factory=list)  # allowlisted, inside emptied dirs
    hidden: list[str] = field(default_factory=list)  # masked wherever still visible


def _real(path: str) -> str:
    return os.path.realpath(path)


def _inside(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def _stdlib_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    dirs = {_real(paths[key]) for key in ("stdlib", "platstdlib") if paths.get(key)}
    return sorted(d for d in dirs if os.path.isdir(d))


def _site_dirs(stdlib: list[str]) -> list[str]:
    """Every directory packages are imported from, standard library excepted, and those of
    the base installation and the system (a virtualenv does not list them)."""
    candidates = list(sys.path) + list(site.getsitepackages())
    base = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    candidates += [base.get("purelib", ""), base.get("platlib", "")]
    candidates += [os.path.join(s, name) for s in stdlib
                   for name in ("site-packages", "dist-packages")]
    try:
        candidates.append(site.getusersitepackages())
    except AttributeError:
        pass
    for pattern in SYSTEM_SITE_PATTERNS:
        candidates += glob.glob(pattern)
    dirs = set()
    for entry in candidates:
        real = _real(entry or ".")
        if not os.path.isdir(real) or real in stdlib:
            continue
        if any(_inside(real, s) and os.path.basename(real) == "lib-dynload" for s in stdlib):
            continue
        dirs.add(real)
    return sorted(dirs)


def _executables() -> list[str]:
    """The interpreter and its shared library, each symlink of the way included."""
    paths = [sys.executable, getattr(sys, "_base_executable", "")]
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        libdir, library = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var(
            "LDLIBRARY")
        if libdir and library:
            paths.append(os.path.join(libdir, library))
    venv_config = os.path.join(sys.prefix, "pyvenv.cfg")
    if os.path.isfile(venv_config):
        paths.append(venv_config)
    return [p for p in paths if p and os.path.exists(p)]


def _module_locations(names: set[str]) -> list[str]:
    locations = []
    for name in names:
        module = sys.modules.get(name)
        if module is None:
            continue
        file = getattr(module, "__file__", None)
        if file:
            locations.append(_real(file))
        for entry in list(getattr(module, "__path__", None) or ()):
            if isinstance(entry, str):
                locations.append(_real(entry))
    return locations


def _top_level(location: str, site_dirs: list[str]) -> tuple[str, str] | None:
    """(site directory, first path component below it) for a module's file, or None."""
    best = ""
    for site_dir in site_dirs:
        if _inside(location, site_dir) and location != site_dir and len(site_dir) > len(best):
            best = site_dir
    if not best:
        return None
    return best, os.path.relpath(location, best).split(os.sep)[0]


_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(dist) -> list[str]:
    """Names of the distributions `dist` needs (extras left out).

    Read from the Requires-Dist lines of METADATA's header: importlib.metadata parses the
    whole file as e-mail, ten times slower (egg-info installs still go that way).
    """
    metadata = dist.read_text("METADATA")
    if metadata is None:
        requires = list(dist.requires or ())
    else:
        header = metadata.replace("\r\n", "\n").split("\n\n", 1)[0]
        requires = [line.partition(":")[2] for line in header.split("\n")
                    if line[:14].lower() == "requires-dist:"]
    names = []
    for requirement in requires:
        found = _REQUIREMENT_NAME.match(requirement)
        if found and "extra ==" not in requirement.replace("extra==", "extra =="):
            names.append(found.group(1))
    return names


def _record_paths(dist) -> list[str]:
    """The files `dist` installed, relative to its site directory, as RECORD lists them
    (without making a path object of each, which takes most of `dist.files`' time)."""
    record = dist.read_text("RECORD")
    if record is None:  # an egg-info install: importlib.metadata knows its other lists
        return [str(file) for file in dist.files or ()]
    return [row[0] for row in csv.reader(record.splitlines()) if row]


def _top_entries(dist) -> set[str]:
    """Paths of the top-level entries `dist` installed into its site directory."""
    site_dir = _real(str(dist.locate_file("")))
    entries = set()
    for path in _record_paths(dist):
        parts = path.split("/")
        if not parts[0] or parts[0] == "..":
            continue  # a script or data outside the site directory
        # A shared __pycache__ holds other modules' bytecode too: only this one's files.
        entries.add(os.path.join(site_dir, path if parts[0] == "__pycache__" else parts[0]))
    return entries


class _Installed:
    """Installed distributions, each read once: (its top-level entries, what it requires)."""

    def __init__(self, forbidden: set[str]):
        self.forbidden = forbidden
        self._read: dict[str, tuple[set[str], list[str]] | None] = {}

    def get(self, name: str) -> tuple[set[str], list[str]] | None:
        key = _normalized(name)
        if key in self.forbidden:
            return None
        if key not in self._read:
            try:
                dist = importlib.metadata.distribution(key)
            except (importlib.metadata.PackageNotFoundError, ValueError):
                self._read[key] = None
            else:
                self._read[key] = (_top_entries(dist), _requirements(dist))
        return self._read[key]

    def entries(self, names: list[str]) -> set[str]:
        """Paths of the top-level entries that distributions `names`, and every
        distribution they require, installed into their site directories."""
        entries: set[str] = set()
        seen: set[str] = set()
        pending = list(names)
        while pending:
            name = _normalized(pending.pop())
            found = None if name in seen else self.get(name)
            seen.add(name)
            if found is not None:
                entries |= found[0]
                pending += found[1]
        return entries

    def owners(self, tops: dict[str, str]) -> list[str]:
        """The distributions that installed the top-level modules `tops` (name -> path).

        Most are found by their own name (numpy, matplotlib, six...), checked against their
        RECORD; with what those require, they usually cover the rest (PIL is pillow's,
        dateutil python-dateutil's). Only for a module still unowned is every installed
        distribution read (`packages_distributions`, a tenth of a second or more in a large
        virtualenv).
        """
        owners = [name for name, path in tops.items()
                  if path in (self.get(name) or (set(), []))[0]]
        covered = self.entries(owners)
        unowned = [name for name, path in tops.items() if path not in covered]
        if unowned:
            everyone = importlib.metadata.packages_distributions()
            owners += [dist for name in unowned for dist in everyone.get(name, [])]
        return owners


def plan(imported: set[str], hidden: list[str], forbidden_packages: tuple[str, ...],
         forbidden_distributions: tuple[str, ...], importable: tuple[str, ...] = ()) -> Plan:
    """Decide the private root from the modules the pre-import loaded (`imported`) and the
    distributions answers may import besides (`importable`)."""
    stdlib = _stdlib_dirs()
    site_dirs = _site_dirs(stdlib)
    result = Plan(system=[p for p in SYSTEM_DIRS if os.path.lexists(p)])
    result.runtime = sorted(set(stdlib) | set(_executables()))
    forbidden = {_normalized(name) for name in forbidden_distributions}
    packages: set[str] = set()
    tops: dict[str, str] = {}  # top-level module name -> its path in a site directory
    for location in _module_locations(imported):
        found = _top_level(location, site_dirs)
        if found is None:
            continue  # standard library, or outside every site directory
        site_dir, top = found
        name = top.partition(".")[0]
        if name in forbidden_packages:
            continue
        packages.add(os.path.join(site_dir, top))  # even where no distribution lists it
        tops.setdefault(name, os.path.join(site_dir, top))
    installed = _Installed(forbidden)
    packages |= installed.entries(installed.owners(tops) + list(importable))
    result.packages = sorted(p for p in packages if os.path.lexists(p))
    result.emptied = site_dirs
    result.hidden = sorted({_real(p) for p in hidden})
    return result


# -- building ---------------------------------------------------------------------------------


def _mounts() -> list[tuple[int, int, str, int]]:
    """(mount id, parent id, mount point, flags) from /proc/self/mountinfo, in its order."""
    mounts = []
    with open("/proc/self/mountinfo", "rb") as info:
        for line in info:
            fields = line.split()
            point = fields[4].decode("unicode_escape").encode("latin-1").decode(
                "utf-8", "surrogateescape")  # the kernel writes space, tab, newline in octal
            flags = 0
            for option in fields[5].decode().split(","):
                flags |= kernel.MOUNT_OPTION_FLAGS.get(option, 0)
            mounts.append((int(fields[0]), int(fields[1]), point, flags))
    return mounts


class _Builder:
    """Binds host paths into the root under construction.

    Once the root's tmpfs covers MOUNTPOINT, host paths beneath it are out of sight: `survey`
    looks at every source first (kind, symlinks along the way) and keeps it open.
    """

    def __init__(self, root: str):
        self.root = root
        self.sources: dict[str, int] = {}  # real path -> O_PATH descriptor
        self.is_dir: dict[str, bool] = {}
        self.links: dict[str, str] = {}  # symlink to recreate -> its target
        self.root_device = 0

    def survey(self, paths: list[str]) -> None:
        for path in paths:
            self._follow_links(path)
            real = _real(path)
            if real not in self.sources and os.path.exists(real):
                self.sources[real] = os.open(real, os.O_PATH | os.O_CLOEXEC)
                self.is_dir[real] = os.path.isdir(real)

    def _follow_links(self, path: str, depth: int = 0) -> None:
        """Note each symlink met along `path` (and along its target, and so on), so that
        the unresolved spelling works inside too (a virtualenv's bin/python, say)."""
        parts = [p for p in path.split("/") if p]
        current = ""
        for index, part in enumerate(parts):
            current += "/" + part
            if not os.path.islink(current):
                continue
            self.links[current] = os.readlink(current)
            target = os.path.join(os.path.dirname(current), os.readlink(current),
                                  *parts[index + 1:])
            if depth < 16:
                self._follow_links(os.path.normpath(target), depth + 1)
            return

    def from_host(self, target: str) -> bool:
        """Whether `target` (inside the root) shows host content: it lies in a bind, not on
        the root's own tmpfs, where only parents of what was bound live."""
        try:
            return os.lstat(target).st_dev != self.root_device
        except OSError:
            return False

    def bind(self, path: str) -> None:
        real = _real(path)
        target = self.root + real
        if real not in self.sources or self.from_host(target):
            return  # missing on the host, or already visible through an enclosing bind
        if self.is_dir[real]:
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.lexists(target):
                open(target, "a").close()
        kernel.mount(f"/proc/self/fd/{self.sources[real]}", target, None,
                     kernel.MS_BIND | kernel.MS_REC | kernel.MS_SILENT)

    def make_links(self) -> None:
        for link, target in sorted(self.links.items()):
            inside = self.root + link
            if not os.path.lexists(inside) and not self.from_host(os.path.dirname(inside)):
                os.makedirs(os.path.dirname(inside), exist_ok=True)
                os.symlink(target, inside)

    def close(self) -> None:
        for fd in self.sources.values():
            os.close(fd)
        self.sources.clear()


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


def _cover(target: str) -> None:
    """An empty, read-only tmpfs over a directory, /dev/null over a file."""
    if os.path.isdir(target):
        kernel.mount("tmpfs", target, "tmpfs", kernel.MS_RDONLY | kernel.MS_NOSUID
                     | kernel.MS_NODEV, EMPTY_TMPFS)
    else:
        kernel.mount("/dev/null", target, None, kernel.MS_BIND)


def _seal(root: str, devices: set[str]) -> None:
    """Remount every mount of the root read-only, nosuid and nodev (devices keep dev and stay
    writable), keeping the flags the host set (a user namespace may not clear them, see
    bubblewrap's bind-mount.c); innermost first, the root's own tmpfs last."""
    mounts = _mounts()
    on_root = {mount_id: parent for mount_id, parent, point, _ in mounts if point == root}
    # The root's tmpfs is the topmost mount on MOUNTPOINT: no other one is stacked on it.
    ours = {mount_id for mount_id in on_root if mount_id not in on_root.values()}
    grown = True
    while grown:
        grown = False
        for mount_id, parent, _, _ in mounts:
            if parent in ours and mount_id not in ours:
                ours.add(mount_id)
                grown = True
    inside = [(point, flags) for mount_id, _, point, flags in mounts if mount_id in ours]
    for point, flags in sorted(inside, key=lambda item: -len(item[0])):
        flags |= kernel.MS_NOSUID
        flags |= 0 if point in devices else kernel.MS_RDONLY | kernel.MS_NODEV
        kernel.mount(None, point, None, kernel.MS_BIND | kernel.MS_REMOUNT | flags)


def build(layout: Plan) -> str:
    """Assemble the root on a tmpfs over MOUNTPOINT; return its path. Call in new user and
    mount namespaces, before chroot."""
    root = MOUNTPOINT
    builder = _Builder(root)
    kernel.mount(None, "/", None, kernel.MS_REC | kernel.MS_PRIVATE)
    devices = ["/dev/" + name for name in DEVICES]
    system_links = {top: os.readlink(top) for top in layout.system if os.path.islink(top)}
    builder.survey([top for top in layout.system if top not in system_links] + layout.runtime
                   + layout.packages + devices)
    kernel.mount("tmpfs", root, "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, ROOT_TMPFS)
    builder.root_device = os.stat(root).st_dev
    try:
        for top, target in system_links.items():
            os.symlink(target, root + top)
        for top in layout.system:
            builder.bind(top)
        for path in layout.runtime:
            builder.bind(path)
        for site_dir in layout.emptied:
            if builder.from_host(root + site_dir):  # shown by an enclosing bind: cover it
                kernel.mount("tmpfs", root + site_dir, "tmpfs",
                             kernel.MS_NOSUID | kernel.MS_NODEV, EMPTY_TMPFS)
        for path in layout.packages:
            builder.bind(path)
        builder.make_links()
        for path in layout.hidden:
            if builder.from_host(root + path):
                _cover(root + path)
        _populate_etc(root)
        os.makedirs(root + "/dev/shm", exist_ok=True)
        for device in devices:
            builder.bind(device)
        os.symlink("/proc/self/fd", root + "/dev/fd")
        for number, name in enumerate(("stdin", "stdout", "stderr")):
            os.symlink(f"/proc/self/fd/{number}", f"{root}/dev/{name}")
        for path in ("/proc", "/tmp"):
            os.makedirs(root + path, exist_ok=True)
        os.chmod(root + "/tmp", 0o1777)
        # The zygote's own /proc: a workers' /proc goes over it, and the kernel lets a user
        # namespace mount a proc only where one is already fully visible.
        kernel.mount("proc", root + "/proc", "proc", kernel.MS_NOSUID | kernel.MS_NODEV
                     | kernel.MS_NOEXEC)
        _seal(root, {root + device for device in devices})
    finally:
        builder.close()
    return root


def enter(root: str) -> None:
    """Make `root` this mount namespace's root and drop every host mount (pivot_root, not
    chroot: a chrooted process may not create the user namespace a worker needs)."""
    os.chdir(root)
    kernel.syscall("pivot_root", ctypes.c_char_p(b"."), ctypes.c_char_p(b"."))
    kernel.umount(".")  # the old root, now stacked on the new one
    os.chdir("/")
