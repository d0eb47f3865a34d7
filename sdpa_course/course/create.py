"""`sdpa-course init`: a new nbgrader course directory, ready to release.

It holds the kit's `nbgrader_config.py` (every setting lives in
`sdpa_course.nbgrader_ext.config`) and the source notebook, copied from the kit's material.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sdpa_course.assignment import ASSIGNMENT, NOTEBOOK
from sdpa_course.course.directory import CONFIG_FILE
from sdpa_course.course.material import notebook_path
from sdpa_course.errors import KitError

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
