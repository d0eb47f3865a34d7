"""The course seed in nbgrader's configuration, and the release step that uses it.

`CourseVariants.seed` (in the course's `nbgrader_config.py`, written there by `sdpa-course
init`, never into the kit or its repository) is the course's secret: each student's variant
(`autograder.variants`) derives from it, the assignment and the student id. Without a seed
every student works the lesson's own numbers (the default variant), as before variants.

`EmbedCourseNumbers` runs first in `generate_assignment`: it writes the course's public
numbers key into the notebook's *Your numbers* cell, before nbgrader locks the cell, takes
its checksum and keeps its source in the gradebook. So the released notebook works out each
student's numbers, and autograde puts the same cell back if a student edits it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange.default.exchange import Exchange
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode
from traitlets.config import Configurable

from autograder.variants import BadSeed, Variant, new_seed, numbers_key, variant_for
from sdpa_course.assignment import ASSIGNMENT, NUMBERS_CELL
from sdpa_course.errors import KitError

# The line of the *Your numbers* cell that `EmbedCourseNumbers` fills in.
COURSE_LINE = re.compile(r"^COURSE = \{.*\}$", re.M)


def seed_line(seed: str) -> str:
    """The line of nbgrader_config.py that holds a course seed."""
    return f'c.CourseVariants.seed = "{seed}"'


def how_to_add_a_seed() -> str:
    """What to tell the instructor of a course without a seed."""
    return ("this course has no seed, so every student works the lesson's own numbers (the "
            "default variant). To give each student their own numbers, add this line to the "
            f"course's nbgrader_config.py, then run `sdpa-course release` before handing the "
            f"notebook out:\n    {seed_line(new_seed())}")


class CourseVariants(Configurable):
    """Each student's own numbers and hidden inputs (set the seed in nbgrader_config.py)."""

    seed = Unicode(
        "",
        help="This course's secret (64 hexadecimal digits, written by `sdpa-course init`): "
             "every student's own numbers and hidden test inputs derive from it, the "
             "assignment and their id. Keep it out of anything you publish, and never change "
             "it once the assignment is released (every student's numbers would change). "
             "Empty: every student works the lesson's own numbers.",
    ).tag(config=True)

    @property
    def has_seed(self) -> bool:
        return bool(self.seed.strip())

    def _checked(self) -> str:
        try:
            numbers_key(self.seed)  # checks the seed's form
        except BadSeed as err:
            raise KitError(f"c.CourseVariants.seed in nbgrader_config.py: {err}") from None
        return self.seed.strip()

    def numbers_key(self) -> str:
        """The public numbers key the release carries; "" without a seed."""
        return numbers_key(self._checked()) if self.has_seed else ""

    def variant(self, student: str, assignment: str = ASSIGNMENT) -> Variant:
        """`student`'s variant of the assignment (the default one without a seed)."""
        return variant_for(self._checked() if self.has_seed else None, assignment, student)


def course_line(numbers_key: str, course_id: str, exchange_root: str) -> str:
    """The filled-in `COURSE = {...}` line of the *Your numbers* cell."""
    fields = {"assignment": ASSIGNMENT, "numbers_key": numbers_key, "course_id": course_id,
              "exchange_root": exchange_root}
    return f"COURSE = {json.dumps(fields)}"  # JSON strings are Python string literals


def embedded_key(source: str) -> str | None:
    """The numbers key a *Your numbers* cell carries ("" for none), None without the line."""
    match = COURSE_LINE.search(source)
    if match is None:
        return None
    found = re.search(r'"numbers_key": "([0-9a-f]*)"', match.group(0))
    return found.group(1) if found else None


def notebook_numbers_key(path: Path) -> str:
    """The numbers key a notebook file's *Your numbers* cell carries; "" for none (not a
    notebook, no such cell, a copy made outside a course)."""
    try:
        notebook = json.loads(Path(path).read_text(encoding="utf-8"))
        cells = notebook["cells"]
        for cell in cells if isinstance(cells, list) else []:
            grade_id = (cell.get("metadata") or {}).get("nbgrader", {}).get("grade_id")
            if grade_id == NUMBERS_CELL:
                source = cell.get("source", "")
                source = "".join(source) if isinstance(source, list) else str(source)
                return embedded_key(source) or ""
    except (OSError, ValueError, TypeError, AttributeError, KeyError, RecursionError,
            MemoryError):  # whatever the file holds: nested too deeply, a 5000-digit number...
        pass
    return ""


class EmbedCourseNumbers(NbGraderPreprocessor):
    """Write the course's numbers key (and where its exchange is) into *Your numbers*."""

    def preprocess(self, nb, resources):
        variants = CourseVariants(parent=self)
        coursedir = CourseDirectory(parent=self)
        line = course_line(variants.numbers_key(), coursedir.course_id,
                           Exchange(parent=self).root)
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == NUMBERS_CELL:
                cell.source = COURSE_LINE.sub(lambda _: line, cell.source, count=1)
        return nb, resources
