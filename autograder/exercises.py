"""The three exercises as the grader knows them: names a submission defines, points, cells.

One name per exercise everywhere: `ex3` is the notebook section, the nbgrader grade_id
prefix, the pytest marker and the report key; "Exercise 3" and its title, as the notebook
heads its section, are what a student reads (release stubs, feedback).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_GRADE_ID_PREFIX = re.compile(r"^(ex\d+)_")


def exercise_key(grade_id: str | None) -> str | None:
    """`ex3_attention` -> `ex3`: the grade_id prefix names the exercise; None if none."""
    match = _GRADE_ID_PREFIX.match(grade_id or "")
    return match.group(1) if match else None


def exercise_label(key: str) -> str:
    """`ex3` -> `Exercise 3`."""
    return f"Exercise {key.removeprefix('ex')}"


@dataclass(frozen=True)
class Exercise:
    key: str
    title: str
    max_score: float
    names: tuple[str, ...]  # what the submission must define (CONTRACT section 1)

    @property
    def graded_cell_id(self) -> str:
        return f"{self.key}_autograded"

    @property
    def heading(self) -> str:
        """`Exercise 3: causal scaled dot-product attention`, as the notebook's section."""
        return f"{exercise_label(self.key)}: {self.title}"


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
