"""Run a command where a platform's folders are where the platform puts them.

`in_layout({"/autograder": case_dir, ...}, argv)` runs `argv` in a private mount namespace
(unshare as root) in which each given folder is bind-mounted at its platform path, so that a
grader reads `/autograder/submission` or `/grade/student` and writes its results there, as in
the platform's container, and nothing of it shows outside. `refuse_namespaces=True` runs it
as a container that refuses the sandbox does: in a user namespace of its own whose limit on
new user namespaces is 0 (as `sandbox_graders.without_user_namespaces`).

The platform paths must exist to be mounted on: `mount_points` makes those that are missing
(empty folders) and removes them again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

CAN_RUN = (sys.platform.startswith("linux") and os.geteuid() == 0
           and shutil.which("unshare") is not None)
WHY_NOT = "the platforms' layouts are mounted in a private mount namespace, as root (unshare)"


@contextlib.contextmanager
def mount_points(*paths: str):
    made = []
    for path in paths:
        if not os.path.exists(path):
            os.makedirs(path)
            made.append(path)
    try:
        yield
    finally:
        for path in reversed(made):
            with contextlib.suppress(OSError):  # in use by another run: left, empty
                os.rmdir(path)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def in_layout(mounts: dict[str, Path], argv: list[str], *, env: dict[str, str],
              refuse_namespaces: bool = False, cwd: str = "/",
              timeout: float = 600) -> subprocess.CompletedProcess:
    """`argv` with each `mounts` target bound to its source, in mount order."""
    steps = [f"mount --bind {_quote(str(source))} {_quote(target)}"
             for target, source in mounts.items()]
    if refuse_namespaces:
        steps.insert(0, "echo 0 > /proc/sys/user/max_user_namespaces")
    script = " && ".join([*steps, f"cd {_quote(cwd)}", 'exec "$@"'])
    prefix = ["unshare", "--mount", "--propagation", "private"]
    if refuse_namespaces:
        prefix = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]
    return subprocess.run([*prefix, "sh", "-c", script, "sh", *argv], capture_output=True,
                          text=True, env=env, timeout=timeout)


def start_in_layout(mounts: dict[str, Path], argv: list[str], *, env: dict[str, str],
                    log: Path) -> subprocess.Popen:
    """`in_layout` in the background, its output into `log` (the set-ups run side by side)."""
    steps = [f"mount --bind {_quote(str(source))} {_quote(target)}"
             for target, source in mounts.items()]
    script = " && ".join([*steps, 'exec "$@"'])
    with log.open("w") as out:
        return subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                                 script, "sh", *argv], stdout=out, stderr=subprocess.STDOUT,
                                env=env)
