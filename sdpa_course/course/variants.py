"""`sdpa-course variant STUDENT`: a student's numbers, expected answers and answer key.

For the instructor: the numbers a student of the course works Exercises 1 and 2 with, the
answers the grader expects from them, and on request that student's answer key (the kit's
answer key, which works its answers out from the notebook's numbers, with the course's
numbers key and the student's id filled in: graded as that student, it earns every automatic
point). Exercise 3's hidden inputs are the student's own too; they are not printed.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbgrader.exchange.default.exchange import Exchange
from nbgrader.utils import compute_checksum

from autograder.terminal import one_line
from autograder.variants import Variant
from sdpa_course.assignment import NUMBERS_CELL
from sdpa_course.course.directory import Course
from sdpa_course.course.material import notebook_path
from sdpa_course.errors import KitError
from sdpa_course.nbgrader_ext.variants import COURSE_LINE, course_line, how_to_add_a_seed

STUDENT_ID_LINE = 'STUDENT_ID = ""'


def variant_sheet(variant: Variant) -> dict:
    """The student's numbers and expected answers, as plain data (CONTRACT section 4)."""
    ex1, ex2 = variant.public()["ex1"], variant.public()["ex2"]
    return {
        "student": variant.student,
        "variant": variant.label,
        "ex1": {"numbers": ex1, "expected": {name: [float(x) for x in value] for name, value
                                             in variant.ex1.expected().items()}},
        "ex2": {"numbers": ex2, "expected": variant.ex2.expected()},
        "ex3": "hidden inputs of the student's own, drawn from the course seed (not shown)",
    }


def slope_ratio(expected: dict) -> float:
    """grad_scaled / grad_unscaled: how many times larger the scaled slope is."""
    return expected["grad_scaled"] / expected["grad_unscaled"]


def sheet_text(sheet: dict, course: Course, seeded: bool) -> str:
    ex1, ex2 = sheet["ex1"], sheet["ex2"]
    vector = lambda values: "(" + ", ".join(f"{x:g}" for x in values) + ")"  # noqa: E731
    pair = lambda values: "(" + ", ".join(f"{x:.4f}" for x in values) + ")"  # noqa: E731
    numbers = ex1["numbers"]
    lines = [
        f"Student {one_line(sheet['student'])} of course {one_line(course.course_id)} "
        f"({one_line(course.root)}): "
        + (f"variant {sheet['variant']}" if seeded else "the lesson's numbers (no seed)"),
        "",
        "Exercise 1: " + ", ".join(f"{k} = {vector(numbers[k])}"
                                   for k in ("q", "k1", "k2", "v1", "v2"))
        + f", d_k = {numbers['d_k']}",
        *(f"  {name:<13} = {pair(value)}" for name, value in ex1["expected"].items()),
        f"Exercise 2: raw scores ({ex2['numbers']['gap']}, 0), d_k = {ex2['numbers']['d_k']}",
        *(f"  {name:<13} = {value:.5g}" for name, value in ex2["expected"].items()),
        # the mark scheme of 2(c) compares the two slopes: the student's own ratio
        f"  the scaled slope is {slope_ratio(ex2['expected']):.0f} times the unscaled one",
        f"Exercise 3: {sheet['ex3']}.",
    ]
    return "\n".join(lines)


def answer_key_for(course: Course, student: str) -> nbformat.NotebookNode:
    """The kit's answer key as `student` of this course would hand it in."""
    nb = nbformat.read(str(notebook_path("solutions")), as_version=4)
    line = course_line(course.variants.numbers_key(), course.course_id,
                       Exchange(config=course.config).root)
    for cell in nb.cells:
        nbgrader = cell.metadata.get("nbgrader", {})
        if nbgrader.get("grade_id") == NUMBERS_CELL:
            cell.source = COURSE_LINE.sub(lambda _: line, cell.source, count=1)
            nbgrader["checksum"] = compute_checksum(cell)
        elif cell.cell_type == "code" and cell.source.startswith(STUDENT_ID_LINE):
            cell.source = cell.source.replace(STUDENT_ID_LINE, f"STUDENT_ID = {student!r}", 1)
    return nb


def show_variant(course_dir: Path, student: str, *, as_json: bool = False,
                 answer_key: Path | None = None) -> str:
    """What `sdpa-course variant` prints; writes the student's answer key when asked."""
    if not student.strip():  # no id is the lesson's numbers: not what an instructor asks for
        raise KitError("a student id is needed, as in submitted/<student>/ (an empty id "
                       "would show the lesson's own numbers)")
    course = Course.open(course_dir)
    variants = course.variants
    sheet = variant_sheet(variants.variant(student, course.assignment))
    if answer_key is not None:
        if not answer_key.parent.is_dir():  # a mistyped path: no folders made for it
            raise KitError(f"cannot write the answer key to {answer_key}: its folder "
                           f"{answer_key.parent} does not exist")
        try:
            nbformat.write(answer_key_for(course, student), str(answer_key))
        except OSError as err:
            raise KitError(f"cannot write the answer key to {answer_key}: "
                           f"{err.strerror or err}") from err
        sheet["answer_key"] = str(answer_key)
    if as_json:
        return json.dumps(sheet, indent=2)
    text = sheet_text(sheet, course, variants.has_seed)
    if answer_key is not None:
        text += f"\nAnswer key for {one_line(student)}: {one_line(answer_key)}"
    if not variants.has_seed:
        text += f"\nNote: {how_to_add_a_seed()}"
    return text
