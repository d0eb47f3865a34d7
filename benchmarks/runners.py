"""Who runs a benchmarked command: root (this Python) or an ordinary user (`--as-user NAME`).

The ordinary user runs Debian's /usr/bin/python3.X (root's pyenv Python is not readable by
others) in a throwaway virtualenv that sees this checkout and its .venv's packages through a
.pth file, as tests/sandbox_graders.py does for the sandbox's tests, with its own home and
cache in a temporary folder. A user NAME that does not exist is created (`useradd --system`)
and removed afterwards. Needs root, useradd, setpriv and a checkout other users can read.
"""

from __future__ import annotations

import os
import pwd
import shutil
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SCRIPTS = ("sdpa-course", "nbgrader", "alembic", "jupyter")  # the commands benchmarks run
WARM = "SDPA_COURSE_WARM_SANDBOX"  # how long `check` keeps its zygote warm; "0": not at all
STOP_WARM = """\
import os
from pathlib import Path
from autograder.sandbox import warm
for path in (Path(os.environ["XDG_CACHE_HOME"]) / "sdpa-course" / "warm").glob("zygote-*"):
    warm.stop(path)
"""


class Runner:
    """Runs commands as root, with this Python and its virtualenv's scripts."""

    name = "root"

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.home = workdir / f"home-{self.name}"
        self.home.mkdir(exist_ok=True)
        self.python = sys.executable
        self.bin = BIN
        self.prefix: list[str] = []

    def env(self, **extra: str) -> dict[str, str]:
        # PYTHONPATH: this checkout's kit, also where the virtualenv's editable install
        # points at another one (a copy of an older commit, to compare)
        return {"PATH": f"{Path(self.python).parent}:/usr/local/bin:/usr/bin:/bin",
                "LANG": "C.UTF-8", "HOME": str(self.home), "PYTHONPATH": str(REPO),
                "XDG_CACHE_HOME": str(self.home / ".cache"),
                # nbconvert's templates (stock generate_feedback's), installed in this
                # checkout's .venv, which an ordinary user's throwaway venv does not hold
                "JUPYTER_PATH": str(BIN.parent / "share" / "jupyter"), **extra}

    def argv(self, *args: str) -> list[str]:
        """`python args...` as this runner."""
        return [*self.prefix, self.python, *args]

    def command(self, name: str, *args: str) -> list[str]:
        """The console script `name` (sdpa-course, nbgrader) with `args`, as this runner."""
        return [*self.prefix, str(self.bin / name), *args]

    def timed(self, argv: list[str], cwd: Path, **extra_env: str) -> float:
        """Run `argv` (from `command`); its wall seconds. Exits on failure."""
        started = time.monotonic()
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                              env=self.env(**extra_env))
        wall = time.monotonic() - started
        if done.returncode != 0:
            sys.exit(f"{self.name}: {' '.join(argv)} failed ({done.returncode}):\n"
                     f"{done.stderr[:3000]}\n...\n{done.stderr[-1500:]}")
        return wall

    def give(self, path: Path) -> None:
        """Make `path` (a tree in the work folder) this runner's own."""

    def run(self, args: list[str], *, cwd: Path | None = None, check: bool = True,
            **extra_env: str) -> tuple[float, subprocess.CompletedProcess]:
        """Run `python args...`; (wall seconds, the completed process)."""
        started = time.monotonic()
        done = subprocess.run(self.argv(*args), cwd=cwd or self.home, capture_output=True,
                              text=True, env=self.env(SDPA_BENCH_LAUNCH=repr(started),
                                                      **extra_env))
        wall = time.monotonic() - started
        if check and done.returncode not in (0,):
            sys.exit(f"{self.name}: {' '.join(args)} failed ({done.returncode}):\n"
                     f"{done.stderr[:3000]}\n...\n{done.stderr[-1500:]}")
        return wall, done

    def stop_warm_zygotes(self) -> None:
        """Stop the zygotes `check` kept warm for this runner (as its user: a warm zygote
        serves nobody else)."""
        self.run(["-c", STOP_WARM], check=False)

    def close(self) -> None:
        pass


class UserRunner(Runner):
    """Runs commands as the ordinary user `user_name` (created if missing)."""

    def __init__(self, workdir: Path, user_name: str):
        self.name = f"user {user_name}"
        self.user_name = user_name
        self.created = False
        why = _why_not()
        if why:
            sys.exit(f"--as-user: {why}")
        try:
            pwd.getpwnam(user_name)
        except KeyError:
            subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                            "--shell", "/usr/sbin/nologin", user_name], check=True)
            self.created = True
        user = pwd.getpwnam(user_name)
        self.uid, self.gid = user.pw_uid, user.pw_gid
        super().__init__(workdir)
        minor = f"python3.{sys.version_info.minor}"
        venv = workdir / "user-venv"
        if not venv.exists():
            subprocess.run([f"/usr/bin/{minor}", "-m", "venv", "--without-pip", str(venv)],
                           check=True)
            (venv / "lib" / minor / "site-packages" / "sdpa-course-checkout.pth").write_text(
                f"{site.getsitepackages()[0]}\n{REPO}\n")
            for name in SCRIPTS:  # as pip would have written them, for this Python
                body = (BIN / name).read_text().split("\n", 1)[1]
                script = venv / "bin" / name
                script.write_text(f"#!{venv / 'bin' / 'python'}\n{body}")
                script.chmod(0o755)
        self.python = str(venv / "bin" / "python")
        self.bin = venv / "bin"
        self.prefix = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}",
                       "--init-groups", "--"]
        self.give(self.home)

    def give(self, path: Path) -> None:
        for folder, _dirs, files in os.walk(path):
            os.chown(folder, self.uid, self.gid)
            for name in files:
                os.chown(os.path.join(folder, name), self.uid, self.gid, follow_symlinks=False)

    def close(self) -> None:
        if self.created:
            subprocess.run(["userdel", self.user_name], capture_output=True)


def _readable_by_others(path: Path) -> bool:
    path = path.resolve()
    for parent in [*reversed(path.parents), path]:
        mode = parent.stat().st_mode
        if not mode & 0o001 or (parent == path and not mode & 0o004):
            return False
    return True


def _why_not() -> str:
    minor = f"python3.{sys.version_info.minor}"
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return "running as another user needs root on Linux"
    if shutil.which("useradd") is None or shutil.which("setpriv") is None:
        return "useradd or setpriv is not installed"
    if not Path(f"/usr/bin/{minor}").exists():
        return f"/usr/bin/{minor} (the system's Python of this minor version) is missing"
    for path in (REPO, Path(site.getsitepackages()[0])):
        if not _readable_by_others(path):
            return f"{path} is not readable by other users"
    return ""


def make_workdir(prefix: str) -> Path:
    """A temporary folder other users can enter."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    workdir.chmod(0o755)
    return workdir


def load() -> str:
    """The machine's load averages and cores, for every figure."""
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} (5 min {five:.2f}) on {os.cpu_count()} cores"
