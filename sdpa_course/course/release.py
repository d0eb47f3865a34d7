"""`sdpa-course release`: nbgrader's generate_assignment, run in-process on a course."""

from __future__ import annotations

from pathlib import Path

from nbgrader.apps import NbGraderAPI

from sdpa_course.assignment import ASSIGNMENT, NOTEBOOK
from sdpa_course.course.directory import Course
from sdpa_course.errors import KitError


def release_assignment(course_dir: Path) -> Path:
    """Run nbgrader's generate_assignment in-process (overwriting); return release/<assignment>."""
    course = Course.open(course_dir)  # refuses a folder without nbgrader_config.py
    notebook = course.root / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    if not notebook.is_file():
        raise KitError(f"{course.root} has no source notebook "
                       f"{notebook.relative_to(course.root)}; "
                       "`sdpa-course init --force DIR` puts it back")
    api = NbGraderAPI(config=course.config)
    result = api.generate_assignment(ASSIGNMENT, force=True, create=True)
    if not result.get("success"):
        details = (result.get("error") or result.get("log") or "").strip()
        raise KitError(f"nbgrader could not build the release of {ASSIGNMENT!r}:\n{details}")
    release = Path(api.coursedir.format_path(api.coursedir.release_directory, ".", ASSIGNMENT))
    if not (release / f"{NOTEBOOK}.ipynb").is_file():
        raise KitError(f"nbgrader reported success but wrote no {release / NOTEBOOK}.ipynb")
    return release.resolve()
