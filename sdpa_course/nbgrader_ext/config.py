"""The nbgrader configuration every course of this kit uses, declared once.

`nbgrader_config.py` (at the repository root and in every course made by `sdpa-course init`)
only calls `configure(get_config())`.
"""

from __future__ import annotations

from pathlib import Path

import nbgrader
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.converters import Autograde, GenerateAssignment
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import ClearSolutions, Execute, OverwriteCells

from sdpa_course.assignment import NOTEBOOK
from sdpa_course.nbgrader_ext.autograde import EngineGrades
from sdpa_course.nbgrader_ext.clear_solutions import ExerciseClearSolutions
from sdpa_course.nbgrader_ext.feedback_exporter import FeedbackExporter
from sdpa_course.nbgrader_ext.feedback_summary import FeedbackSummary, GetGradesWithPending
from sdpa_course.nbgrader_ext.redact import RedactFeedback
from sdpa_course.nbgrader_ext.restore_cells import OverwriteCellsInPlace

TEMPLATES = Path(__file__).parent / "templates"
NBGRADER_TEMPLATES = Path(nbgrader.__file__).parent / "server_extensions/formgrader/templates"


def configure_release(c) -> None:
    """Settings for building the student release (generate_assignment)."""
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
    # nbgrader's autograde pipeline, in its own order, with the engine in Execute's slot:
    # the scores must be in the cells before SaveAutoGrades reads them.
    steps = Autograde.class_traits()["autograde_preprocessors"].default()
    c.Autograde.autograde_preprocessors = [
        EngineGrades if step is Execute else step for step in steps
    ]
    # A deleted graded cell comes back (and is scored) instead of silently keeping no grade;
    # nbgrader's own way of putting it back fails on this notebook (see restore_cells).
    sanitize = Autograde.class_traits()["sanitize_preprocessors"].default()
    c.Autograde.sanitize_preprocessors = [
        OverwriteCellsInPlace if step is OverwriteCells else step for step in sanitize
    ]
    c.OverwriteCells.add_missing_cells = True
    # Feedback: grades (hand-graded parts marked pending), the summary, then redaction last,
    # so nothing rendered escapes it.
    c.GenerateFeedback.preprocessors = [
        GetGradesWithPending, FeedbackSummary, RedactFeedback, CSSHTMLHeaderPreprocessor,
    ]
    # Configured on a subclass: formgrader renders its grading page with a plain HTMLExporter
    # built from this same config, and needs its own template.
    c.GenerateFeedback.exporter_class = FeedbackExporter
    c.FeedbackExporter.template_name = "sdpa_feedback"
    c.FeedbackExporter.extra_template_basedirs = [str(TEMPLATES), str(NBGRADER_TEMPLATES)]


def configure(c) -> None:
    configure_release(c)
    configure_grading(c)
