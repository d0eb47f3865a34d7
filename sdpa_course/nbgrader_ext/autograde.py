"""`EngineGrades`: nbgrader's autograde step without a kernel.

It takes the place of `Execute` in `Autograde.autograde_preprocessors`. Student code never
runs in nbgrader's process: the kit's engine grades the notebook in its sandbox, and this
preprocessor writes each graded cell's outputs from the engine's report, so nbgrader's own
`SaveAutoGrades` records the scores:

- a stdout stream with the student-facing message for the exercise, and
- an `execute_result` whose text/plain is `float(score)` printed by Python (`'4.5'`), the
  only form nbgrader reads as partial credit (numpy scalars, booleans, strings, negatives
  and arrays all count as FULL marks; a value above the cell's points fails the notebook).

A graded cell left without outputs would count as full marks, so every autograded cell gets
one, and a cell naming no exercise of the report stops the submission instead.

Every other code cell gets what it printed and drew when the engine ran it (the report's
`outputs`: text, and figures as PNG already checked by the sandbox), and a cell that did not
run cleanly a line saying so, so that formgrader and the feedback show the student's own
results. The lesson's demonstrations and self-checks, which grading leaves out (the report's
`skipped`), get a note instead: a self-check, what the grader found for its exercise; the
causal heatmap is drawn by the feedback page from the report's `heatmap` (`FeedbackView`).

`sdpa-course grade` grades in worker processes and hands the report in through
`resources["sdpa_course"]["report"]`; a plain `nbgrader autograde` has none, and the engine
is then called here, as the variant of the student nbgrader is grading (the folder's id).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import nbformat
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

from autograder.exercises import exercise_key
from autograder.heatmap import HEATMAP_CELL
from sdpa_course.assignment import METADATA_KEY, NOTEBOOK
from sdpa_course.engine_call import grade_path
from sdpa_course.errors import GradingFailed
from sdpa_course.nbgrader_ext.outputs import new_output
from sdpa_course.nbgrader_ext.variants import CourseVariants
from sdpa_course.reports.feedback_text import exercise_text


def is_autograded_cell(cell) -> bool:
    """A graded code cell that is not the student's own answer: the engine scores it."""
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


def cell_score(score: float, max_score: float, points: float) -> float:
    """The engine's score in the cell's points, clamped to [0, points]."""
    scaled = score if max_score == points else score * points / max_score if max_score else 0.0
    return round(min(max(float(scaled), 0.0), float(points)), 6)


GRADER_NOTE = "[grader] "


def figure_alt(cell_label: str, number: int, has_text: bool) -> str:
    """Alt text of a figure a cell drew (the page has no other description of it)."""
    alt = f"Figure {number} drawn by {cell_label} when it was graded"
    return alt + ("; what the cell printed (the numbers, if it printed them) is below it"
                  if has_text else "")


def cell_outputs(shown: dict | None, failed: dict | None) -> list:
    """A student's cell outputs from the report: text, figures, then why it stopped."""
    outputs = []
    if shown:
        # figures first: the inline backend shows them at plt.show(), before later prints
        text = str(shown.get("text") or "")
        for number, png in enumerate(shown.get("images") or [], start=1):
            if isinstance(png, str):
                outputs.append(new_output(
                    "display_data", data={"image/png": png},
                    metadata={"image/png": {"alt": figure_alt(str(shown.get("cell", "this cell")),
                                                              number, bool(text))}}))
        if text:
            outputs.append(new_output("stream", name="stdout", text=text))
    if failed:
        outputs.append(new_output(
            "stream", name="stderr",
            text=f"{GRADER_NOTE}this cell did not run to the end ({failed.get('status')}): "
                 f"{failed.get('error') or failed.get('status')}\n"))
    return outputs


def skipped_outputs(skipped: dict, exercises: dict, texts: dict | None = None) -> list:
    """The note in place of a lesson cell grading left out: for a self-check, what the grader
    found for its exercise. `texts`: each exercise's `exercise_text`, as far as made already
    (for this report: filled in here)."""
    if skipped.get("tag") == "self-check":
        result = exercises.get(skipped.get("exercise"))
        found = _text(skipped["exercise"], result, texts) if result else ""
        return [new_output("stream", name="stdout", text=(
            f"{GRADER_NOTE}this self-check runs in your own Jupyter; when your work was graded "
            "the hidden tests ran instead, and found:\n" + found))]
    if skipped.get("grade_id") == HEATMAP_CELL:
        return [new_output("stream", name="stdout", text=(
            f"{GRADER_NOTE}this cell runs in your own Jupyter; the picture below is the "
            "grader's, drawn from the weights your attention returned on the same example "
            "when your work was graded.\n"))]
    return [new_output("stream", name="stdout", text=(
        f"{GRADER_NOTE}a demonstration of the lesson: it runs in your own Jupyter, not when "
        "your work is graded.\n"))]


def put_cell_outputs(nb, report: dict, texts: dict | None = None) -> None:
    """Each code cell the engine ran gets its outputs (by the cell's index in the notebook),
    each it left out a note (`texts` as for `skipped_outputs`)."""
    shown = {o.get("index"): o for o in report.get("outputs") or [] if isinstance(o, dict)}
    failed = {c.get("index"): c for c in report.get("cells") or [] if isinstance(c, dict)}
    skipped = {c.get("index"): c for c in report.get("skipped") or [] if isinstance(c, dict)}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or is_autograded_cell(cell):
            continue
        if index in skipped:
            outputs = skipped_outputs(skipped[index], report.get("exercises") or {}, texts)
        else:
            outputs = cell_outputs(shown.get(index), failed.get(index))
        if outputs:
            cell.outputs = outputs


def _text(exercise: str, result: dict, texts: dict | None) -> str:
    """`exercise_text`, made once per exercise of a report when `texts` keeps them (a report's
    exercise is shown under its graded cell and its self-checks: 11 times a submission)."""
    if texts is None:
        return exercise_text(exercise, result)
    if exercise not in texts:
        texts[exercise] = exercise_text(exercise, result)
    return texts[exercise]


def graded_outputs(exercise: str, result: dict, points: float,
                   texts: dict | None = None) -> list:
    score = cell_score(result["score"], result["max_score"], points)
    text = _text(exercise, result, texts)
    if result.get("extra_credit"):
        # The cell is worth 0 points (more would fail the submission, and count in the
        # maximum); SaveExtraCredit records the exercise's score as the cell's extra credit.
        text += f"(recorded as {float(result['score']):g} points of extra credit)\n"
    elif float(result["max_score"]) != float(points):
        text += f"(scaled to this cell's {points:g} points: {score:g})\n"
    return [
        new_output("stream", name="stdout", text=text),
        # repr of a Python float: the one form nbgrader takes as partial credit
        new_output("execute_result", data={"text/plain": repr(float(score))}, execution_count=1),
    ]


class EngineGrades(NbGraderPreprocessor):
    """Fill every autograded cell's outputs from the kit's grading engine."""

    def preprocess(self, nb, resources):
        report = resources.get(METADATA_KEY, {}).get("report")
        if report is None:
            report = self._grade_here(nb, resources.get("nbgrader", {}).get("student"))
        exercises = report["exercises"]
        texts: dict[str, str] = {}  # this report's `exercise_text`s, each made once
        for cell in nb.cells:
            if not is_autograded_cell(cell):
                continue
            grade_id = cell.metadata["nbgrader"]["grade_id"]
            exercise = exercise_key(grade_id)  # `ex3_autograded` -> `ex3`
            if exercise not in exercises:
                raise GradingFailed(
                    f"graded cell {grade_id!r} names no exercise the engine graded "
                    f"({', '.join(exercises) or 'none'})"
                )
            points = float(cell.metadata["nbgrader"]["points"])
            cell.outputs = graded_outputs(exercise, exercises[exercise], points, texts)
            cell.execution_count = 1
            cell.metadata[METADATA_KEY] = {"exercise": exercise}
        put_cell_outputs(nb, report, texts)
        nb.metadata[METADATA_KEY] = {"report": report}
        return nb, resources

    def _grade_here(self, nb, student: str | None) -> dict:
        """Plain `nbgrader autograde`: grade the sanitised notebook with the engine, as the
        student's variant."""
        variant = CourseVariants(parent=self).variant(student or "")
        with tempfile.TemporaryDirectory(prefix="sdpa-autograde-") as tmp:
            path = Path(tmp) / f"{NOTEBOOK}.ipynb"
            nbformat.write(nb, str(path))
            return grade_path(path, variant=variant)
