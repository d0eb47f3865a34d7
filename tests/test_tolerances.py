"""The tolerances' margins, measured on the corpus so that they cannot silently vanish.

For every hidden input that a test compares with the reference, each correct corpus
submission (float32, -1e9 and finfo.min fills, a 1e-8 epsilon, plain loops...) must be far
inside the tolerance, and each mistake far outside it on every such test it is pinned to fail.
`python tests/test_tolerances.py` prints the figures quoted in `autograder/compare.py`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import sdpa_ref
from autograder.compare import FLOAT_RESULTS, HAND, LARGE_SCORES, significant_figures
from autograder.corpus import cases
from autograder.suites import test_ex2, test_ex3
from tests.corpus_exec import call_quietly, run_case

# Both sides at least this far from the line: a correct answer uses at most 1/MARGIN of the
# tolerance, a mistake at least MARGIN times it.
MARGIN = 30
GRADED = [case for case in cases() if case.kind in ("correct", "mistake")]


def _ratio(got, expected, tolerance) -> float:
    """The error as a multiple of the tolerance; inf for no answer or the wrong shape."""
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return math.inf
    expected = np.asarray(expected, dtype=float)
    return tolerance.ratio(got, expected) if got.shape == expected.shape else math.inf


def _attention_ratio(namespace, test_name) -> float:
    Q, K, V, mask = test_ex3.REFERENCE_INPUTS[test_name]
    out, attn = sdpa_ref.attention(Q, K, V, mask)
    part, expected = (1, attn) if "weights" in test_name else (0, out)
    kwargs = {} if mask is None else {"mask": mask}
    result = call_quietly(namespace.get("attention"), Q.copy(), K.copy(), V.copy(), **kwargs)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        return math.inf
    return _ratio(result[part], expected, FLOAT_RESULTS)


def _softmax_ratio(namespace, test_name) -> float:
    ratios = [_ratio(call_quietly(namespace.get("softmax"), z.copy()), sdpa_ref.softmax(z),
                     FLOAT_RESULTS) for z in test_ex2.REFERENCE_INPUTS[test_name]]
    return max(ratios)


def _stability_ratio(namespace) -> float:
    moderate, large = test_ex3.stability_inputs()
    first = call_quietly(namespace.get("attention"), *(a.copy() for a in moderate))
    second = call_quietly(namespace.get("attention"), *(a.copy() for a in large))
    if first is None or second is None:
        return math.inf
    return max(_ratio(b, a, LARGE_SCORES) for a, b in zip(first, second, strict=True))


def measure() -> dict[str, dict[str, float]]:
    """Case -> hidden test -> its error as a multiple of the test's tolerance."""
    found = {}
    for case in GRADED:
        namespace = run_case(case)
        errors = {name: _attention_ratio(namespace, name) for name in test_ex3.REFERENCE_INPUTS}
        errors |= {name: _softmax_ratio(namespace, name) for name in test_ex2.REFERENCE_INPUTS}
        errors["attention_is_stable_at_large_scores"] = _stability_ratio(namespace)
        found[case.name] = errors
    return found


@pytest.fixture(scope="module")
def errors():
    return measure()


def _worst_correct(errors):
    return max((ratio, case, test) for case, tests in errors.items()
               for test, ratio in tests.items() if _case(case).kind == "correct")


def _closest_mistake(errors):
    """The smallest error of a mistake on a test it is pinned to fail (and that is measured)."""
    return min((ratio, case, test) for case, tests in errors.items()
               for test, ratio in tests.items()
               if _case(case).kind == "mistake" and test in _pinned(_case(case)))


def _case(name):
    return next(case for case in GRADED if case.name == name)


def _pinned(case) -> set[str]:
    """The measured tests the case fails for its values (a masked array's values are right:
    it fails for its type, unsupported-type)."""
    if "unsupported-type" in case.diagnoses.get("ex3", ()):
        return set()
    return {test for tests in (case.fails or {}).values() for test in tests}


def test_every_correct_submission_is_far_inside_the_tolerance(errors):
    ratio, case, test = _worst_correct(errors)
    assert ratio <= 1 / MARGIN, f"{case} uses {ratio:.3g} of the tolerance on {test}"


def test_every_mistake_is_far_outside_the_tolerance_where_it_must_fail(errors):
    ratio, case, test = _closest_mistake(errors)
    assert ratio >= MARGIN, f"{case} is only {ratio:.3g} tolerances off on {test}"


def test_hand_numbers_rounded_or_cut_pass_and_the_closest_slips_fail():
    """Exercise 1 within HAND (one unit of the third decimal), exercise 2 within one unit of
    the third significant figure; a forward difference with step 1e-2 is outside it."""
    weight = sdpa_ref.softmax(np.array([1.0, 0.0]) / np.sqrt(2))[0]  # 0.66976
    for written in (0.669, 0.670):
        assert abs(written - weight) <= HAND
    for scale in (1.0, 1 / 2, np.sqrt(2), 2.0):  # the slips exercise 1's diagnosis knows
        slipped = sdpa_ref.softmax(np.array([1.0, 0.0]) * scale)[0]
        assert abs(slipped - weight) > MARGIN * HAND
    grad = sdpa_ref.softmax_jacobian(np.array([8.0, 0.0]))[1, 1]  # 3.352e-4
    unit = significant_figures(grad)
    assert abs(3.35e-4 - grad) <= unit
    forward = (1 / (1 + np.exp(8 - 1e-2)) - 1 / (1 + np.exp(8))) / 1e-2  # 3.369e-4
    assert abs(forward - grad) > unit


if __name__ == "__main__":
    measured = measure()
    stable = "attention_is_stable_at_large_scores"
    for label, keep in (("FLOAT_RESULTS", lambda test: test != stable),
                        ("LARGE_SCORES", lambda test: test == stable)):
        part = {case: {t: r for t, r in tests.items() if keep(t)}
                for case, tests in measured.items()}
        print(f"{label}: worst correct uses %.3g of the tolerance (%s / %s)" % _worst_correct(part))
        print(f"{label}: closest mistake is %.3g tolerances off (%s / %s)" % _closest_mistake(part))
