"""The three ways instructors run the grader, for the sandbox's tests.

- ``root``: the test's own Python, as root;
- ``no-sys-admin``: the same, as root without CAP_SYS_ADMIN (as in a container), through
  `setpriv --bounding-set -sys_admin --inh-caps -sys_admin`;
- ``user``: an ordinary user the tests create (`useradd`), with Debian's /usr/bin/python3.X (root's
  pyenv Python is not readable by others) in a virtualenv made in a temporary folder, which
  sees the kit's checkout and its virtualenv's packages through a .pth file, as an editable
  install would. Needs root, useradd, a matching /usr/bin/python3.X, and a checkout other users
  can read; otherwise the reason is given for a skip. A folder above the checkout that others
  may not enter (a clone made in `mktemp -d`) is opened to passing through while the user
  exists, and closed again by `remove_user`.

`Grader.run(script, stdin)` runs a Python script as that grader, with a home and a cache of
its own (in a temporary folder removed afterwards), and returns what it printed.

`without_user_namespaces(argv, home)` runs a command on a machine that refuses user
namespaces, made with the kernel's own switch: in a user namespace whose
`user.max_user_namespaces` is 0, the sandbox's unshare() fails as it does where an
administrator disabled them.
"""

from __future__ import annotations

import os
import pwd
import shutil
import site
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GRADERS = ("root", "user", "no-sys-admin")
USERS_GID = 100  # a supplementary group, as an ordinary user has (the sandbox cannot drop it)
NO_SYS_ADMIN = ["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", "--"]
NO_USER_NAMESPACES = ["unshare", "--user", "--map-root-user", "sh", "-c",
                      'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "sh"]
CAN_REFUSE_NAMESPACES = sys.platform.startswith("linux") and shutil.which("unshare") is not None


def without_user_namespaces(argv: list[str], home: Path, timeout: float = 300
                            ) -> subprocess.CompletedProcess:
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
           "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")}
    return subprocess.run([*NO_USER_NAMESPACES, *argv], capture_output=True, text=True,
                          env=env, cwd=home, timeout=timeout)


@dataclass
class Grader:
    name: str
    python: str
    prefix: list[str] = field(default_factory=list)  # setpriv ...
    home: Path | None = None
    uid: int = 0
    opened: list[tuple[Path, int]] = field(default_factory=list)  # (folder, its own mode)

    def run(self, script: Path | str, stdin: str = "", timeout: float = 300
            ) -> subprocess.CompletedProcess:
        env = {"PATH": f"{Path(self.python).parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
               "HOME": str(self.home), "XDG_CACHE_HOME": str(self.home / ".cache")}
        return subprocess.run([*self.prefix, self.python, str(script)], input=stdin,
                              capture_output=True, text=True, env=env, cwd=str(self.home),
                              timeout=timeout)


def _readable_by_others(path: Path) -> bool:
    """Others may read and enter `path` itself (the folders above it: `_closed_above`)."""
    return path.resolve().stat().st_mode & 0o005 == 0o005


def _closed_above(path: Path) -> list[Path]:
    """The folders above `path` that others may not enter (a clone in `mktemp -d`'s 0700)."""
    return [parent for parent in reversed(path.resolve().parents)
            if not parent.stat().st_mode & 0o001]


def why_no_user() -> str:
    """Why the `user` grader cannot be made here ("" when it can)."""
    minor = f"python3.{sys.version_info.minor}"
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return "creating an ordinary user needs root on Linux"
    if shutil.which("useradd") is None or shutil.which("setpriv") is None:
        return "useradd or setpriv is not installed"
    if not Path(f"/usr/bin/{minor}").exists():
        return f"/usr/bin/{minor} (the system's Python of this minor version) is not installed"
    for path in (REPO, Path(site.getsitepackages()[0])):
        if not _readable_by_others(path):
            return f"{path} is not readable by other users"
    return ""


def make_user(workdir: Path) -> Grader:
    """A fresh ordinary user and its virtualenv in `workdir` (call remove_user afterwards)."""
    name = f"sdpa-sbx-{os.getpid()}"
    subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell",
                    "/usr/sbin/nologin", "--home-dir", str(workdir / "home"), name],
                   check=True, capture_output=True)
    user = pwd.getpwnam(name)
    venv = workdir / "venv"
    minor = f"python3.{sys.version_info.minor}"
    subprocess.run([f"/usr/bin/{minor}", "-m", "venv", "--without-pip", str(venv)], check=True)
    (venv / "lib" / minor / "site-packages" / "sdpa-course-checkout.pth").write_text(
        f"{site.getsitepackages()[0]}\n{REPO}\n")
    # a checkout in a folder closed to others (`mktemp -d`): let others pass through it, only
    # pass (no listing), until remove_user puts its mode back
    opened = []
    for folder in dict.fromkeys([*_closed_above(REPO),
                                 *_closed_above(Path(site.getsitepackages()[0]))]):
        mode = folder.stat().st_mode & 0o7777
        opened.append((folder, mode))
        folder.chmod(mode | 0o001)
    home = workdir / "home"
    home.mkdir()
    os.chown(home, user.pw_uid, user.pw_gid)
    for path in (workdir, venv):
        path.chmod(0o755)
    return Grader("user", str(venv / "bin" / "python"),
                  ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                   f"--groups={USERS_GID}", "--"], home, user.pw_uid, opened)


def remove_user(grader: Grader) -> None:
    subprocess.run(["userdel", pwd.getpwuid(grader.uid).pw_name], capture_output=True)
    for folder, mode in reversed(grader.opened):
        folder.chmod(mode)


def root_grader(name: str, workdir: Path) -> Grader:
    home = workdir / f"home-{name}"
    home.mkdir()
    return Grader(name, sys.executable, NO_SYS_ADMIN if name == "no-sys-admin" else [], home)


def make_workdir() -> Path:
    """A temporary folder other users can enter (the ordinary user's venv and home go in)."""
    workdir = Path(tempfile.mkdtemp(prefix="sdpa-test-graders-"))
    workdir.chmod(0o755)
    return workdir
