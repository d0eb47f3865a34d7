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

`sdpa-course grade` grades in worker processes and hands the report in through
`resources["sdpa_course"]["report"]`; a plain `nbgrader autograde` has none, and the engine
is then called here.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

from autograder.exercises import exercise_key
from sdpa_course.assignment import METADATA_KEY, NOTEBOOK
from sdpa_course.engine_call import grade_path
from sdpa_course.errors import GradingFailed
from sdpa_course.reports.feedback_text import exercise_text


def is_autograded_cell(cell) -> bool:
    """A graded code cell that is not the student's own answer: the engine scores it."""
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


def cell_score(score: float, max_score: float, points: float) -> float:
    """The engine's score in the cell's points, clamped to [0, points]."""
    scaled = score if max_score == points else score * points / max_score if max_score else 0.0
    return round(min(max(float(scaled), 0.0), float(points)), 6)


def graded_outputs(exercise: str, result: dict, points: float) -> list:
    score = cell_score(result["score"], result["max_score"], points)
    text = exercise_text(exercise, result)
    if float(result["max_score"]) != float(points):
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
            report = self._grade_here(nb)
        exercises = report["exercises"]
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
            cell.outputs = graded_outputs(exercise, exercises[exercise], points)
            cell.execution_count = 1
        nb.metadata[METADATA_KEY] = {"report": report}
        return nb, resources

    def _grade_here(self, nb) -> dict:
        """Plain `nbgrader autograde`: grade the sanitised notebook with the engine."""
        with tempfile.TemporaryDirectory(prefix="sdpa-autograde-") as tmp:
            path = Path(tmp) / f"{NOTEBOOK}.ipynb"
            nbformat.write(nb, str(path))
            return grade_path(path)
