"""The tolerances' margins, measured on the corpus so that they cannot silently vanish.

For every hidden input that a test compares with the reference, each correct corpus
submission (float32, -1e9 and finfo.min fills, a 1e-8 epsilon, plain loops...) must be far
inside the tolerance, and each mistake far outside it on every such test it is pinned to fail:
on the lesson's fixed hidden inputs and on those of a sample of students' variants (their own
shapes and values). `python tests/test_tolerances.py` prints the figures quoted in
`autograder/compare.py`.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

import sdpa_ref
from autograder.compare import FLOAT_RESULTS, HAND, LARGE_SCORES, significant_figures
from autograder.corpus import cases
from autograder.diagnoses import ex4 as ex4_diagnoses
from autograder.sandbox import Cell, Sandbox, SandboxPool
from autograder.suites import test_ex2, test_ex3, test_ex4
from autograder.variants import DEFAULT
from tests import variant_sample
from tests.corpus_exec import call_quietly, run_case

# Both sides at least this far from the line: a correct answer uses at most 1/MARGIN of the
# tolerance, a mistake at least MARGIN times it.
MARGIN = 30
GRADED = [case for case in cases() if case.kind in ("correct", "mistake")]
# The lesson's hidden inputs, and those of a sample of students (their own shapes and values).
VARIANTS = [DEFAULT] + [variant_sample.variant(student) for student in
                        variant_sample.QUICK + variant_sample.SLOW]


def _ratio(got, expected, tolerance) -> float:
    """The error as a multiple of the tolerance; inf for no answer or the wrong shape."""
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return math.inf
    expected = np.asarray(expected, dtype=float)
    return tolerance.ratio(got, expected) if got.shape == expected.shape else math.inf


def _attention_ratio(namespace, test_name, variant) -> float:
    Q, K, V, mask = test_ex3.reference_inputs(variant)[test_name]
    out, attn = sdpa_ref.attention(Q, K, V, mask)
    part, expected = (1, attn) if "weights" in test_name else (0, out)
    kwargs = {} if mask is None else {"mask": mask}
    result = call_quietly(namespace.get("attention"), Q.copy(), K.copy(), V.copy(), **kwargs)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        return math.inf
    return _ratio(result[part], expected, FLOAT_RESULTS)


def _softmax_ratio(namespace, test_name, variant) -> float:
    ratios = [_ratio(call_quietly(namespace.get("softmax"), z.copy()), sdpa_ref.softmax(z),
                     FLOAT_RESULTS) for z in test_ex2.reference_inputs(variant)[test_name]]
    return max(ratios)


def _finite_ratio(got, expected, tolerance) -> float:
    """`_ratio`, and inf for an answer holding NaN or inf (what an overflow gives)."""
    ratio = _ratio(got, expected, tolerance)
    finite = ratio < math.inf and np.all(np.isfinite(np.asarray(got, dtype=float)))
    return ratio if finite else math.inf


def _stability_ratio(namespace, variant) -> float:
    """Large scores against the same case's moderate ones, and scores spread far apart in a
    row (`test_ex3.spread_inputs`) against the reference."""
    moderate, large = test_ex3.hidden_inputs(variant)["stability"]
    first = call_quietly(namespace.get("attention"), *(a.copy() for a in moderate))
    second = call_quietly(namespace.get("attention"), *(a.copy() for a in large))
    spread_inputs = test_ex3.spread_inputs(variant)
    spread = call_quietly(namespace.get("attention"), *(a.copy() for a in spread_inputs))
    if first is None or second is None or not isinstance(spread, (tuple, list)):
        return math.inf
    expected = sdpa_ref.attention(*spread_inputs)
    return max([_ratio(b, a, LARGE_SCORES) for a, b in zip(first, second, strict=True)]
               + [_finite_ratio(got, want, FLOAT_RESULTS)
                  for got, want in zip(spread, expected, strict=True)])


def _softmax_stability_ratio(namespace, variant) -> float:
    """Large scores against the case's moderate ones, and scores spread far apart in a row
    (`test_ex2.wide_scores`, 2-D and its first row) against the reference."""
    base = test_ex2.hidden_inputs(variant)["large_base"]
    moderate = call_quietly(namespace.get("softmax"), base.copy())
    large = call_quietly(namespace.get("softmax"), base + test_ex2.SHIFT)
    if moderate is None:
        return math.inf
    wide = test_ex2.wide_scores(variant)  # (rows, columns)
    return max([_ratio(large, moderate, LARGE_SCORES)]
               + [_finite_ratio(call_quietly(namespace.get("softmax"), z.copy()),
                                sdpa_ref.softmax(z), LARGE_SCORES) for z in (wide, wide[0])])


def _blockwise_ratio(namespace, test_name, variant) -> float:
    """The worst call of an exercise 4 value test, against both references."""
    ratios = []
    for Q, K, V, causal, block in test_ex4.reference_inputs(variant)[test_name]:
        kwargs = {"causal": causal} | ({} if block is None else {"block": block})
        got = call_quietly(namespace.get("attention_blockwise"), Q.copy(), K.copy(), V.copy(),
                           **kwargs)
        ratios += [_ratio(got, expected, FLOAT_RESULTS)
                   for expected in test_ex4.expected_output(Q, K, V, causal)]
    return max(ratios)


def measure() -> dict[str, dict[str, float]]:
    """Case -> hidden test -> its largest error, over the variants, as a multiple of the
    test's tolerance (the smallest, for a test the case is pinned to fail)."""
    found = {}
    for case in GRADED:
        namespace = run_case(case)
        errors: dict[str, float] = {}
        for variant in VARIANTS:
            ratios = {name: _attention_ratio(namespace, name, variant)
                      for name in test_ex3.reference_inputs(variant)}
            ratios |= {name: _softmax_ratio(namespace, name, variant)
                       for name in test_ex2.reference_inputs(variant)}
            ratios["attention_is_stable_at_large_scores"] = _stability_ratio(namespace, variant)
            ratios["softmax_survives_large_scores"] = _softmax_stability_ratio(namespace, variant)
            if case.attempts_ex4:
                ratios |= {name: _blockwise_ratio(namespace, name, variant)
                           for name in test_ex4.reference_inputs(variant)}
            pick = max if case.kind == "correct" else min
            errors = {name: pick(errors.get(name, ratio), ratio) for name, ratio in ratios.items()}
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


def _clipped_softmax(z, axis=-1):
    """A mistake with finite answers at large scores: exp of scores clipped at 700 (no
    overflow, but every score near 800 weighs the same), instead of subtracting the maximum."""
    e = np.exp(np.minimum(z, 700.0))  # z.shape
    return e / e.sum(axis=axis, keepdims=True)  # z.shape


def _clipped_attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])  # (n, d_k) @ (d_k, m) -> (n, m)
    if mask is not None:
        scores = np.where(mask, -1e9, scores)  # (n, m)
    weights = _clipped_softmax(scores)  # (n, m)
    return weights @ V, weights  # (n, m) @ (m, d_v) -> (n, d_v); (n, m)


def test_a_finite_mistake_at_large_scores_is_far_outside_their_tolerance():
    """The corpus's unstable softmaxes all give inf or NaN, which no tolerance lets
    through: this one measures LARGE_SCORES' own margin."""
    ratios = []
    for variant in VARIANTS:
        base = test_ex2.hidden_inputs(variant)["large_base"]  # (rows, columns)
        ratios.append(_ratio(_clipped_softmax(base + test_ex2.SHIFT), _clipped_softmax(base),
                             LARGE_SCORES))
        moderate, large = test_ex3.hidden_inputs(variant)["stability"]
        ratios += [_ratio(b, a, LARGE_SCORES) for a, b in
                   zip(_clipped_attention(*moderate), _clipped_attention(*large), strict=True)]
    assert min(ratios) >= MARGIN, min(ratios)


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


# Exercise 3(c): the hidden matrices the student's checks judge. A check's tolerance is the
# student's own; the usual one is np.allclose's (rtol = 1e-5, atol = 1e-8), the answer key's is
# 1e-5. Every correct matrix must be far inside it, every broken one far outside, and exact
# comparison (== 1) must fail on correct matrices, or the exact-float slip would go unseen.
ROW_TOLERANCE = 1e-5 + 1e-8
ZERO_TOLERANCE = 1e-8


def _row_errors(attn) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.abs(np.asarray(attn, dtype=np.float64).sum(axis=-1) - 1.0)  # (T,)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.label)
def test_correct_matrices_sum_to_one_only_up_to_rounding_far_inside_any_check(variant):
    for attn, what in test_ex3.check_matrices(variant).correct:
        assert _row_errors(attn).max() <= ROW_TOLERANCE / MARGIN, what
        sums_own_dtype = attn.sum(axis=-1)  # (T,) summed in float32 for a float32 matrix
        exact_sums = [math.fsum(float(x) for x in row) for row in attn]
        assert (sums_own_dtype != 1).any() and any(total != 1 for total in exact_sums), what
        assert not np.triu(attn, k=1).any(), what  # the future is exactly 0
        assert np.all(np.diagonal(attn) > 0), what  # the present is not


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.label)
def test_broken_matrices_are_far_outside_any_reasonable_check(variant):
    matrices = test_ex3.check_matrices(variant)
    short, transposed, nan_row, first, last = (attn for attn, _ in matrices.rows_broken)
    for attn in (short, transposed, first, last):
        assert np.nanmax(_row_errors(attn)) >= MARGIN * ROW_TOLERANCE
    assert np.isnan(nan_row).any()
    leak, unmasked, _, _, adjacent, corner = (attn for attn, _ in matrices.future_broken)
    for attn in (leak, unmasked, adjacent, corner):
        assert np.abs(np.triu(attn, k=1)).max() >= MARGIN * ZERO_TOLERANCE
        assert _row_errors(attn).max() <= ROW_TOLERANCE / MARGIN  # broken in one fact only


# Exercise 4's memory test: every correct blockwise style of the corpus at most 1/MEMORY_MARGIN
# of the limit, every case diagnosed with a whole (T, T) array at least MEMORY_MARGIN times it.
# tracemalloc measures the same allocations here as in the sandbox's worker.
MEMORY_MARGIN = 1.5
# Cases too slow to answer at the memory test's size (`timeout`) have no memory to measure.
BLOCKWISE = [case for case in GRADED
             if case.attempts_ex4 and "timeout" not in case.diagnoses.get("ex4", ())]


def peak_bytes(function) -> int:
    """The largest peak of the memory test's two calls held to its limits (without the mask,
    a few queries against many keys; with it, at T), on the lesson's inputs: every student's
    have the same shapes, and only the shapes set the memory a call allocates."""
    peaks = []
    for _, Q, K, V, causal, block, _ in test_ex4.memory_calls(DEFAULT):
        tracemalloc.start()
        try:
            call_quietly(function, Q, K, V, causal=causal, block=block)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    return max(peaks)


@pytest.fixture(scope="module")
def blockwise_peaks() -> dict[str, int]:
    return {case.name: peak_bytes(run_case(case)["attention_blockwise"]) for case in BLOCKWISE}


def _holds_a_score_matrix(case) -> bool:
    """The case fails the memory test for its memory (a value mistake fails it too, on the
    rows it compares with the reference, and is measured as blockwise code)."""
    return "blockwise-quadratic-memory" in case.diagnoses.get("ex4", ())


def test_blockwise_memory_of_every_correct_style_is_well_inside_the_limit(blockwise_peaks):
    limit = test_ex4.MEMORY_LIMIT_BYTES
    for case in BLOCKWISE:
        peak = blockwise_peaks[case.name]
        if _holds_a_score_matrix(case):
            assert peak >= MEMORY_MARGIN * limit, (case.name, peak)
        else:
            assert peak <= limit / MEMORY_MARGIN, (case.name, peak)
    assert {c.name for c in BLOCKWISE if c.kind == "correct"}  # measured on correct ones too


def test_the_rows_the_memory_test_compares_are_far_inside_the_tolerance():
    """Every correct blockwise style's answer at the memory test's sizes on the rows it
    compares with the reference (float32 inside the function included), on the lesson's
    inputs and on students' own."""
    for case in BLOCKWISE:
        if case.kind != "correct":
            continue
        function = run_case(case)["attention_blockwise"]
        for variant in VARIANTS[:3]:
            for _, Q, K, V, causal, block, rows in test_ex4.memory_calls(variant):
                out = call_quietly(function, Q, K, V, causal=causal, block=block)  # (n, d_v)
                expected = test_ex4.rows_expected(Q, K, V, causal, rows)  # (rows, d_v)
                ratio = FLOAT_RESULTS.ratio(np.asarray(out, dtype=float)[rows], expected)
                assert ratio <= 1 / MARGIN, (case.name, variant.label, causal, ratio)


def long_probe_growth(function) -> int:
    """How much higher the keys-in-blocks comparison's peak is at its wide block than at its
    narrow one (the memory test's `not_in_blocks`), as tracemalloc sees it."""
    Q, K, V = test_ex4.compared_inputs(DEFAULT)
    peaks = []
    for block in (ex4_diagnoses.LONG_BLOCK, ex4_diagnoses.WIDE_BLOCK):
        tracemalloc.start()
        try:
            call_quietly(function, Q, K, V, causal=False, block=block)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    return peaks[1] - peaks[0]


def test_the_keys_in_blocks_probe_tells_blocks_far_from_whole_rows():
    """Every case that takes the keys a block at a time peaks higher at the wide block by at
    least MEMORY_MARGIN times `WIDER_BYTES`, every one diagnosed otherwise (a query's whole
    row, one key at a time) by at most 1/MEMORY_MARGIN of it (issue 25)."""
    wider = ex4_diagnoses.WIDER_BYTES
    for case in BLOCKWISE:
        codes = case.diagnoses.get("ex4", ())
        if "blockwise-quadratic-memory" in codes:
            continue  # over the limits at T = 2048 already
        growth = long_probe_growth(run_case(case)["attention_blockwise"])
        if "blockwise-keys-not-blocked" in codes:
            assert growth <= wider / MEMORY_MARGIN, (case.name, growth)
        else:
            assert growth >= MEMORY_MARGIN * wider, (case.name, growth)


def resident_growth(pool: SandboxPool, case) -> tuple[int, int]:
    """(largest growth of the worker's high-water mark, largest traced peak) over the memory
    test's two calls held to its limits, in a sandbox as the grader runs them (the gauge
    exists only there). The memory call is the worker's first call: pages of code and of the
    sandbox's messages touched for the first time count, as they would if it ran first."""
    resident, traced = [], []
    with Sandbox([Cell(case.source, "submission")], pool=pool) as sandbox:
        sandbox.start()
        for _, Q, K, V, causal, block, _ in test_ex4.memory_calls(DEFAULT):
            _, use = sandbox.call_measuring_memory("attention_blockwise", Q, K, V,
                                                   causal=causal, block=block)
            resident.append(max(use.resident, use.touched or 0))  # either figure of the gauge
            traced.append(use.traced)
    return max(resident), max(traced)


@pytest.fixture(scope="module")
def blockwise_growth() -> dict[str, tuple[int, int]]:
    with SandboxPool() as pool:
        return {case.name: resident_growth(pool, case) for case in BLOCKWISE}


@pytest.mark.slow
def test_blockwise_memory_seen_from_outside_is_well_inside_its_bound(blockwise_growth):
    """The gauge's bound (`BLOCKWISE_RESIDENT`): every correct style at most 1/MEMORY_MARGIN
    of it, every case that fails the memory test for its memory at least MEMORY_MARGIN times
    it; and what
    the gauge counts beyond tracemalloc (code and message pages) is so small that an answer
    at tracemalloc's limit would still be inside the bound."""
    bound = test_ex4.RESIDENT_BOUND_BYTES
    overheads = []
    for case in BLOCKWISE:
        resident, traced = blockwise_growth[case.name]
        if _holds_a_score_matrix(case):
            assert resident >= MEMORY_MARGIN * bound, (case.name, resident)
        else:
            assert resident <= bound / MEMORY_MARGIN, (case.name, resident)
            overheads.append(resident - traced)
    assert test_ex4.MEMORY_LIMIT_BYTES + max(overheads) < bound, max(overheads)


if __name__ == "__main__":
    measured = measure()
    stable = ("attention_is_stable_at_large_scores", "softmax_survives_large_scores")
    for label, keep in (("FLOAT_RESULTS", lambda test: test not in stable),
                        ("LARGE_SCORES", lambda test: test in stable)):
        part = {case: {t: r for t, r in tests.items() if keep(t)}
                for case, tests in measured.items()}
        print(f"{label}: worst correct uses %.3g of the tolerance (%s / %s)" % _worst_correct(part))
        print(f"{label}: closest mistake is %.3g tolerances off (%s / %s)" % _closest_mistake(part))
    for case in BLOCKWISE:
        peak = peak_bytes(run_case(case)["attention_blockwise"])
        print(f"BLOCKWISE_MEMORY: {case.name} peaks at {peak / 2**20:.2f} MiB "
              f"(limit {test_ex4.MEMORY_LIMIT_BYTES / 2**20:.0f} MiB)")
    with SandboxPool() as sandboxes:
        for case in BLOCKWISE:
            resident, traced = resident_growth(sandboxes, case)
            print(f"BLOCKWISE_RESIDENT: {case.name} raises the high-water mark by "
                  f"{resident / 2**20:.2f} MiB, {(resident - traced) / 2**20:.2f} above "
                  f"tracemalloc (bound {test_ex4.RESIDENT_BOUND_BYTES / 2**20:.0f} MiB)")
