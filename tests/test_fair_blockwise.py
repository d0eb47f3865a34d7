"""Exercise 4's memory point is the algorithm's (issue 25): right values without the keys taken
`block` at a time (a query's whole row of keys, a block of queries against all the keys, one
key at a time) lose that point only, and say why; every correct blockwise style keeps it,
whatever its loop order, precision, fill or summaries. A slow function is still probed at the
sizes it answered in time (issue 27). The hidden tests and diagnoses run in this process
(`test_scoring_gaps.Student`, whose measured calls report tracemalloc's peak as the worker
does); tests/test_corpus.py grades the corpus's cases through the sandbox, where the gauge
also counts memory written before the call.
"""

from __future__ import annotations

import numpy as np
import pytest

from autograder.compare import Mismatch
from autograder.corpus import pieces as p
from autograder.diagnoses import ex4 as ex4_diagnoses
from autograder.sandbox import StudentTimeout
from autograder.student import Student as SandboxStudent
from autograder.suites import test_ex4
from tests.test_scoring_gaps import IDS, VARIANTS, Student

MEMORY = test_ex4.test_blockwise_memory_stays_far_below_one_score_matrix
VALUES = (test_ex4.test_blockwise_matches_attention_without_mask,
          test_ex4.test_blockwise_matches_attention_with_causal_mask,
          test_ex4.test_blockwise_matches_attention_in_float32,
          test_ex4.test_blockwise_matches_attention_for_any_block_size,
          test_ex4.test_blockwise_is_stable_at_large_scores)


def _student(blockwise, variant):
    return Student(p.ATTENTION_WHERE, p.CAUSAL_MASK_TRIU, blockwise, variant=variant)


def _failure(test, student) -> str | None:
    try:
        test(student)
    except Mismatch as err:
        return str(err)
    return None


# Right values, the keys not taken a block at a time (new variants of the attack).
KEY_BY_KEY = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    n = Q.shape[0]
    best, total = np.full(n, -np.inf), np.zeros(n)
    acc = np.zeros((n, V.shape[1]))
    for j in range(K.shape[0]):                 # one key at a time, whatever block is
        s = Q @ K[j] / np.sqrt(Q.shape[1])
        if causal:
            s = np.where(np.arange(n) >= j, s, -np.inf)
        new = np.maximum(best, s)
        shrink, w = np.exp(best - new), np.exp(s - new)
        total = total * shrink + w
        acc = acc * shrink[:, None] + w[:, None] * V[j]
        best = new
    return acc / total[:, None]
"""
QUERY_BLOCKS_WHOLE_ROWS = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    out = np.empty((Q.shape[0], V.shape[1]))
    for q0 in range(0, Q.shape[0], block):      # a block of queries against every key
        s = Q[q0:q0 + block] @ K.T / np.sqrt(Q.shape[1])
        if causal:
            s = np.where(np.arange(K.shape[0])[None, :]
                         > np.arange(q0, q0 + len(s))[:, None], -np.inf, s)
        w = np.exp(s - s.max(axis=1, keepdims=True))
        out[q0:q0 + block] = w @ V / w.sum(axis=1, keepdims=True)
    return out
"""
NOT_BLOCKED = (p.BLOCKWISE_ROW_AT_A_TIME, KEY_BY_KEY, QUERY_BLOCKS_WHOLE_ROWS)

# One query at a time against blocks of keys: the algorithm, unvectorised over the queries.
QUERY_AT_A_TIME_KEY_BLOCKS = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    out = np.empty((Q.shape[0], V.shape[1]))
    for i in range(Q.shape[0]):
        best, total, acc = -np.inf, 0.0, np.zeros(V.shape[1])
        last = i + 1 if causal else K.shape[0]
        for k0 in range(0, last, block):
            s = K[k0:min(k0 + block, last)] @ Q[i] / np.sqrt(Q.shape[1])
            new = max(best, s.max())
            w = np.exp(s - new)
            total = total * np.exp(best - new) + w.sum()
            acc = acc * np.exp(best - new) + w @ V[k0:k0 + len(s)]
            best = new
        out[i] = acc / total
    return out
"""
BLOCKED = (p.BLOCKWISE_KEYS, p.BLOCKWISE_TILES, p.BLOCKWISE_FLOAT32, p.BLOCKWISE_COPIES,
           p.PORTED["urw7rs-chunk-summaries"][0], p.PORTED["kaminyou-v1"][0],
           p.PORTED["mog9-rows"][0], p.PORTED["samarth-two-pass"][0])


def test_right_values_without_the_keys_in_blocks_lose_the_memory_point_only():
    row_at_a_time = _student(p.BLOCKWISE_ROW_AT_A_TIME, VARIANTS[0])
    for test in VALUES:
        assert _failure(test, row_at_a_time) is None, test.__name__
    said = _failure(MEMORY, row_at_a_time)
    assert said is not None and f"{ex4_diagnoses.COMPARED_M} keys" in said
    assert ex4_diagnoses.diagnose(row_at_a_time) == {"blockwise-keys-not-blocked"}
    for blockwise in NOT_BLOCKED:
        for variant in VARIANTS[:2]:
            with pytest.raises(Mismatch):
                test_ex4.expect_keys_in_blocks(_student(blockwise, variant))


@pytest.mark.parametrize("variant", VARIANTS[:2], ids=IDS[:2])
def test_every_correct_blockwise_style_takes_the_keys_in_blocks(variant):
    for blockwise in (*BLOCKED, QUERY_AT_A_TIME_KEY_BLOCKS):
        test_ex4.expect_keys_in_blocks(_student(blockwise, variant))


def test_a_query_at_a_time_against_blocks_of_keys_grows_by_one_row_of_the_wider_block():
    """Unvectorised over the queries, the keys are still taken `block` at a time: the probe
    asks the peak to grow by half a float32 row of the wider block, not per query."""
    student = _student(QUERY_AT_A_TIME_KEY_BLOCKS, VARIANTS[0])
    Q, K, V = test_ex4.compared_inputs(student.variant)
    uses = [student.call_measuring_memory("attention_blockwise", Q, K, V, causal=False,
                                          block=block)[1]
            for block in (ex4_diagnoses.LONG_BLOCK, ex4_diagnoses.WIDE_BLOCK)]
    assert not ex4_diagnoses.not_in_blocks(*uses)
    assert uses[1].traced - uses[0].traced >= ex4_diagnoses.WIDER_BYTES


class _SlowSandbox:
    """Answers calls whose inputs hold at most `answers_up_to` numbers, times out on more."""

    def __init__(self, answers_up_to):
        self.answers_up_to, self.calls = answers_up_to, 0

    def call(self, name, *args, readonly=False, **kwargs):
        self.calls += 1
        if sum(np.asarray(a).size for a in args) > self.answers_up_to:
            raise StudentTimeout("ran past its time limit")
        return "answered"


def test_a_function_that_timed_out_is_still_called_at_sizes_it_answered():
    """Issue 27: a slow loop answers the value tests, times out at the memory test's size;
    the diagnoses' small probes still reach it, larger inputs fail at once."""
    sandbox = _SlowSandbox(answers_up_to=500)
    student = SandboxStudent(sandbox)
    small, large = np.ones((10, 20)), np.ones((100, 100))
    assert student.call("f", small) == "answered"
    with pytest.raises(StudentTimeout):
        student.call("f", large)
    calls = sandbox.calls
    assert student.call("f", np.ones((5, 5))) == "answered"  # no larger than answered before
    with pytest.raises(StudentTimeout):
        student.call("f", np.ones((30, 30)))  # larger than anything answered: at once
    assert sandbox.calls == calls + 1
    never = SandboxStudent(_SlowSandbox(answers_up_to=-1))
    with pytest.raises(StudentTimeout):
        never.call("g", small)
    with pytest.raises(StudentTimeout):
        never.call("g", np.ones(1))  # never answered: every later call fails at once
    assert never._sandbox.calls == 1
