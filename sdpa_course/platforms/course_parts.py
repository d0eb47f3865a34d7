"""What an autograder takes from the course: its seed, its release, its hand-graded questions.

The seed travels inside what only staff can download (Gradescope's zip, PrairieLearn's
question `tests/`); the release is what students work in, and it must carry the numbers key
that seed gives, or students would be graded on numbers they were never shown (as `grade`
refuses). The hand-graded questions (the free-text answer of exercise 2) are read from the
release's nbgrader cells, each with its points, so the platform's manual questions match.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sdpa_course.assignment import ASSIGNMENT, NOTEBOOK
from sdpa_course.course.directory import Course
from sdpa_course.course.release import release_assignment
from sdpa_course.errors import KitError
from sdpa_course.nbgrader_ext.variants import notebook_numbers_key


@dataclass(frozen=True)
class ManualQuestion:
    grade_id: str  # `ex2_explain`
    points: float
    prompt: str  # the first line of the question above the answer cell


@dataclass(frozen=True)
class CourseParts:
    seed: str
    release_notebook: Path
    manual_questions: list[ManualQuestion]


def course_parts(course_dir: Path) -> CourseParts:
    """The course's seed and release (released now if it never was)."""
    course = Course.open(Path(course_dir))
    key = course.variants.numbers_key()  # checks the seed's form
    notebook = course.root / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    if not notebook.is_file():
        notebook = release_assignment(course.root) / f"{NOTEBOOK}.ipynb"
    if notebook_numbers_key(notebook) != key:
        raise KitError(f"{notebook} was released with another seed than the course's: run "
                       "`sdpa-course release` again before building an autograder (students "
                       "would be graded on numbers they were never shown)")
    seed = course.variants.seed.strip() if course.variants.has_seed else ""
    return CourseParts(seed, notebook, manual_questions(notebook))


def manual_questions(notebook: Path) -> list[ManualQuestion]:
    """The release's hand-graded answer cells (nbgrader: graded, a solution, markdown)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    found, previous = [], ""
    for cell in cells:
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        meta = (cell.get("metadata") or {}).get("nbgrader") or {}
        if cell.get("cell_type") == "markdown" and meta.get("grade") and meta.get("solution"):
            prompt = next((line.strip() for line in previous.splitlines() if line.strip()), "")
            found.append(ManualQuestion(str(meta.get("grade_id")),
                                        float(meta.get("points") or 0), prompt[:200]))
        previous = source
    return found
