"""`sdpa-course init`: a new nbgrader course directory, ready to release.

It holds the kit's `nbgrader_config.py` (every setting lives in
`sdpa_course.nbgrader_ext.config`), with a fresh random course seed (`c.CourseVariants.seed`:
each student's own numbers derive from it), and the source notebook, copied from the kit's
material. `init --force` on an existing course keeps the seed it already has, so that no
student's numbers change.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from sdpa_course.assignment import ASSIGNMENT, NOTEBOOK
from sdpa_course.course.directory import CONFIG_FILE
from sdpa_course.course.material import notebook_path
from sdpa_course.errors import KitError
from sdpa_course.nbgrader_ext.variants import new_seed, seed_line

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

SEED_TEXT = '''
# This course's secret: every student's own numbers and hidden test inputs derive from it.
# Keep it out of anything you publish (as you keep source/), and never change it once the
# assignment is released: every student's numbers would change.
{line}
'''
_SEED_LINE = re.compile(r"^c\.CourseVariants\.seed\s*=\s*[\"']([0-9a-fA-F]+)[\"']", re.M)


def existing_seed(config: Path) -> str | None:
    """The seed an existing nbgrader_config.py sets, if it sets one in the usual form."""
    if not config.is_file():
        return None
    match = _SEED_LINE.search(config.read_text(encoding="utf-8", errors="replace"))
    return match.group(1) if match else None


def init_course(path: Path, *, force: bool = False) -> Path:
    """Create an nbgrader course directory at `path`: its config (with a course seed, kept if
    the folder already had one) and the source notebook."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise KitError(f"{path} exists and is not a folder")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise KitError(f"{path} is not empty; choose a new folder, or pass --force to write the "
                       "course files into it (existing files of the same name are replaced)")
    source = notebook_path("source")
    notebook_dir = path / "source" / ASSIGNMENT
    try:
        notebook_dir.mkdir(parents=True, exist_ok=True)
        seed = existing_seed(path / CONFIG_FILE) or new_seed()
        (path / CONFIG_FILE).write_text(CONFIG_TEXT + SEED_TEXT.format(line=seed_line(seed)),
                                        encoding="utf-8")
        shutil.copyfile(source, notebook_dir / f"{NOTEBOOK}.ipynb")
    except OSError as err:  # a read-only place, a missing parent we may not create...
        raise KitError(f"cannot create the course at {path}: "
                       f"{err.strerror or err} ({err.filename or path})") from err
    return path.resolve()
