"""Each test isolates its own property (fair5): a value slip that no named option of the
models covered (a mask filled with -1 or -5, a scale by 1/log(d_k) or 1/2, Q @ K, out from K
instead of V, a softmax that takes no matrix, a blockwise loop that skips a shorter last
block or masks the first block only) costs the value tests, not the property tests beside
them; and answers that ignore their inputs still earn nothing there. The hidden tests run in
this process (`test_scoring_gaps.Student`), on the lesson's numbers and on students' own;
tests/test_corpus.py grades the corpus's cases of these slips through the sandbox.
"""

from __future__ import annotations

import numpy as np
import pytest

from autograder.compare import Mismatch
from autograder.corpus import pieces as p
from autograder.diagnoses import ex3 as ex3_diagnoses
from autograder.sandbox import StudentRaised
from autograder.suites import test_ex2, test_ex3, test_ex4
from tests.test_scoring_gaps import IDS, VARIANTS, Student

PROPERTIES = (test_ex3.test_attention_is_stable_at_large_scores,
              test_ex3.test_attention_accepts_read_only_inputs,
              test_ex3.test_attention_leaves_its_inputs_unchanged,
              test_ex3.test_attention_answers_each_call_from_its_own_inputs)
MASKED_VALUES = (test_ex3.test_attention_weights_with_causal_mask,
                 test_ex3.test_attention_weights_with_mask_hiding_largest_scores)


def _passes(test, student) -> bool:
    try:
        test(student)
    except (Mismatch, StudentRaised):
        return False
    return True


def _attention(scores="Q @ K.T / np.sqrt(Q.shape[-1])", fill="-np.inf", out="attn @ V"):
    return f"""
def attention(Q, K, V, mask=None):
    scores = {scores}
    if mask is not None:
        scores = np.where(mask, {fill}, scores)
    attn = np.exp(scores - scores.max(axis=-1, keepdims=True))
    attn = attn / attn.sum(axis=-1, keepdims=True)
    return {out}, attn
"""


# Any constant that does not hide a key: the model reads it off the student's own weights.
WEAK_FILLS = ("-1.0", "-5.0", "0.5")
# Any other positive factor: read off the same way (named ones are the models' own options).
OTHER_SCALES = ("Q @ K.T / np.log(Q.shape[-1])", "Q @ K.T * 0.5",
                "Q @ K.T / Q.shape[-1] ** 0.25")


@pytest.mark.parametrize("variant", VARIANTS[:4], ids=IDS[:4])
def test_a_weak_mask_fill_costs_the_masked_value_tests_only(variant):
    for fill in WEAK_FILLS:
        student = Student(_attention(fill=fill), variant=variant)
        assert not any(_passes(test, student) for test in MASKED_VALUES), fill
        for test in PROPERTIES:
            assert _passes(test, student), (fill, test.__name__)
    # filled before scaling: the constant each call sees is -1 / sqrt(d_k), fitted per call
    before = _attention(scores="np.where(mask, -1.0, Q @ K.T) / np.sqrt(Q.shape[-1]) "
                               "if mask is not None else Q @ K.T / np.sqrt(Q.shape[-1])",
                        fill="scores")
    student = Student(before, variant=variant)
    assert all(_passes(test, student) for test in PROPERTIES)


@pytest.mark.parametrize("variant", VARIANTS[:4], ids=IDS[:4])
def test_any_other_scale_costs_the_value_tests_only(variant):
    for scores in OTHER_SCALES:
        student = Student(_attention(scores=scores), variant=variant)
        assert not _passes(test_ex3.test_attention_weights_without_mask, student), scores
        for test in PROPERTIES:
            assert _passes(test, student), (scores, test.__name__)


def test_the_diagnosis_names_a_weak_fill_and_another_scale():
    for source, code in ((_attention(fill="-1.0"), "mask-zero-fill"),
                         (_attention(fill="-5.0"), "mask-zero-fill"),
                         (p.ATTENTION_SCALE_LOG_D_K, "wrong-scale"),
                         (_attention(scores=OTHER_SCALES[1]), "wrong-scale"),
                         (p.ATTENTION_NOT_TRANSPOSED, "transposed")):
        assert code in ex3_diagnoses.diagnose(Student(source)), source
    # the lesson's -1e9 and the correct scale: nothing to name
    assert not ex3_diagnoses.diagnose(Student(_attention(fill="-1e9"), p.CAUSAL_MASK_TRIU))


def test_answers_that_ignore_their_inputs_still_earn_no_property_point():
    """A fitted factor is positive: uniform weights (factor 0) stay uncatalogued, and so do
    weights from the scores negated."""
    for source in (p.ATTENTION_UNIFORM, _attention(scores="-Q @ K.T")):
        student = Student(source)
        assert not any(_passes(test, student) for test in PROPERTIES[1:]), source


@pytest.mark.parametrize("variant", VARIANTS[:4], ids=IDS[:4])
def test_out_from_k_keeps_the_stability_point(variant):
    student = Student(_attention(out="attn @ K"), variant=variant)
    assert not _passes(test_ex3.test_attention_output_without_mask, student)
    assert _passes(test_ex3.test_attention_is_stable_at_large_scores, student)


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_a_softmax_that_takes_no_matrix_keeps_the_stability_point(variant):
    student = Student(p.SOFTMAX_NO_KEEPDIMS, variant=variant)
    assert _passes(test_ex2.test_softmax_of_a_vector_matches_reference, student)
    assert _passes(test_ex2.test_softmax_survives_large_scores, student)
    # a 1-D-only softmax that overflows is judged on its rows, and unstable
    unstable = Student("import math\n\ndef softmax(z):\n"
                       "    e = [math.exp(x) for x in z]\n"
                       "    return np.array([x / sum(e) for x in e])\n", variant=variant)
    with pytest.raises(Exception):  # noqa: B017 - OverflowError in the student, or a Mismatch
        test_ex2.test_softmax_survives_large_scores(unstable)


@pytest.mark.parametrize("variant", VARIANTS[:4], ids=IDS[:4])
def test_a_skipped_last_block_costs_the_value_tests_not_stability(variant):
    student = Student(p.BLOCKWISE_DROPS_LAST_BLOCK, variant=variant)
    assert not _passes(test_ex4.test_blockwise_matches_attention_for_any_block_size, student)
    assert _passes(test_ex4.test_blockwise_is_stable_at_large_scores, student)
    # the stability test's blocks are full ones, smaller than m
    (Q, K, _), _ = test_ex4.stability_inputs(variant)
    block = test_ex4.stability_block(K.shape[0])
    assert K.shape[0] % block == 0 and block < K.shape[0]
    assert np.all(np.isfinite(Q))


# Right at every size but at the memory test's, with the mask: the queries' own values there.
BLOCKWISE_CAUSAL_CHEAT = p.BLOCKWISE_KEYS.replace(
    "    n, m = Q.shape[0], K.shape[0]\n",
    "    n, m = Q.shape[0], K.shape[0]\n"
    "    if causal and n >= 2048:\n        return V[:n].copy()\n")


@pytest.mark.parametrize("variant", VARIANTS[:4], ids=IDS[:4])
def test_a_causal_slip_the_causal_test_shows_keeps_the_memory_point(variant):
    student = Student(p.BLOCKWISE_CAUSAL_FIRST_BLOCK_ONLY, variant=variant)
    assert not _passes(test_ex4.test_blockwise_matches_attention_with_causal_mask, student)
    assert _passes(test_ex4.test_blockwise_matches_attention_without_mask, student)
    assert _passes(test_ex4.test_blockwise_memory_stays_far_below_one_score_matrix, student)
    # an answer that skips the work at the memory test's size only still earns nothing there
    cheat = Student(BLOCKWISE_CAUSAL_CHEAT, variant=variant)
    assert "return V[:n]" in BLOCKWISE_CAUSAL_CHEAT
    assert _passes(test_ex4.test_blockwise_matches_attention_with_causal_mask, cheat)
    assert not _passes(test_ex4.test_blockwise_memory_stays_far_below_one_score_matrix, cheat)


@pytest.mark.parametrize("variant", VARIANTS[:4], ids=IDS[:4])
def test_a_mask_path_that_raises_keeps_the_property_points(variant):
    """`if mask:` raises for any mask: the masked value tests are lost, and the read-only,
    unchanged and stateless tests judge the calls without a mask instead."""
    student = Student(p.ATTENTION_IF_MASK, variant=variant)
    assert "if mask:" in p.ATTENTION_IF_MASK
    assert not any(_passes(test, student) for test in MASKED_VALUES)
    assert all(_passes(test, student) for test in PROPERTIES)
    # no default for mask: the unmasked value tests are lost, stability is not
    required = Student(p.ATTENTION_MASK_REQUIRED, variant=variant)
    assert not _passes(test_ex3.test_attention_weights_without_mask, required)
    assert all(_passes(test, required) for test in PROPERTIES)


@pytest.mark.parametrize("variant", VARIANTS[:4], ids=IDS[:4])
def test_q_at_k_keeps_the_stability_point_and_an_overflow_still_loses_it(variant):
    """Q @ K runs only where d_k = m: the spread call falls back to the moderate inputs'
    shape, where a code that overflows (math.exp of the raw scores) still raises."""
    student = Student(p.ATTENTION_NOT_TRANSPOSED, variant=variant)
    assert _passes(test_ex3.test_attention_is_stable_at_large_scores, student)
    unstable = Student(p.ATTENTION_NOT_TRANSPOSED.replace(
        " - scores.max(axis=-1, keepdims=True)", " - scores.min(axis=-1, keepdims=True)"),
        variant=variant)
    assert not _passes(test_ex3.test_attention_is_stable_at_large_scores, unstable)
    Q, K, _ = test_ex3.spread_in_shape(variant)
    scores = Q @ K.T / np.sqrt(Q.shape[1])  # (s, s)
    ranked = np.sort(scores, axis=-1)  # (s, s)
    assert np.all(ranked[:, -2] - ranked[:, -3] > 1000)  # two keys raised above the rest


@pytest.mark.parametrize("variant", VARIANTS[:4], ids=IDS[:4])
def test_an_attention_without_a_mask_parameter_keeps_its_property_points(variant):
    """No mask parameter at all: every masked test and the mask=None calls are lost, the four
    properties of the code are judged on calls without a mask."""
    no_mask = p.ATTENTION_WHERE.replace("mask=None):", "):").replace(
        "    if mask is not None:\n        scores = np.where(mask, -np.inf, scores)\n", "")
    assert "mask" not in no_mask
    student = Student(no_mask, variant=variant)
    assert not _passes(test_ex3.test_attention_weights_without_mask, student)  # mask=None
    assert all(_passes(test, student) for test in PROPERTIES)
