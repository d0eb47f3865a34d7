"""Course directories: `sdpa-course init` creates one, `sdpa-course release` builds its release."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from sdpa_course.cli import KitError
from sdpa_course.material import notebook_path
from sdpa_course.nbgrader_ext.config import ASSIGNMENT, NOTEBOOK

CONFIG_FILE = "nbgrader_config.py"

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


def _put_python_bin_on_path() -> None:
    """nbgrader shells out to `alembic`, which is installed next to this Python."""
    bin_dir = str(Path(sys.executable).parent)
    entries = os.environ.get("PATH", "").split(os.pathsep)
    if bin_dir not in entries:
        os.environ["PATH"] = os.pathsep.join([bin_dir, *filter(None, entries)])


def _course_config(course_dir: Path):
    """The course's own nbgrader config, read as nbgrader reads it, rooted at course_dir."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader(CONFIG_FILE, path=str(course_dir)).load_config()
    config.CourseDirectory.root = str(course_dir)
    return config


def release_assignment(course_dir: Path) -> Path:
    """Run nbgrader's generate_assignment in-process (overwriting); return release/<assignment>."""
    course_dir = Path(course_dir).resolve()
    if not (course_dir / CONFIG_FILE).is_file():
        raise KitError(f"{course_dir} is not a course directory (no {CONFIG_FILE}); "
                       "create one with `sdpa-course init DIR`")
    notebook = course_dir / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    if not notebook.is_file():
        raise KitError(f"{course_dir} has no source notebook {notebook.relative_to(course_dir)}; "
                       "`sdpa-course init --force DIR` puts it back")
    _put_python_bin_on_path()
    from nbgrader.apps import NbGraderAPI

    api = NbGraderAPI(config=_course_config(course_dir))
    result = api.generate_assignment(ASSIGNMENT, force=True, create=True)
    if not result.get("success"):
        details = (result.get("error") or result.get("log") or "").strip()
        raise KitError(f"nbgrader could not build the release of {ASSIGNMENT!r}:\n{details}")
    release = Path(api.coursedir.format_path(api.coursedir.release_directory, ".", ASSIGNMENT))
    if not (release / f"{NOTEBOOK}.ipynb").is_file():
        raise KitError(f"nbgrader reported success but wrote no {release / NOTEBOOK}.ipynb")
    return release.resolve()
