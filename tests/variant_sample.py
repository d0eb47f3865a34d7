"""A course seed of the tests' own and a sample of its students' variants.

`QUICK` (d_k = 2 in exercise 1, the one that separates the scale mistakes; gap 9 in exercise
2) beside the default variant, and `SLOW` (three more: d_k = 4 and gap 7, gaps 8 and 7, marked
`slow`: `make test-slow`, which `.ci/run` runs). `in_notebook` gives the namespace a
notebook's setup and *Your numbers* cells build for a variant, as a released notebook of this
course builds it for that student. `quick_first` splits a long sweep of students the same way:
its first few in `make test`, the rest marked `slow`.
"""

from __future__ import annotations

import contextlib
import io

import pytest

from autograder.variants import DEFAULT, Variant, numbers_key, variant_for
from sdpa_course.assignment import ASSIGNMENT, NUMBERS_CELL
from sdpa_course.nbgrader_ext.variants import COURSE_LINE, course_line

SEED = "5eed" * 16
QUICK = ("max",)
SLOW = ("ada", "ned", "ora")


def quick_first(values, quick: int, ids=None) -> list:
    """`values` as pytest parameters: the first `quick` run in `make test`, the others only
    in `make test-slow` (which `.ci/run` runs too), so a sweep over many students keeps the
    quick suite quick and still runs whole in CI."""
    ids = list(ids) if ids is not None else [None] * len(values)
    return [pytest.param(value, id=name, marks=[pytest.mark.slow] if i >= quick else [])
            for i, (value, name) in enumerate(zip(values, ids, strict=True))]


def variant(student: str) -> Variant:
    return variant_for(SEED, ASSIGNMENT, student)


def released_numbers_cell(source: str, key: str = numbers_key(SEED)) -> str:
    """The *Your numbers* cell as `sdpa-course release` writes it for this seed."""
    return COURSE_LINE.sub(lambda _: course_line(key, "tests", ""), source, count=1)


def in_notebook(cells: dict[str, str], variant: Variant = DEFAULT) -> dict:
    """The namespace after the notebook's setup and *Your numbers* cells, for `variant`'s
    student (the student's id typed in its cell), their printing swallowed."""
    namespace: dict = {}
    source = cells[NUMBERS_CELL]
    if not variant.is_default:
        source = released_numbers_cell(source)
        namespace["STUDENT_ID"] = variant.student
    with contextlib.redirect_stdout(io.StringIO()):
        exec(cells["setup"], namespace)
        exec(source, namespace)
    assert namespace["YOUR_VARIANT"] == variant.label, "the notebook disagrees with the grader"
    return namespace
