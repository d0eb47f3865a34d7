"""Where the course material (source notebooks, answer keys) lives on this machine.

A wheel carries the repository's `source/` and `solutions/` inside the package, as
`sdpa_course/data/source` and `sdpa_course/data/solutions` (pyproject.toml force-include). An
editable install or a plain checkout has them at the repository root instead.
"""

from __future__ import annotations

from pathlib import Path

from sdpa_course.assignment import ASSIGNMENT, NOTEBOOK
from sdpa_course.errors import KitError

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # sdpa_course/
KINDS = ("source", "solutions")


def material_dir(kind: str) -> Path:
    """The folder holding `<kind>/<assignment>/...` material: `kind` is source or solutions."""
    if kind not in KINDS:
        raise ValueError(f"unknown course material {kind!r}; expected one of {KINDS}")
    candidates = (PACKAGE_DIR / "data" / kind, PACKAGE_DIR.parent / kind)
    for folder in candidates:
        if (folder / ASSIGNMENT / f"{NOTEBOOK}.ipynb").is_file():
            return folder
    looked = ", ".join(str(folder) for folder in candidates)
    raise KitError(f"the kit's {kind} notebooks are missing (looked in {looked}); "
                   "reinstall sdpa-course, or run `sdpa-course build` in a checkout")


def notebook_path(kind: str) -> Path:
    """`<kind>/<assignment>/<notebook>.ipynb` as installed: the source or the answer key."""
    return material_dir(kind) / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
