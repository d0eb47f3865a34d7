"""What a platform's image installs: the kit's wheel, the versions it was tested with, setup.sh.

The wheel is built from the kit's checkout (`pip wheel`, as `tests/test_course.py` does).
The versions are those installed beside the kit that builds the autograder, read with
`importlib.metadata`: every distribution the kit requires, and theirs, down to the leaves,
each pinned (`constraints.txt`). `setup.sh` makes a virtual environment of its own and
installs the wheel under those constraints, so the platform grades with what the kit's tests
ran on, not with whatever the index serves that day.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from sdpa_course.errors import KitError

KIT_DISTRIBUTION = "sdpa-course"
CHECKOUT = Path(__file__).resolve().parents[2]  # the kit's repository, when run from one

SETUP_SH = """\
#!/usr/bin/env bash
# Installs the sdpa-course kit and the dependency versions it was tested with
# (Python {python}). Written by `sdpa-course autograder {platform}`: rebuild, do not edit.
set -euo pipefail
HERE="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
VENV="${{SDPA_VENV:-{venv}}}"
PYTHON="${{SDPA_PYTHON:-python3}}"
if ! "$PYTHON" -c "import venv, ensurepip" 2>/dev/null && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update && apt-get install -y python3 python3-venv python3-pip
fi
echo "sdpa-course: installing with $("$PYTHON" --version) (tested with Python {python})"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "pip=={pip}"  # the pip that resolved these versions
if ! "$VENV/bin/python" -m pip install --quiet --constraint "$HERE/constraints.txt" \\
        "$HERE"/wheels/sdpa_course-*.whl; then
    echo "sdpa-course: this Python cannot install the versions the kit was tested with" \\
         "(pip says why above): use an image with Python {python}, or set SDPA_PYTHON" >&2
    exit 1
fi
# a broken install fails here, while the image is built, not in a student's grading
"$VENV/bin/python" -c "import autograder.engine, sdpa_course.platforms.runner"
"""


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def pinned_requirements(distribution: str = KIT_DISTRIBUTION) -> list[str]:
    """`name==version` of every distribution `distribution` needs here, transitively (its
    extras' only where a requirement names them), sorted; the kit itself left out."""
    from packaging.requirements import Requirement  # deferred: only when an image is built

    pins: dict[str, str] = {}
    todo = [(distribution, frozenset())]
    seen: set[tuple[str, frozenset]] = set()
    while todo:
        name, extras = todo.pop()
        if (_canonical(name), extras) in seen:
            continue
        seen.add((_canonical(name), extras))
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise KitError(f"{name} is required by the kit but not installed here: install "
                           "the kit with its dependencies before building an autograder") from None
        if _canonical(name) != KIT_DISTRIBUTION:
            pins[_canonical(dist.metadata["Name"])] = dist.version
        for line in dist.requires or []:
            requirement = Requirement(line)
            wanted = [{"extra": extra} for extra in extras] or [{"extra": ""}]
            if requirement.marker is None or any(requirement.marker.evaluate(env)
                                                 for env in wanted):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


def python_version() -> str:
    return platform.python_version()


def build_kit_wheel(dest: Path) -> Path:
    """The kit's wheel, built from its checkout into `dest`."""
    if not (CHECKOUT / "pyproject.toml").is_file():
        raise KitError("an autograder carries the kit as a wheel built from its checkout: run "
                       "this command from a clone of the kit (pip install -e .)")
    dest.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", str(CHECKOUT),
               "-w", str(dest)]
    if importlib.util.find_spec("hatchling") is not None:
        command.append("--no-build-isolation")  # the backend is here: nothing to fetch
    with tempfile.TemporaryDirectory(prefix="sdpa-wheel-") as scratch:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "TMPDIR": scratch})
    wheels = sorted(dest.glob("sdpa_course-*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        raise KitError(f"could not build the kit's wheel: {done.stderr.strip()[-1500:]}")
    return wheels[0]


def write_installer(folder: Path, *, platform_name: str, venv: str) -> None:
    """`setup.sh`, `constraints.txt` and `wheels/` into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    build_kit_wheel(folder / "wheels")
    (folder / "constraints.txt").write_text(
        f"# The versions sdpa-course was tested with (Python {python_version()}).\n"
        + "\n".join(pinned_requirements()) + "\n")
    setup = folder / "setup.sh"
    setup.write_text(SETUP_SH.format(python=python_version(), platform=platform_name,
                                     venv=venv, pip=importlib.metadata.version("pip")))
    setup.chmod(0o755)
