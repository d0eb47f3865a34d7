"""Wrong answers that once earned points (attack2): each now loses the test it used to pass,
on the lesson's numbers and inputs and on students' own, while the right answers in every
style the corpus has keep theirs. The hidden tests and diagnoses run in this process on the
corpus's pieces; tests/test_corpus.py grades the same answers through the sandbox.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from autograder.compare import Mismatch
from autograder.corpus import pieces as p
from autograder.diagnoses import ex2 as ex2_diagnoses
from autograder.sandbox import MemoryUse
from autograder.suites import test_ex1, test_ex2, test_ex3, test_ex4
from autograder.variants import DEFAULT, variant_for
from tests.corpus_exec import InProcessStudent
from tests.variant_sample import SEED, quick_first

VARIANTS = [DEFAULT, *(variant_for(SEED, "sdpa", f"gap{i}") for i in range(12))]
IDS = ["default", *(f"gap{i}" for i in range(12))]
# The dearer sweeps (about 2 s a student): the lesson's numbers and two students' in
# `make test`, the others in `make test-slow`.
SWEPT = quick_first(VARIANTS, 3, ids=IDS)


class Student(InProcessStudent):
    """The kit's own pieces run in this process, answering as the sandbox would."""

    def __init__(self, *parts, variant=DEFAULT):
        super().__init__({"np": np}, variant)
        for part in parts:
            exec(part, self.namespace)

    def call_with_inputs(self, name, *args, **kwargs):
        """The answer, and the arguments as the call left them."""
        return self.call(name, *args, **kwargs), args, kwargs

    def call_measuring_memory(self, name, *args, **kwargs):
        """The answer, with the peak tracemalloc saw in this process, as the worker measures
        it (exercise 4's keys-in-blocks probe compares two peaks); nothing from outside."""
        was_tracing = tracemalloc.is_tracing()
        if not was_tracing:
            tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            result = self.call(name, *args, **kwargs)
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            if not was_tracing:
                tracemalloc.stop()
        return result, MemoryUse(traced=max(peak, 0), resident=0)


def _passes(test, student) -> bool:
    try:
        test(student)
    except Mismatch:
        return False
    return True


# -- exercise 1: only weights that are weights carry the output forward ------------------------

def test_all_zeros_earn_no_output_point_while_real_weights_still_carry_forward():
    zeros = Student(p.EX1_ZEROS)
    assert not _passes(test_ex1.test_output, zeros)  # (0, 0) is (0, 0)'s weighted sum: no
    # a wrong but valid pair of weights (scores unscaled) carries its weighted sum forward
    assert _passes(test_ex1.test_output, Student(p.ex1_no_scaling(DEFAULT.ex1)))
    # exp(s_i) never normalised: the weights' point is lost, the output's step is right
    assert _passes(test_ex1.test_output, Student(p.ex1_not_normalized(DEFAULT.ex1)))
    for weights in ((0.5, 0.5), (1.0, 0.0), (0.669, 0.330)):  # a distribution, cut or rounded
        output = tuple(np.asarray(weights) @ DEFAULT.ex1.values)
        student = Student(f"ex1_scores = (9, 9)\nex1_weights = {weights}\n"
                          f"ex1_output = {output}\n")
        assert _passes(test_ex1.test_output, student), weights
    for weights in ((0.0, 0.0), (0.7, 0.7), (1.5, -0.5), (2.0, 0.0)):  # no distribution
        output = tuple(np.asarray(weights) @ DEFAULT.ex1.values)
        student = Student(f"ex1_scores = (9, 9)\nex1_weights = {weights}\n"
                          f"ex1_output = {output}\n")
        assert not _passes(test_ex1.test_output, student), weights


# -- exercise 2: the stability point needs a softmax, and a wrong one is no scaling mistake -----

RIGHT_SOFTMAXES = (p.SOFTMAX_STABLE, p.SOFTMAX_LOOPS, p.SOFTMAX_FLOAT32, p.SOFTMAX_EPSILON)
# wrong in the normalisation only, which the two tests before it grade: stable all the same
STABLE_BUT_WRONG = (p.SOFTMAX_AXIS_0, p.SOFTMAX_NOT_NORMALIZED)


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_only_a_softmax_earns_the_stability_point(variant):
    for softmax in RIGHT_SOFTMAXES + STABLE_BUT_WRONG:
        assert _passes(test_ex2.test_softmax_survives_large_scores,
                       Student(softmax, variant=variant)), softmax
    for softmax in (p.SOFTMAX_ONES, p.SOFTMAX_NO_EXP, p.SOFTMAX_UNSTABLE):
        assert not _passes(test_ex2.test_softmax_survives_large_scores,
                           Student(softmax, variant=variant)), softmax


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_numbers_from_a_wrong_softmax_are_not_called_a_scaling_mistake(variant):
    numbers = p.ex2_computed(variant.ex2)  # the (b) numbers computed with the softmax
    for softmax in (p.SOFTMAX_ONES, p.SOFTMAX_NO_EXP, p.SOFTMAX_NOT_NORMALIZED):
        codes = ex2_diagnoses.diagnose(Student(softmax, numbers, variant=variant))
        assert not codes & {"no-scaling", "wrong-scale", "wrong-key"}, (softmax, codes)
    ones = ex2_diagnoses.diagnose(Student(p.SOFTMAX_ONES, numbers, variant=variant))
    assert "not-normalized" in ones
    # a right softmax with a real scaling slip is still named
    for slip, code in ((p.ex2_no_scaling, "no-scaling"), (p.ex2_wrong_scale, "wrong-scale")):
        codes = ex2_diagnoses.diagnose(Student(p.SOFTMAX_STABLE, slip(variant.ex2),
                                               variant=variant))
        assert code in codes, (slip, codes)


# Shifts that leave the softmax unchanged but are not the row's maximum (attack3): exact while
# a row's scores are close, even all 800 higher; they overflow once the scores spread.
WRONG_SHIFTS = (p.SOFTMAX_SUBTRACT_MIN, p.SOFTMAX_SUBTRACT_MEAN, p.SOFTMAX_SUBTRACT_FIRST)
SOFTMAX_GLOBAL_MAX = """
def softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max())   # the whole array's maximum: exact when rows sit close together
    return e / e.sum(axis=-1, keepdims=True)
"""


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_a_softmax_shifted_by_anything_but_the_maximum_is_unstable(variant):
    survives = test_ex2.test_softmax_survives_large_scores
    for softmax in WRONG_SHIFTS:
        assert not _passes(survives, Student(softmax, variant=variant)), softmax
        codes = ex2_diagnoses.diagnose(Student(softmax, p.ex2_computed(variant.ex2),
                                               variant=variant))
        assert "unstable-softmax" in codes, (softmax, codes)
    wide = test_ex2.wide_scores(variant)  # (rows, columns)
    spread = wide.max(axis=-1, keepdims=True) - wide  # (rows, columns)
    assert np.all(np.sort(spread, axis=-1)[:, 1] > 1500) and np.all(spread[:, 0] > 1500)
    for softmax in (*RIGHT_SOFTMAXES, SOFTMAX_GLOBAL_MAX):
        assert _passes(survives, Student(softmax, variant=variant)), softmax
        codes = ex2_diagnoses.diagnose(Student(softmax, p.ex2_computed(variant.ex2),
                                               variant=variant))
        assert "unstable-softmax" not in codes, (softmax, codes)


def test_the_spread_inputs_add_to_the_old_ones_without_redrawing_them():
    base = test_ex2.hidden_inputs(DEFAULT)["large_base"]
    assert np.array_equal(base, np.random.default_rng(203).normal(size=(2, 5)))
    assert np.count_nonzero(test_ex2.wide_scores(DEFAULT) - base) == base.shape[0]
    (Q, K, V), _ = test_ex3.hidden_inputs(DEFAULT)["stability"]
    spread_q, spread_k, spread_v = test_ex3.spread_inputs(DEFAULT)
    assert np.array_equal(spread_q[:, :-1], Q) and np.array_equal(spread_v, V)
    (Q, K, V), _ = test_ex4.stability_inputs(DEFAULT)
    spread_q, spread_k, _ = test_ex4.spread_inputs(DEFAULT)
    assert np.array_equal(spread_q[:, :-1], Q[:, :-1]) and spread_k.shape == K.shape


# -- exercise 3: the property tests hold for what attention or a catalogued mistake computes ---

PROPERTY_TESTS = (test_ex3.test_attention_is_stable_at_large_scores,
                  test_ex3.test_attention_accepts_read_only_inputs,
                  test_ex3.test_attention_leaves_its_inputs_unchanged,
                  test_ex3.test_attention_answers_each_call_from_its_own_inputs)
RIGHT_ATTENTIONS = (p.ATTENTION_LESSON, p.ATTENTION_WHERE, p.ATTENTION_LOOPS,
                    p.ATTENTION_FLOAT32, p.ATTENTION_FINFO_MIN)
# value mistakes (the value tests charge them): every property test holds
VALUE_MISTAKES = (p.ATTENTION_NO_SCALING, p.ATTENTION_SCALE_D_K, p.ATTENTION_SCALE_D_V,
                  p.ATTENTION_SOFTMAX_AXIS, p.ATTENTION_NOT_NORMALIZED,
                  p.ATTENTION_MASK_IGNORED, p.ATTENTION_MASK_INVERTED,
                  p.ATTENTION_MASK_AFTER_SOFTMAX, p.ATTENTION_MASK_ZERO_FILL,
                  p.ATTENTION_MASK_NONE_BROKEN, p.ATTENTION_TRANSPOSED,
                  p.ATTENTION_RETURNS_SWAPPED, p.ATTENTION_WRONG_SHAPE,
                  p.ATTENTION_ATTN_TRANSPOSED, p.ATTENTION_NO_SCALING_ZERO_FILL,
                  p.ATTENTION_FLOAT32_NO_SCALING)


def _attention_student(attention, variant):
    """`attention` with the softmax it calls, if it calls one (the float32 ones their own)."""
    softmax = p.SOFTMAX_FLOAT32 if "float32" in attention else p.SOFTMAX_STABLE
    return Student(softmax, attention, variant=variant)


@pytest.mark.parametrize("variant", SWEPT)
def test_attention_that_ignores_its_inputs_earns_no_property_point(variant):
    for test in PROPERTY_TESTS:
        assert not _passes(test, Student(p.ATTENTION_UNIFORM, variant=variant)), test
        for attention in RIGHT_ATTENTIONS + VALUE_MISTAKES:
            assert _passes(test, _attention_student(attention, variant)), (test, attention)
    stable = test_ex3.test_attention_is_stable_at_large_scores
    assert not _passes(stable, Student(p.ATTENTION_SUBTRACT_MIN, variant=variant))
    for test in PROPERTY_TESTS[1:]:  # its answers are right where its scores sit close
        assert _passes(test, Student(p.ATTENTION_SUBTRACT_MIN, variant=variant)), test


# -- exercise 3(c): a check off by one at an edge loses its point, for every student -----------

@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_checks_off_by_one_at_an_edge_lose_their_point(variant):
    rows = test_ex3.test_rows_sum_to_one_passes_attention_and_fails_broken_rows
    future = test_ex3.test_future_is_zero_passes_causal_attention_and_fails_any_leak
    skip_first = p.ROWS_SUM_SKIP_LAST.replace("range(len(attn) - 1)", "range(1, len(attn))")
    future_short = p.FUTURE_LOOPS.replace("range(t + 1, T)", "range(t + 1, T - 1)")
    future_first_row = p.FUTURE_LOOPS.replace("for t in range(T)", "for t in range(1, T)")
    for check in (p.ROWS_SUM_SKIP_LAST, skip_first):
        assert not _passes(rows, Student(check, variant=variant)), check
    for check in (p.FUTURE_TRIU_K2, p.FUTURE_TRIU.replace("k=1", "k=3"), future_short,
                  future_first_row):
        assert not _passes(future, Student(check, variant=variant)), check
    for check in (p.ROWS_SUM_ALLCLOSE, p.ROWS_SUM_LOOPS, p.ROWS_SUM_ISCLOSE):
        assert _passes(rows, Student(check, variant=variant)), check
    for check in (p.FUTURE_TRIU, p.FUTURE_LOOPS, p.FUTURE_MASKED):
        assert _passes(future, Student(check, variant=variant)), check


# -- exercise 4: the call the memory test measures must compute attention ----------------------

MEMORY_SWEPT = quick_first(VARIANTS[:4], 2, ids=IDS[:4])


@pytest.mark.parametrize("variant", MEMORY_SWEPT)
def test_the_memory_point_needs_the_right_answer_at_the_measured_size(variant):
    memory = test_ex4.test_blockwise_memory_stays_far_below_one_score_matrix
    for blockwise in (p.BLOCKWISE_KEYS, p.BLOCKWISE_TILES, p.BLOCKWISE_FLOAT32):
        assert _passes(memory, Student(blockwise, variant=variant))
    assert not _passes(memory, Student(p.BLOCKWISE_NOT_AT_SIZE, variant=variant))
    # right everywhere but on one row a measured call compares (the first, the last, a drawn
    # one), in that call only: without the mask (n = LONG_N), with it (n = T)
    for rows, n in ((test_ex4.long_rows(variant), test_ex4.LONG_N),
                    (test_ex4.memory_rows(variant), test_ex4.MEMORY_T)):
        for row in (0, int(rows[len(rows) // 2]), n - 1):
            spoiled = p.BLOCKWISE_KEYS + f"""
_right = attention_blockwise

def attention_blockwise(Q, K, V, causal=False, block=64):
    out = _right(Q, K, V, causal, block)
    if len(out) == {n}:
        out[{row}] += 0.01
    return out
"""
            assert not _passes(memory, Student(spoiled, variant=variant)), row


@pytest.mark.parametrize("variant", MEMORY_SWEPT)
def test_a_catalogued_slip_keeps_the_memory_point_that_its_value_tests_do_not_give(variant):
    """One mistake costs only what it breaks: the memory test accepts what a catalogued slip
    computes (the value tests charge the slip), never the queries or a row spoiled alone."""
    memory = test_ex4.test_blockwise_memory_stays_far_below_one_score_matrix
    for slip in (p.BLOCKWISE_NO_RESCALE, p.BLOCKWISE_PER_BLOCK_NORMALISER,
                 p.BLOCKWISE_CAUSAL_OFF_BY_ONE, p.BLOCKWISE_CAUSAL_IGNORED):
        assert _passes(memory, Student(slip, variant=variant)), slip
    Q, K, V = test_ex4.memory_inputs(variant)
    causal, rows = True, test_ex4.memory_rows(variant)
    assert causal and not test_ex4.slip_explains(Q[rows, :V.shape[1]], Q, K, V, causal, rows)
    right = test_ex4.rows_expected(Q, K, V, causal, rows)  # (16, d_v)
    assert test_ex4.slip_explains(right, Q, K, V, causal, rows)
    right[3] += 0.01
    assert not test_ex4.slip_explains(right, Q, K, V, causal, rows)


BLOCKWISE_FIRST_BLOCK_MAX = p.BLOCKWISE_KEYS.replace(
    "new_max = np.maximum(running_max, scores.max(axis=1))",
    "new_max = np.where(np.isfinite(running_max), running_max, scores.max(axis=1))")


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_only_blockwise_attention_or_a_catalogued_slip_earns_the_stability_point(variant):
    stable = test_ex4.test_blockwise_is_stable_at_large_scores
    assert BLOCKWISE_FIRST_BLOCK_MAX != p.BLOCKWISE_KEYS
    for blockwise in (p.BLOCKWISE_V_ROWS, BLOCKWISE_FIRST_BLOCK_MAX, p.BLOCKWISE_UNSTABLE):
        assert not _passes(stable, Student(blockwise, variant=variant)), blockwise
    for blockwise in (p.BLOCKWISE_KEYS, p.BLOCKWISE_TILES, p.BLOCKWISE_FLOAT32,
                      p.BLOCKWISE_COPIES, p.BLOCKWISE_NO_RESCALE,
                      p.BLOCKWISE_PER_BLOCK_NORMALISER, p.BLOCKWISE_CAUSAL_OFF_BY_ONE,
                      p.BLOCKWISE_CAUSAL_IGNORED):
        assert _passes(stable, Student(blockwise, variant=variant)), blockwise


BLOCKWISE_TILE_SKIPS_DIAGONAL = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    n, m, d_v = Q.shape[0], K.shape[0], V.shape[1]
    out = np.empty((n, d_v))
    for qs in range(0, n, block):
        qe = min(qs + block, n)
        mx, l, acc = np.full(qe - qs, -np.inf), np.zeros(qe - qs), np.zeros((qe - qs, d_v))
        for ks in range(0, m, block):
            if causal and ks >= qs and qs > 0:
                break   # an uncatalogued slip: the diagonal tile skipped
            ke = min(ks + block, m)
            sc = Q[qs:qe] @ K[ks:ke].T / np.sqrt(Q.shape[1])
            if causal:
                sc = np.where(np.arange(ks, ke)[None, :] > np.arange(qs, qe)[:, None],
                              -np.inf, sc)
            new = np.maximum(mx, sc.max(1))
            r, w = np.exp(mx - new), np.exp(sc - new[:, None])
            l, acc, mx = l * r + w.sum(1), acc * r[:, None] + w @ V[ks:ke], new
        out[qs:qe] = acc / l[:, None]
    return out
"""


def test_an_uncatalogued_causal_slip_keeps_the_memory_point_and_a_hidden_one_is_told_to_fix():
    """The diagonal tile skipped (attack3 #3): the causal value test shows it and charges it,
    the memory point stays (fair5). Wrong only at the memory test's size, the causal call is
    told to fix its values, not accused."""
    memory = test_ex4.test_blockwise_memory_stays_far_below_one_score_matrix
    tiles = Student(BLOCKWISE_TILE_SKIPS_DIAGONAL)
    with pytest.raises(Mismatch):
        test_ex4.test_blockwise_matches_attention_with_causal_mask(tiles)
    memory(tiles)
    large_only = BLOCKWISE_TILE_SKIPS_DIAGONAL.replace("if causal and ks >= qs and qs > 0:",
                                                      "if causal and ks >= qs > 0 and n > 1024:")
    with pytest.raises(Mismatch) as caught:
        memory(Student(large_only))
    hint = caught.value.hint
    assert "must compute attention itself" not in hint
    assert "wrong only by a mistake the value tests catch" in hint
    assert "fix the values first" in hint


def test_the_compared_rows_are_the_edges_and_drawn_for_each_student():
    seen = set()
    for variant in VARIANTS:
        for rows, n, count in ((test_ex4.memory_rows(variant), test_ex4.MEMORY_T,
                                test_ex4.MEMORY_ROWS),
                               (test_ex4.long_rows(variant), test_ex4.LONG_N,
                                test_ex4.LONG_ROWS)):
            assert len(set(rows.tolist())) == count
            assert rows[0] == 0 and rows[-1] == n - 1
            seen.add(rows.tobytes())
    assert len(seen) == 2 * len(VARIANTS)


def test_the_rows_reference_is_the_reference_on_those_rows():
    rng = np.random.default_rng(5)
    Q, K, V = (rng.normal(size=(40, 3)) for _ in range(3))
    rows = np.array([0, 7, 39])
    for causal in (False, True):
        whole = test_ex4.expected_output(Q, K, V, causal)[0]  # (40, 3)
        assert np.allclose(test_ex4.rows_expected(Q, K, V, causal, rows), whole[rows],
                           rtol=0, atol=1e-12)

