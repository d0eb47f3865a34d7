"""Feedback steps: the gradebook's marks, and what the page's template lays out.

Order in `GenerateFeedback.preprocessors` (see `config.configure_grading`):
`GetGradesWithPending` (reads the gradebook: scores, hand marks, the marker's comments) ->
`FeedbackView` (the summary and each cell's role, from the engine's report) ->
`RedactFeedback` (must see everything that will be rendered, and drops the report).

`FeedbackView` gives every cell a role in `cell.metadata.sdpa_course.view`, which the
template (`templates/sdpa_feedback`) follows:

- `lesson`: the lesson's markdown; `written`: a hand-graded written answer (with its mark or
  "pending", and the marker's comment);
- `answer`: a student's code cell, shown open with what it printed and drew;
- `kit`: a locked cell of the course (setup, self-checks, the heatmap's code): its code folded
  in a `<details>`, its outputs shown: for a self-check or demonstration grading left out, a
  note (a self-check's, what the grader found: `autograde.skipped_outputs`), and for the
  heatmap's cell the student's causal weights drawn here from the report (`heatmap`, HTML
  made by `reports.heatmap` from numbers only);
- `results`: an autograded cell: the exercise's tests, messages and diagnoses, explained.
"""

from __future__ import annotations

from nbgrader.preprocessors import GetGrades

from autograder.heatmap import HEATMAP_CELL
from sdpa_course.assignment import METADATA_KEY
from sdpa_course.nbgrader_ext.autograde import is_autograded_cell
from sdpa_course.nbgrader_ext.feedback_step import FeedbackPreprocessor
from sdpa_course.nbgrader_ext.redact import scrub_paths
from sdpa_course.reports.feedback_text import exercise_view, points, summary_view
from sdpa_course.reports.heatmap import heatmap_html

FOLDED_CODE = (  # grade_id prefix or suffix -> what the folded code is
    ("setup", "Setup code of the notebook"),
    ("selfcheck", "Self-check code"),
    ("heatmap", "Code that draws your causal attention weights"),
)


class GetGradesWithPending(GetGrades):
    """nbgrader's GetGrades, plus `pending` on grades nobody has given yet, and only the
    comments a marker wrote.

    nbgrader shows an ungraded written answer as 0; the kit's template shows "pending".
    nbgrader's comment of an answer left as released is its own "No response.", which the
    page would show as the marker's comment before any marker looked.
    """

    def _get_comment(self, cell, resources):
        super()._get_comment(cell, resources)
        comment = self.gradebook.find_comment(
            cell.metadata["nbgrader"]["grade_id"], self.notebook_id, self.assignment_id,
            self.student_id,
        )
        cell.metadata.nbgrader["comment"] = (comment.manual_comment or "").strip() or None

    def _get_score(self, cell, resources):
        super()._get_score(cell, resources)
        grade = self.gradebook.find_grade(
            cell.metadata["nbgrader"]["grade_id"], self.notebook_id, self.assignment_id,
            self.student_id,
        )
        cell.metadata.nbgrader["pending"] = grade.auto_score is None and grade.manual_score is None


def _scrubbed(value):
    """Paths scrubbed from every string of a view (messages, cell errors)."""
    if isinstance(value, str):
        return scrub_paths(value)
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    if isinstance(value, dict):
        return {k: _scrubbed(v) for k, v in value.items()}
    return value


def folded_label(grade_id: str) -> str:
    for key, label in FOLDED_CODE:
        if key in grade_id:
            return label
    return "Code of the course"


def _view(cell) -> str:
    nbgrader = cell.metadata.get("nbgrader") or {}
    if cell.cell_type == "markdown":
        return "written" if nbgrader.get("grade") and nbgrader.get("solution") else "lesson"
    if cell.cell_type != "code":
        return "lesson"
    if is_autograded_cell(cell):
        return "results"
    return "kit" if nbgrader.get("locked") else "answer"


class FeedbackView(FeedbackPreprocessor):
    """The summary (in `resources["sdpa_course"]`) and each cell's role and results."""

    def preprocess(self, nb, resources):
        report = nb.metadata.get(METADATA_KEY, {}).get("report") or {}
        failed_cells = report.get("cells") or []
        heatmap_at = {c.get("index") for c in report.get("skipped") or []
                      if isinstance(c, dict) and c.get("grade_id") == HEATMAP_CELL}
        written = []
        for index, cell in enumerate(nb.cells):
            view = {"view": _view(cell)}
            nbgrader = cell.metadata.get("nbgrader") or {}
            if view["view"] == "written":
                pending = bool(nbgrader.get("pending"))
                score = None if pending else float(nbgrader.get("score") or 0.0)
                view["name"] = str(nbgrader.get("grade_id", ""))
                view["score"] = (f"pending / {points(nbgrader.get('points', 0))}" if pending
                                 else f"{points(score)} / {points(nbgrader.get('points', 0))}")
                view["comment"] = str(nbgrader.get("comment") or "")
                written.append({"name": view["name"], "max_score": nbgrader.get("points", 0),
                                "score": score, "comment": view["comment"]})
            elif view["view"] == "results":
                exercise = (cell.metadata.get(METADATA_KEY) or {}).get("exercise")
                result = (report.get("exercises") or {}).get(exercise)
                if result is not None:
                    view["result"] = _scrubbed(exercise_view(exercise, result, failed_cells))
            elif view["view"] == "kit":
                view["label"] = folded_label(str(nbgrader.get("grade_id", "")))
                if index in heatmap_at and "heatmap" in report:
                    view["heatmap"] = heatmap_html(report["heatmap"])
            cell.metadata[METADATA_KEY] = view
        late = float((resources.get("nbgrader") or {}).get("late_penalty") or 0.0)
        ours = resources.setdefault(METADATA_KEY, {})
        ours["pending_points"] = sum(float(w["max_score"]) for w in written if w["score"] is None)
        if report:
            ours["summary"] = _scrubbed(summary_view(report, written, late))
        return nb, resources
