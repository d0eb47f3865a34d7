"""The numbers a notebook says it shows, read back from its sandbox as plain data.

The notebook's *Your numbers* cell keeps its label in `YOUR_VARIANT` and its numbers in `EX1`
and `EX2`. They are the student's claim, never what grading uses; they only let the report
say so when a notebook worked on numbers other than its owner's (a mistyped student id, a
classmate's notebook), and let the diagnosis tell that apart from a misconception. Every
value is hostile: anything that is not exactly numbers of the family's form reads as None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from autograder.sandbox import StudentError
from autograder.variants.variant import Ex1Numbers, Ex2Numbers

LABEL_NAME, EX1_NAME, EX2_NAME = "YOUR_VARIANT", "EX1", "EX2"
_LABEL = re.compile(r"default|[0-9a-f]{6}")
_SMALL = range(-9, 10)  # integers a family of exercise 1 could hold, with room to spare


@dataclass(frozen=True)
class Shown:
    label: str | None
    ex1: Ex1Numbers | None
    ex2: Ex2Numbers | None


def _int(value, allowed) -> int | None:
    return value if type(value) is int and value in allowed else None


def _vector(value, size) -> tuple[int, ...] | None:
    if not isinstance(value, (tuple, list)) or len(value) != size:
        return None
    numbers = tuple(_int(x, _SMALL) for x in value)
    return None if None in numbers else numbers


def parse_ex1(value) -> Ex1Numbers | None:
    if not isinstance(value, dict) or set(value) != {"q", "k1", "k2", "v1", "v2", "d_k"}:
        return None
    d_k = _int(value["d_k"], range(1, 17))
    if d_k is None:
        return None
    vectors = {name: _vector(value[name], d_k) for name in ("q", "k1", "k2")}
    vectors |= {name: _vector(value[name], 2) for name in ("v1", "v2")}
    return None if None in vectors.values() else Ex1Numbers(**vectors, d_k=d_k)


def parse_ex2(value) -> Ex2Numbers | None:
    if not isinstance(value, dict) or set(value) != {"gap", "d_k"}:
        return None
    gap, d_k = _int(value["gap"], range(1, 31)), _int(value["d_k"], range(1, 1025))
    return None if gap is None or d_k is None else Ex2Numbers(gap, d_k)


def _value(student, name):
    """A name's plain value, None when undefined or when the sandbox cannot answer."""
    try:
        return student.value(name) if student.has(name) else None
    except StudentError:
        return None


def shown_label(student) -> str | None:
    """The label of the numbers the notebook showed, when it says one plainly."""
    label = _value(student, LABEL_NAME)
    return label if isinstance(label, str) and _LABEL.fullmatch(label) else None


def read_shown(student) -> Shown:
    """What the submission's *Your numbers* cell left behind; None for anything unreadable."""
    return Shown(shown_label(student), parse_ex1(_value(student, EX1_NAME)),
                 parse_ex2(_value(student, EX2_NAME)))
