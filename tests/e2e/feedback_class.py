"""The page formgrader shows a TA, for the feedback-page tests (their graded class, typical
and hostile students: tests/feedback_students.py, the `feedback_class` fixture)."""

from __future__ import annotations

import copy
from pathlib import Path

from nbconvert.exporters import HTMLExporter
from traitlets.config import Config


def formgrader_page(course: Path, student: str) -> str:
    """The page formgrader shows a TA who opens `student`'s notebook to mark it, rendered as
    formgrader renders it: an HTMLExporter built from the course's config plus formgrader's
    own settings (nbgrader's FormgradeExtension), fed the autograded notebook."""
    from nbgrader.server_extensions.formgrader import handlers

    from sdpa_course.course.directory import Course

    config = copy.deepcopy(Course.open(course).config)
    extra = Config()
    extra.HTMLExporter.template_name = "formgrade"
    extra.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    config.merge(extra)
    exporter = HTMLExporter(config=config)
    resources = {"assignment_id": "sdpa", "notebook_id": "attention", "submission_id": "x",
                 "index": 0, "total": 1, "base_url": "", "student": student,
                 "last_name": "", "first_name": "", "notebook_path": "x"}
    path = course / "autograded" / student / "sdpa" / "attention.ipynb"
    html, _ = exporter.from_filename(str(path), resources=resources)
    return html
