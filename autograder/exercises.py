"""The three exercises as the grader knows them: names a submission defines, points, cells.

One name per exercise everywhere: `ex3` is the notebook section, the nbgrader grade_id
prefix, the pytest marker and the report key.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Exercise:
    key: str
    title: str
    max_score: float
    names: tuple[str, ...]  # what the submission must define (CONTRACT section 1)

    @property
    def graded_cell_id(self) -> str:
        return f"{self.key}_autograded"


EXERCISES: dict[str, Exercise] = {
    ex.key: ex
    for ex in (
        Exercise("ex1", "attention by hand", 3.0, ("ex1_scores", "ex1_weights", "ex1_output")),
        Exercise(
            "ex2",
            "scaled vs unscaled softmax",
            6.0,
            ("softmax", "p_unscaled", "p_scaled", "grad_unscaled", "grad_scaled"),
        ),
        Exercise("ex3", "causal scaled dot-product attention", 11.0, ("attention", "causal_mask")),
    )
}

MAX_SCORE = sum(ex.max_score for ex in EXERCISES.values())

# nbgrader grade_id of each exercise's autograded answer cell -> exercise key.
GRADED_CELL_IDS: dict[str, str] = {ex.graded_cell_id: ex.key for ex in EXERCISES.values()}

# Which exercise each required name belongs to.
NAME_TO_EXERCISE: dict[str, str] = {
    name: ex.key for ex in EXERCISES.values() for name in ex.names
}
