"""Course directories: `sdpa-course init` creates one, `sdpa-course release` builds its release."""

from __future__ import annotations

import shutil
from pathlib import Path

from sdpa_course.assignment import ASSIGNMENT, NOTEBOOK
from sdpa_course.coursedir import CONFIG_FILE, Course
from sdpa_course.errors import KitError
from sdpa_course.material import notebook_path

# The same configuration as the repository root's nbgrader_config.py: every setting lives in
# sdpa_course.nbgrader_ext.config (tests/test_course.py holds the two files' code equal).
CONFIG_TEXT = '''\
"""nbgrader configuration for this course directory, written by `sdpa-course init`.

Every setting lives in `sdpa_course.nbgrader_ext.config`.
"""

from sdpa_course.nbgrader_ext.config import configure

c = get_config()  # noqa: F821 -- provided by nbgrader when it loads this file
c.CourseDirectory.course_id = "sdpa-course"
configure(c)
# Do not set CourseDirectory.assignment_id here: nbgrader then refuses an assignment on the
# command line ("cannot both be specified in config and as an argument").
'''


def init_course(path: Path, *, force: bool = False) -> Path:
    """Create an nbgrader course directory at `path`: its config and the source notebook."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise KitError(f"{path} exists and is not a folder")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise KitError(f"{path} is not empty; choose a new folder, or pass --force to write the "
                       "course files into it (existing files of the same name are replaced)")
    source = notebook_path("source")
    notebook_dir = path / "source" / ASSIGNMENT
    notebook_dir.mkdir(parents=True, exist_ok=True)
    (path / CONFIG_FILE).write_text(CONFIG_TEXT, encoding="utf-8")
    shutil.copyfile(source, notebook_dir / f"{NOTEBOOK}.ipynb")
    return path.resolve()


def release_assignment(course_dir: Path) -> Path:
    """Run nbgrader's generate_assignment in-process (overwriting); return release/<assignment>."""
    course = Course.open(course_dir)  # refuses a folder without nbgrader_config.py
    notebook = course.root / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    if not notebook.is_file():
        raise KitError(f"{course.root} has no source notebook "
                       f"{notebook.relative_to(course.root)}; "
                       "`sdpa-course init --force DIR` puts it back")
    from nbgrader.apps import NbGraderAPI

    api = NbGraderAPI(config=course.config)
    result = api.generate_assignment(ASSIGNMENT, force=True, create=True)
    if not result.get("success"):
        details = (result.get("error") or result.get("log") or "").strip()
        raise KitError(f"nbgrader could not build the release of {ASSIGNMENT!r}:\n{details}")
    release = Path(api.coursedir.format_path(api.coursedir.release_directory, ".", ASSIGNMENT))
    if not (release / f"{NOTEBOOK}.ipynb").is_file():
        raise KitError(f"nbgrader reported success but wrote no {release / NOTEBOOK}.ipynb")
    return release.resolve()
