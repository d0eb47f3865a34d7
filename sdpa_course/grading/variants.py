"""Each student's variant in a grading run, and the check that the release matches the seed.

The variant of a submission comes from the course seed and the id of the folder it is in
(`submitted/<student>/...`), never from what the notebook says. Students' notebooks work out
their numbers from the numbers key the release carried (kept in the gradebook with the
*Your numbers* cell); if the seed no longer gives that key, every student would be graded on
numbers other than those they were shown, so grading refuses and says what to do.
"""

from __future__ import annotations

from nbgrader.api import Gradebook, MissingEntry

from sdpa_course.assignment import NUMBERS_CELL
from sdpa_course.course.directory import Course
from sdpa_course.nbgrader_ext.variants import CourseVariants, embedded_key


def released_numbers_key(gradebook: Gradebook, course: Course) -> str | None:
    """The numbers key the release carried ("" for none); None for a release made before
    notebooks had a *Your numbers* cell."""
    try:
        cell = gradebook.find_source_cell(NUMBERS_CELL, course.notebook, course.assignment)
    except MissingEntry:
        return None
    return embedded_key(cell.source)


def release_mismatch(gradebook: Gradebook, course: Course, variants: CourseVariants) -> str:
    """Why the release and the course seed disagree ("" when they agree)."""
    expected = variants.numbers_key()
    released = released_numbers_key(gradebook, course)
    if released is None and not expected:
        return ""  # an older release and no seed: everyone works the lesson's numbers
    if released is None:
        return ("the release in the gradebook has no *Your numbers* cell (it was made by an "
                "older kit) but the course has a seed: students' notebooks show the lesson's "
                "numbers, and grading would expect their own. Run `sdpa-course release` before "
                "handing the notebook out, or remove c.CourseVariants.seed from "
                "nbgrader_config.py to grade everyone on the lesson's numbers")
    if released != expected:
        said = "no numbers key" if not released else "another numbers key"
        return (f"the released notebook carries {said} than this course's seed gives (the "
                "seed was added or changed after `sdpa-course release`): students' notebooks "
                "show numbers that grading would not expect. Put c.CourseVariants.seed back as "
                "it was at the release; or, if no student has the notebook yet, run "
                "`sdpa-course release` again")
    return ""
