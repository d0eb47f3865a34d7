"""The nbgrader configuration every course of this kit uses, declared once.

`nbgrader_config.py` (at the repository root and in every course made by `sdpa-course init`)
only calls `configure(get_config())`.
"""

from __future__ import annotations

ASSIGNMENT = "sdpa"
NOTEBOOK = "attention"


def configure_release(c) -> None:
    """Settings for building the student release (generate_assignment)."""
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import ClearSolutions

    from sdpa_course.nbgrader_ext.clear_solutions import ExerciseClearSolutions

    # nbgrader's own pipeline, in its own order, with stubs that name their exercise in place
    # of the stock ClearSolutions (same slot: after LockCells, before the checksums).
    preprocessors = GenerateAssignment.class_traits()["preprocessors"].default()
    c.GenerateAssignment.preprocessors = [
        ExerciseClearSolutions if step is ClearSolutions else step for step in preprocessors
    ]
    # The jupytext text source of the notebook sits beside it in source/<assignment>/ and holds
    # the solutions: nbgrader must never copy it into release/ (or autograded/).
    ignored = CourseDirectory.class_traits()["ignore"].default()
    c.CourseDirectory.ignore = [*ignored, f"{NOTEBOOK}.py"]


def configure_grading(c) -> None:
    """Settings for autograde and feedback: the kit's engine in place of nbgrader's kernel."""


def configure(c) -> None:
    configure_release(c)
    configure_grading(c)
