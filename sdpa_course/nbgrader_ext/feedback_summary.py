"""Feedback preprocessors: hand-graded parts shown as pending, and a summary at the top.

Order in `GenerateFeedback.preprocessors` (see `config.configure_grading`):
`GetGradesWithPending` (reads the gradebook) -> `FeedbackSummary` (needs the pending marks)
-> `RedactFeedback` (must see everything that will be rendered) -> CSS header.
"""

from __future__ import annotations

from nbformat.v4 import new_markdown_cell
from nbgrader import utils
from nbgrader.preprocessors import GetGrades, NbGraderPreprocessor
from traitlets import List

from sdpa_course.assignment import METADATA_KEY
from sdpa_course.reports.feedback_text import summary_markdown


class GetGradesWithPending(GetGrades):
    """nbgrader's GetGrades, plus `pending` on grades nobody has given yet.

    nbgrader shows an ungraded written answer as 0; the kit's template shows "pending".
    """

    def _get_score(self, cell, resources):
        super()._get_score(cell, resources)
        grade = self.gradebook.find_grade(
            cell.metadata["nbgrader"]["grade_id"], self.notebook_id, self.assignment_id,
            self.student_id,
        )
        cell.metadata.nbgrader["pending"] = grade.auto_score is None and grade.manual_score is None


class FeedbackPreprocessor(NbGraderPreprocessor):
    """A feedback step: takes the HTML exporter's shared `display_data_priority` setting.

    nbconvert's HTMLExporter sets it for every step; without the trait nbgrader warns
    "Config option not recognized" (nbgrader's own GetGrades declares it the same way).
    """

    display_data_priority = List(GetGrades.class_traits()["display_data_priority"].default(),
                                 config=True)


class FeedbackSummary(FeedbackPreprocessor):
    """Put the per-exercise results, diagnoses and pending parts in a cell at the top."""

    def preprocess(self, nb, resources):
        pending = [
            (cell.metadata.nbgrader["grade_id"], float(cell.metadata.nbgrader["points"]))
            for cell in nb.cells
            if utils.is_grade(cell) and cell.metadata.nbgrader.get("pending")
        ]
        pending_points = sum(points for _, points in pending)
        resources.setdefault(METADATA_KEY, {})["pending_points"] = pending_points
        report = nb.metadata.get(METADATA_KEY, {}).get("report")
        if report is not None:
            cell = new_markdown_cell(summary_markdown(report, pending))
            cell.metadata[METADATA_KEY] = {"summary": True}
            nb.cells.insert(0, cell)
        return nb, resources
