"""Wrong answers that once earned points (attack2): each now loses the test it used to pass,
on the lesson's numbers and inputs and on students' own, while the right answers in every
style the corpus has keep theirs. The hidden tests and diagnoses run in this process on the
corpus's pieces; tests/test_corpus.py grades the same answers through the sandbox.
"""

from __future__ import annotations

import numpy as np
import pytest

from autograder.compare import Mismatch
from autograder.corpus import pieces as p
from autograder.diagnoses import ex2 as ex2_diagnoses
from autograder.sandbox import MemoryUse, MissingName, StudentRaised
from autograder.suites import test_ex1, test_ex2, test_ex3, test_ex4
from autograder.variants import DEFAULT, variant_for
from tests.corpus_exec import call_quietly
from tests.variant_sample import SEED

VARIANTS = [DEFAULT, *(variant_for(SEED, "sdpa", f"gap{i}") for i in range(12))]
IDS = ["default", *(f"gap{i}" for i in range(12))]


class Student:
    """The kit's own pieces run in this process, answering as the sandbox would."""

    def __init__(self, *parts, variant=DEFAULT):
        self.namespace, self.variant = {"np": np}, variant
        for part in parts:
            exec(part, self.namespace)

    def has(self, name):
        return name in self.namespace

    def value(self, name):
        if name not in self.namespace:
            raise MissingName(name)
        return self.namespace[name]

    def call(self, name, *args, readonly=False, **kwargs):
        result = call_quietly(self.value(name), *args, **kwargs)
        if result is None:
            raise StudentRaised("Exception", f"{name} raised")
        return result

    def call_measuring_memory(self, name, *args, **kwargs):
        """The answer, with a measure that passes: this is about the answer, not memory."""
        return self.call(name, *args, **kwargs), MemoryUse(traced=0, resident=0)


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

MEMORY_VARIANTS = VARIANTS[:4]


@pytest.mark.parametrize("variant", MEMORY_VARIANTS, ids=IDS[:4])
def test_the_memory_point_needs_the_right_answer_at_the_measured_size(variant):
    memory = test_ex4.test_blockwise_memory_stays_far_below_one_score_matrix
    for blockwise in (p.BLOCKWISE_KEYS, p.BLOCKWISE_TILES, p.BLOCKWISE_FLOAT32):
        assert _passes(memory, Student(blockwise, variant=variant))
    assert not _passes(memory, Student(p.BLOCKWISE_NOT_AT_SIZE, variant=variant))
    # right everywhere but on one row the test compares (the first, the last, a drawn one)
    for rows in test_ex4.memory_rows(variant):
        for row in (0, int(rows[7]), test_ex4.MEMORY_T - 1):
            spoiled = p.BLOCKWISE_KEYS + f"""
_right = attention_blockwise

def attention_blockwise(Q, K, V, causal=False, block=64):
    out = _right(Q, K, V, causal, block)
    out[{row}] += 0.01
    return out
"""
            assert not _passes(memory, Student(spoiled, variant=variant)), row


@pytest.mark.parametrize("variant", MEMORY_VARIANTS, ids=IDS[:4])
def test_a_catalogued_slip_keeps_the_memory_point_that_its_value_tests_do_not_give(variant):
    """One mistake costs only what it breaks: the memory test accepts what a catalogued slip
    computes (the value tests charge the slip), never the queries or a row spoiled alone."""
    memory = test_ex4.test_blockwise_memory_stays_far_below_one_score_matrix
    for slip in (p.BLOCKWISE_NO_RESCALE, p.BLOCKWISE_PER_BLOCK_NORMALISER,
                 p.BLOCKWISE_CAUSAL_OFF_BY_ONE, p.BLOCKWISE_CAUSAL_IGNORED):
        assert _passes(memory, Student(slip, variant=variant)), slip
    (Q, K, V), causal = test_ex4.memory_inputs(variant)[1]
    rows = test_ex4.memory_rows(variant)[1]
    assert causal and not test_ex4.slip_explains(Q[rows, :V.shape[1]], Q, K, V, causal, rows)
    right = test_ex4.rows_expected(Q, K, V, causal, rows)  # (16, d_v)
    assert test_ex4.slip_explains(right, Q, K, V, causal, rows)
    right[3] += 0.01
    assert not test_ex4.slip_explains(right, Q, K, V, causal, rows)


def test_the_compared_rows_are_the_edges_and_drawn_for_each_student():
    seen = set()
    for variant in VARIANTS:
        for rows in test_ex4.memory_rows(variant):
            assert len(set(rows.tolist())) == test_ex4.MEMORY_ROWS
            assert rows[0] == 0 and rows[-1] == test_ex4.MEMORY_T - 1
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

