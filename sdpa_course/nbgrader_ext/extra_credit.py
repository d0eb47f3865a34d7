"""`SaveExtraCredit`: an optional exercise's score recorded as nbgrader extra credit.

nbgrader fails a whole submission when an autograded cell scores more than its points, and
counts every point of a graded cell in the assignment's maximum. So an extra-credit
exercise has a graded cell worth 0 points (its autograded score is 0, and the maximum is
unchanged), and this step, which runs right after `SaveAutoGrades`, sets that cell's
`Grade.extra_credit` to the engine's score for the exercise. nbgrader adds a grade's extra
credit to its score, so the gradebook, formgrader, the feedback and `nbgrader export` all
count it, on top of the score and never against it.

The kit owns this cell's extra credit: a regrade sets it again from the engine's report
(an instructor's mark for the exercise belongs in its manual score instead).
"""

from __future__ import annotations

from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor

from autograder.exercises import EXERCISES
from sdpa_course.assignment import METADATA_KEY
from sdpa_course.errors import GradingFailed


def extra_credit_scores(report: dict) -> dict[str, float]:
    """grade_id of each extra-credit exercise's graded cell -> the points it earned."""
    scores = {}
    for key, exercise in EXERCISES.items():
        if exercise.extra_credit:
            result = (report.get("exercises") or {}).get(key)
            if result is None:
                raise GradingFailed(f"the engine's report has no {key}, an extra-credit "
                                    "exercise of this assignment")
            scores[exercise.graded_cell_id] = min(max(float(result["score"]), 0.0),
                                                  exercise.max_score)
    return scores


class SaveExtraCredit(NbGraderPreprocessor):
    """Set `Grade.extra_credit` of each extra-credit exercise's cell from the engine's report
    (which `EngineGrades` left in the notebook's metadata)."""

    def preprocess(self, nb, resources):
        report = nb.metadata.get(METADATA_KEY, {}).get("report")
        if report is None:
            raise GradingFailed("no engine report in the notebook: SaveExtraCredit must run "
                                "after EngineGrades")
        scores = extra_credit_scores(report)
        present = {cell.metadata.get("nbgrader", {}).get("grade_id") for cell in nb.cells}
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gradebook:
            for grade_id, points in scores.items():
                if grade_id not in present:
                    continue  # an older release without the exercise: nothing to record
                grade = gradebook.find_grade(grade_id, info["notebook"], info["assignment"],
                                             info["student"])
                grade.extra_credit = points
            gradebook.db.commit()
        return nb, resources
