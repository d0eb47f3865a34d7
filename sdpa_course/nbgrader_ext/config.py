"""The nbgrader configuration every course of this kit uses, declared once.

`nbgrader_config.py` (at the repository root and in every course made by `sdpa-course init`)
only calls `configure(get_config())`.
"""

from __future__ import annotations

from pathlib import Path

import nbgrader
from nbgrader.converters import Autograde, GenerateAssignment
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import ClearSolutions, Execute, OverwriteCells, SaveAutoGrades

from sdpa_course.assignment import NOTEBOOK
from sdpa_course.nbgrader_ext import code_html, student_html
from sdpa_course.nbgrader_ext.autograde import EngineGrades
from sdpa_course.nbgrader_ext.cell_budget import FoldExtraCells
from sdpa_course.nbgrader_ext.clear_solutions import ExerciseClearSolutions
from sdpa_course.nbgrader_ext.export import KitCsvExport
from sdpa_course.nbgrader_ext.extra_credit import SaveExtraCredit
from sdpa_course.nbgrader_ext.feedback_exporter import FeedbackExporter
from sdpa_course.nbgrader_ext.feedback_view import FeedbackView, GetGradesWithPending
from sdpa_course.nbgrader_ext.redact import RedactFeedback
from sdpa_course.nbgrader_ext.restore_cells import OverwriteCellsInPlace
from sdpa_course.nbgrader_ext.safe_notebook import SafeNotebook
from sdpa_course.nbgrader_ext.variants import EmbedCourseNumbers

TEMPLATES = Path(__file__).parent / "templates"
NBGRADER_TEMPLATES = Path(nbgrader.__file__).parent / "server_extensions/formgrader/templates"


def configure_release(c) -> None:
    """Settings for building the student release (generate_assignment)."""
    # nbgrader's own pipeline, in its own order, with stubs that name their exercise in place
    # of the stock ClearSolutions (same slot: after LockCells, before the checksums).
    # The course's numbers key goes in first, before nbgrader locks the cells, takes their
    # checksums and keeps their sources in the gradebook (SaveCells).
    preprocessors = GenerateAssignment.class_traits()["preprocessors"].default()
    c.GenerateAssignment.preprocessors = [EmbedCourseNumbers] + [
        ExerciseClearSolutions if step is ClearSolutions else step for step in preprocessors
    ]
    # The jupytext text source of the notebook sits beside it in source/<assignment>/ and holds
    # the solutions: nbgrader must never copy it into release/ (or autograded/).
    ignored = CourseDirectory.class_traits()["ignore"].default()
    c.CourseDirectory.ignore = [*ignored, f"{NOTEBOOK}.py"]


def configure_grading(c) -> None:
    """Settings for autograde and feedback: the kit's engine in place of nbgrader's kernel."""
    # nbgrader's autograde pipeline, in its own order, with the engine in Execute's slot:
    # the scores must be in the cells before SaveAutoGrades reads them. SaveExtraCredit comes
    # right after SaveAutoGrades, whose grade rows it completes. FoldExtraCells folds a graded
    # notebook's cells beyond the pages' budget (formgrader reads the autograded notebook).
    steps = Autograde.class_traits()["autograde_preprocessors"].default()
    c.Autograde.autograde_preprocessors = [
        replaced
        for step in steps
        for replaced in ([EngineGrades, FoldExtraCells] if step is Execute
                         else [step, SaveExtraCredit] if step is SaveAutoGrades else [step])
    ]
    # A deleted graded cell comes back (and is scored) instead of silently keeping no grade;
    # nbgrader's own way of putting it back fails on this notebook (see restore_cells).
    sanitize = Autograde.class_traits()["sanitize_preprocessors"].default()
    c.Autograde.sanitize_preprocessors = [
        OverwriteCellsInPlace if step is OverwriteCells else step for step in sanitize
    ]
    c.OverwriteCells.add_missing_cells = True
    # Feedback: grades (hand-graded parts marked pending), each cell's role and the summary,
    # then redaction last, so nothing rendered escapes it.
    c.GenerateFeedback.preprocessors = [GetGradesWithPending, FeedbackView, RedactFeedback]
    # Configured on a subclass: formgrader renders its grading page with a plain HTMLExporter
    # built from this same config, and needs its own template.
    c.GenerateFeedback.exporter_class = FeedbackExporter
    c.FeedbackExporter.template_name = "sdpa_feedback"
    c.FeedbackExporter.extra_template_basedirs = [str(TEMPLATES), str(NBGRADER_TEMPLATES)]
    configure_safe_pages(c)
    # the feedback page's own code filters (its stylesheet colours only what they mark up);
    # formgrader keeps the safe pages' filters
    c.FeedbackExporter.filters = {
        **c.HTMLExporter.filters,
        "highlight_code": f"{code_html.__name__}.feedback_code_html",
        "code_text": f"{code_html.__name__}.plain_code_html",
    }


def configure_safe_pages(c) -> None:
    """Every HTML page made of a student's notebook, the feedback and formgrader's grading page
    alike (formgrader builds `HTMLExporter(config=...)` from this config): outputs cut to what
    renders safely first, markdown rendered with MathML and sanitised, and code highlighted
    as Python whatever the notebook's metadata names (`code_html`)."""
    c.HTMLExporter.preprocessors = [SafeNotebook]
    c.HTMLExporter.filters = {"markdown2html": f"{student_html.__name__}.markdown2html",
                              "highlight_code": f"{code_html.__name__}.highlight_code"}


def configure_export(c) -> None:
    """`nbgrader export` lists failed and missing students too, never a silent 0."""
    c.ExportApp.plugin_class = KitCsvExport


def configure(c) -> None:
    configure_release(c)
    configure_grading(c)
    configure_export(c)
