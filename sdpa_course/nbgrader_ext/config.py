"""The nbgrader configuration every course of this kit uses, declared once.

`nbgrader_config.py` (at the repository root and in every course made by `sdpa-course init`)
only calls `configure(get_config())`.
"""

from __future__ import annotations

ASSIGNMENT = "sdpa"
NOTEBOOK = "attention"


def configure_release(c) -> None:
    """Settings for building the student release (generate_assignment)."""


def configure_grading(c) -> None:
    """Settings for autograde and feedback: the kit's engine in place of nbgrader's kernel."""


def configure(c) -> None:
    configure_release(c)
    configure_grading(c)
