"""The variant family over 10,000 students: every student's numbers are as good as the lesson's.

Numbers only (the HMAC and the draws of `autograder.variants.numbers`, no grading), so that the
family's promises are held for many more students than a class: exercise 1 tells the lesson's
story (the query matches key 1 best, so the output is mostly v1) with values that matter to
the output and weights the notebook does not print; exercise 2 takes a head dimension people
use and says how many standard deviations its gap is; every catalogued wrong scale stays far
from the right weights; the mark scheme's comparison of the two slopes holds for every student.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import sdpa_ref
from autograder.compare import HAND, significant_figures
from autograder.diagnoses.ex1 import slip_models
from autograder.variants import Ex1Numbers, Ex2Numbers, numbers_key
from autograder.variants.numbers import HEAD_DIMENSIONS, LESSON_EX2, student_numbers
from sdpa_course.assignment import NUMBERS_CELL
from tests.variant_sample import SEED, in_notebook

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_SOURCE = REPO / "source" / "sdpa" / "attention.py"
IDS = [f"id{i:05d}" for i in range(10_000)]
KEY = numbers_key(SEED)


@pytest.fixture(scope="module")
def family() -> list[tuple[Ex1Numbers, Ex2Numbers]]:
    numbers = [student_numbers(KEY, "sdpa", student) for student in IDS]
    return [(Ex1Numbers(**{k: tuple(v) if k != "d_k" else v for k, v in n["ex1"].items()}),
             Ex2Numbers(**n["ex2"])) for n in numbers]


@pytest.fixture(scope="module")
def cells() -> dict[str, str]:
    import nbformat

    from sdpa_course.course.notebooks import source_notebook_path

    notebook = nbformat.read(source_notebook_path(REPO), as_version=4)
    return {cell.id: cell.source for cell in notebook.cells}


def _printed_numbers() -> set[str]:
    """Every number between 0 and 1 the notebook writes with three decimals or more (its
    prose, its comments, its self-checks): 0.6698, 0.731, 0.881, 0.9997, ..."""
    return set(re.findall(r"(?<![\d.])0\.\d{3,}(?![\d.])", NOTEBOOK_SOURCE.read_text()))


def _reads_as(value: float, printed: str) -> bool:
    """`value` written to the printed number's decimals (rounded or cut), or to three, is it."""
    decimals = len(printed) - 2
    target = float(printed)
    return any(abs(round(value, places) - round(target, places)) < 10 ** -(places + 3)
               or abs(math.trunc(value * 10 ** places) / 10 ** places - round(target, places))
               < 10 ** -(places + 3)
               for places in {decimals, 3})


def test_the_lessons_printed_numbers_are_found_in_the_notebook():
    assert {"0.6698", "0.731", "0.881", "0.9997", "0.3302"} <= _printed_numbers()


def test_no_value_vector_is_zero_and_the_values_differ_in_both_components(family):
    for (ex1, _), student in zip(family, IDS, strict=True):
        assert any(ex1.v1) and any(ex1.v2), student
        assert all(a != b for a, b in zip(ex1.v1, ex1.v2, strict=True)), student


def test_each_output_component_depends_on_the_weights(family):
    """out = w1 v1 + w2 v2 moves, in every component, by at least the change in w1."""
    for (ex1, _), student in zip(family, IDS, strict=True):
        weights = ex1.expected()["ex1_weights"]  # (2,)
        nudged = weights + np.array([0.01, -0.01])  # (2,)
        moved = np.abs(nudged @ ex1.values - weights @ ex1.values)  # (d_v,)
        assert np.all(moved >= 0.01 - 1e-12), student


def test_the_query_matches_key_1_best_so_the_output_is_mostly_v1(family):
    for (ex1, _), student in zip(family, IDS, strict=True):
        expected = ex1.expected()
        assert ex1.raw[0] > ex1.raw[1] and expected["ex1_weights"][0] > 0.5, student
        output = expected["ex1_output"]  # (2,)
        values = ex1.values  # (2, d_v)
        assert np.abs(output - values[0]).sum() < np.abs(output - values[1]).sum(), student


def test_no_scaled_weight_is_a_number_the_lesson_prints(family):
    printed = _printed_numbers()
    # the weights depend on the raw scores and d_k only: each pair checked once
    ex1_weights = {(tuple(ex1.raw), ex1.d_k): ex1.expected()["ex1_weights"]
                   for ex1 in {ex1 for ex1, _ in family}}
    ex2_weights = {ex2: ex2.expected()["p_scaled"] for ex2 in {ex2 for _, ex2 in family}}
    weights = [w for pair in ex1_weights.values() for w in pair]
    weights += [w for p in ex2_weights.values() for w in (p, 1 - p)]
    for weight in weights:
        assert not any(_reads_as(float(weight), x) for x in printed), weight


def test_exercise_2_takes_d_k_from_head_dimensions_people_use(family):
    d_ks = {ex2.d_k for _, ex2 in family}
    assert d_ks == set(HEAD_DIMENSIONS) == {16, 32, 64, 128}
    assert {ex2.gap for _, ex2 in family} == {6, 7, 8, 9}


def test_each_students_text_says_how_many_standard_deviations_their_gap_is(family, cells):
    """The notebook's *Your numbers* cell prints each student's gap in standard deviations of
    q.k (sqrt(d_k) of them), the lesson's argument told with their own numbers."""
    namespace = in_notebook(cells)  # the lesson's numbers: one standard deviation
    assert "the gap is 1 standard deviation of q.k" in namespace["_numbers_text"]("ex2")
    assert "sqrt(64) = 8" in namespace["_numbers_text"]("ex2")
    for ex2 in {ex2 for _, ex2 in family}:
        namespace["EX2"] = {"gap": ex2.gap, "d_k": ex2.d_k}
        text = namespace["_numbers_text"]("ex2")
        said = re.search(r"the gap is ([\d.]+) standard deviations? of q\.k", text)
        assert said, text
        assert float(said.group(1)) == pytest.approx(ex2.gap / math.sqrt(ex2.d_k), rel=5e-3)
        assert text.startswith(f"raw scores ({ex2.gap}, 0), d_k = {ex2.d_k}")
    assert NUMBERS_CELL in cells


def test_every_catalogued_wrong_scale_moves_the_weights_well_past_the_tolerance(family):
    for ex1 in {ex1 for ex1, _ in family}:
        right = ex1.expected()
        for code, model in slip_models(ex1):
            apart = max(np.abs(model[name] - right[name]).max() for name in model)
            assert apart >= 30 * HAND, (ex1, code)
    for ex2 in {ex2 for _, ex2 in family}:
        p_scaled = ex2.expected()["p_scaled"]
        for wrong in (1.0, 1 / ex2.d_k, math.sqrt(ex2.d_k), float(ex2.d_k)):
            p_wrong = float(sdpa_ref.softmax(ex2.raw * wrong)[0])
            assert abs(p_wrong - p_scaled) >= 30 * significant_figures(p_scaled), (ex2, wrong)


def _slope_ratio(ex2: Ex2Numbers) -> float:
    expected = ex2.expected()
    return expected["grad_scaled"] / expected["grad_unscaled"]


def test_the_mark_schemes_slope_comparison_holds_for_every_variant(family, cells):
    """2(c)'s mark scheme states how many times larger the scaled slope is: the lesson's own
    ratio, and a range that holds every student's (and is not much wider than theirs)."""
    scheme = cells["ex2_explain"]
    stated = re.search(r"between ([\d,]+) and ([\d,]+) times larger", scheme)
    assert stated, "the mark scheme states the range of the slopes' ratio"
    low, high = (int(x.replace(",", "")) for x in stated.groups())
    ratios = [_slope_ratio(ex2) for ex2 in {ex2 for _, ex2 in family}]
    assert low <= min(ratios) and max(ratios) <= high, (min(ratios), max(ratios))
    assert min(ratios) < 1.2 * low and high < 1.2 * max(ratios), (min(ratios), max(ratios))
    lesson = _slope_ratio(Ex2Numbers(**LESSON_EX2))
    assert f"{lesson:.0f} times larger" in scheme
    assert "hundreds of times" not in scheme
