"""Per-student variants: how they are derived, what varies, and that grading stays fair on
every one of them.

The fast property tests run the hidden suites and diagnoses of exercises 1 and 2 in this
process on many variants (the corpus's correct and mistaken answers, written with each
student's own numbers); the engine itself grades a sample of variants in test_corpus.py.
"""

from __future__ import annotations

import ast
import itertools
import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import autograder.variants.numbers as numbers_module
import sdpa_ref
from autograder.compare import HAND, significant_figures
from autograder.corpus import cases, classmate
from autograder.diagnoses import diagnose_submission
from autograder.diagnoses.ex1 import scale_slips, slip_models
from autograder.runner import collect, run_tests
from autograder.suites import test_ex2, test_ex3, test_ex4
from autograder.variants import DEFAULT, BadSeed, new_seed, numbers_key, variant_for
from autograder.variants.keys import inputs_seed
from autograder.variants.numbers import LESSON_EX1, LESSON_EX2, student_numbers
from sdpa_course.assignment import NUMBERS_CELL
from tests.corpus_exec import InProcessStudent, run_case
from tests.variant_sample import SEED, in_notebook, quick_first, released_numbers_cell

REPO = Path(__file__).resolve().parents[1]
CLASS = [f"student{i:03d}" for i in range(200)]
MANY = [f"s{i}" for i in range(80)]  # the students of the in-process property tests
EX12_TESTS = tuple(t for t in collect() if t.exercise in ("ex1", "ex2"))
# Exercise 2's family: (gap, d_k) for gaps 6 to 9 and head dimensions 16 to 128, but those whose
# scaled weight is one the lesson prints (8 with 16, 64 and 128: 0.881, 0.731, 0.6698)
EX2_FAMILY = {(gap, d_k) for gap in range(6, 10) for d_k in numbers_module.HEAD_DIMENSIONS
              if not numbers_module._lesson_weight(gap / math.sqrt(d_k))}


# -- deriving a variant ------------------------------------------------------------------------

def test_a_variant_is_a_function_of_the_seed_the_assignment_and_the_student():
    alice = variant_for(SEED, "sdpa", "alice")
    assert variant_for(SEED, "sdpa", "alice") == alice
    others = [variant_for(SEED, "sdpa", "bob"), variant_for(SEED, "other", "alice"),
              variant_for(new_seed(), "sdpa", "alice")]
    assert all(other.label != alice.label and other.inputs_seed != alice.inputs_seed
               for other in others)


def test_each_kind_of_hidden_input_has_a_stream_of_its_own_drawn_again_the_same():
    alice = variant_for(SEED, "sdpa", "alice")
    draws = {purpose: alice.rng(purpose).integers(0, 2**62, size=4).tolist()
             for purpose in ("ex2", "ex3", "ex4", "stability")}
    assert len({tuple(numbers) for numbers in draws.values()}) == len(draws)
    assert alice.rng("ex3").integers(0, 2**62, size=4).tolist() == draws["ex3"]


def test_the_long_memory_inputs_are_each_variants_own_and_each_callers_own_copy():
    """`long_inputs` keeps the last variant's drawn (two tests of a submission ask for them):
    what it gives is what a fresh draw gives, for every variant in turn, and a caller that
    writes into its arrays changes no other caller's."""
    first, second = (variant_for(SEED, "sdpa", student) for student in CLASS[:2])
    for variant in (first, second, first, DEFAULT, first):
        rng = (np.random.default_rng(411) if variant.inputs_seed is None
               else variant.rng("ex4 long keys"))
        drawn = (rng.normal(size=(test_ex4.LONG_N, test_ex4.MEMORY_D)),
                 rng.normal(size=(test_ex4.LONG_M, test_ex4.MEMORY_D)),
                 rng.normal(size=(test_ex4.LONG_M, test_ex4.MEMORY_D)))
        given = test_ex4.long_inputs(variant)
        assert all(np.array_equal(a, b) for a, b in zip(given, drawn, strict=True))
        for array in given:
            array[:] = 0.0
        assert all(np.array_equal(a, b) for a, b in zip(test_ex4.long_inputs(variant), drawn,
                                                         strict=True))


def test_the_public_key_and_the_secret_inputs_come_from_separate_labels():
    """HMAC under distinct labels: the numbers key (public, in the release) is neither the
    seed nor the inputs key, and each student's inputs seed differs from both."""
    key = numbers_key(SEED)
    assert key != SEED and len(key) == 64
    assert format(inputs_seed(SEED, "sdpa", "alice"), "064x") not in (key, SEED)
    # the release can give every student's numbers, never their hidden inputs
    assert student_numbers(key, "sdpa", "alice")["label"] == variant_for(SEED, "sdpa",
                                                                         "alice").label


@pytest.mark.parametrize("seed", ["", "abc", "zz" * 32, "a" * 31, "0" * 33, None])
def test_a_malformed_seed_is_refused(seed):
    with pytest.raises(BadSeed):
        numbers_key(seed)


def test_no_seed_or_no_student_gives_the_lesson_s_own_exercise():
    assert variant_for(None, "sdpa", "alice").label == "default"
    assert variant_for(None, "sdpa", "alice").inputs_seed is None
    assert student_numbers(numbers_key(SEED), "sdpa", "")["label"] == "default"
    assert DEFAULT.ex1.expected()["ex1_weights"] == pytest.approx([0.6698, 0.3302], abs=1e-4)
    assert DEFAULT.ex2.expected()["p_scaled"] == pytest.approx(0.73106, abs=1e-5)
    # the lesson's hidden inputs as they were before variants
    inputs = test_ex3.hidden_inputs(DEFAULT)
    assert [inputs[k][0].shape + inputs[k][2].shape for k in
            ("without_mask", "causal", "hiding_largest")] == [(5, 3, 7, 4), (6, 4, 6, 2),
                                                             (4, 5, 6, 3)]
    assert test_ex2.hidden_inputs(DEFAULT)["matrix"].shape == (3, 4)


def test_200_students_get_at_least_50_exercise_1_answers_and_20_exercise_2_answer_sets():
    variants = [variant_for(SEED, "sdpa", student) for student in CLASS]
    ex1 = {tuple(np.round(np.concatenate(list(v.ex1.expected().values())), 4)) for v in variants}
    ex2 = {tuple(round(x, 8) for x in v.ex2.expected().values()) for v in variants}
    assert len(ex1) >= 50, len(ex1)
    assert len(ex2) == len(EX2_FAMILY), (len(ex2), len(EX2_FAMILY))  # every member, and no other
    assert {v.ex1.d_k for v in variants} == {2, 3, 4}


def test_every_family_member_keeps_its_numbers_small_and_its_slips_apart():
    """The family's promises, for many students: small integers, scores of at most 4, a
    scaled gap of 0.5 to 2; every wrong scale at least 0.047 away from the right weights
    (47 times the three-decimal tolerance) and from each other scale's; unnormalised weights
    summing to 1.13 or more; ex2's gap 6 to 9 and d_k a head dimension from 16 to 128,
    never the lesson's worked scaled gaps 1 and 2."""
    for student in CLASS:
        variant = variant_for(SEED, "sdpa", student)
        n, m = variant.ex1, variant.ex2
        assert all(abs(x) <= 2 for x in (*n.q, *n.k1, *n.k2, *n.v1, *n.v2))
        assert n.d_k in (2, 3, 4) and np.abs(n.raw).max() <= 4
        assert 0.5 <= abs(n.raw[0] - n.raw[1]) / math.sqrt(n.d_k) <= 2
        weights = {factor: sdpa_ref.softmax(n.raw * factor)
                   for factor in (n.scale, *scale_slips(n.d_k))}
        for a, b in itertools.combinations(weights, 2):
            if scale_slips(n.d_k).get(a) != scale_slips(n.d_k).get(b) or n.scale in (a, b):
                assert np.abs(weights[a] - weights[b]).max() >= 0.047 or (
                    a != n.scale and b != n.scale and min(a, b) >= 1)  # both saturated
        assert np.exp(n.raw * n.scale).sum() >= 1.13
        assert 6 <= m.gap <= 9 and m.d_k in (16, 32, 64, 128)
        assert m.gap / math.sqrt(m.d_k) not in (1.0, 2.0)


def test_every_students_ex3_inputs_keep_the_properties_the_tests_rely_on():
    seen = set()
    for student in CLASS:
        inputs = test_ex3.hidden_inputs(variant_for(SEED, "sdpa", student))
        shapes = []
        for key in ("without_mask", "causal", "hiding_largest"):
            Q, K, V, mask = inputs[key]
            (n, d_k), (m, d_v) = Q.shape, V.shape
            assert d_k >= 2 and d_k != d_v and m != d_v
            assert (n == m) == (key == "causal")
            assert (n, m, d_k, d_v) not in test_ex3.NOTEBOOK_SHAPES
            if mask is not None:
                assert not mask.all(axis=-1).any()  # no row fully masked
            shapes.append((n, m, d_k, d_v))
        squares = [inputs["stability"][0][0].shape[0], inputs["read_only"][0].shape[0],
                   inputs["unchanged"][0].shape[0], inputs["stateless"][0][0].shape[0]]
        assert len(set(shapes)) == 3 and len(set(squares)) == 4
        seen.add(inputs["without_mask"][0].tobytes())
    assert len(seen) == len(CLASS)  # inputs leaked by one say nothing about another's


def test_stability_inputs_gain_800_on_every_scaled_score():
    for student in CLASS[:50]:
        (Q0, K0, _), (Q1, K1, _) = test_ex3.hidden_inputs(
            variant_for(SEED, "sdpa", student))["stability"]
        gain = (Q1 @ K1.T - Q0 @ K0.T) / np.sqrt(Q0.shape[1])  # (s, s)
        assert np.allclose(gain, 800.0)


# -- exercise 3(c)'s matrices and exercise 4's inputs, per student ---------------------------

ORDINALS = {word: row for row, word in enumerate(
    ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
     "tenth"))}
ROUNDING = 1e-6  # far below a hundredth, far above float32 rounding of a row of <= 80 weights


def _row_sums(attn) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.asarray(attn, dtype=np.float64).sum(axis=-1)  # (T,)


def _named_row(what: str) -> int:
    """The row a description names: `whose fourth row ...` or `whose row 12 ...`."""
    words = what.split()
    at = words.index("row")
    return ORDINALS[words[at - 1]] if words[at - 1] in ORDINALS else int(words[at + 1]) - 1


def _lesson_weights(seed, T, dtype, causal=True):
    """Exercise 3(c)'s matrices as the lesson built them before variants, from their seeds."""
    rng = np.random.default_rng(seed)
    Q, K, V = rng.normal(size=(T, 4)), rng.normal(size=(T, 4)), rng.normal(size=(T, 2))
    Q, K, V = (a.astype(dtype) for a in (Q, K, V))
    return sdpa_ref.attention(Q, K, V, sdpa_ref.causal_mask(T) if causal else None)[1]


def test_the_default_variant_keeps_the_lesson_s_check_matrices():
    matrices = test_ex3.check_matrices(DEFAULT)
    base = _lesson_weights(316, 8, np.float64)  # (8, 8)
    expected = [_lesson_weights(311, 6, np.float64), _lesson_weights(312, 7, np.float32),
                _lesson_weights(313, 64, np.float32), _lesson_weights(315, 48, np.float64),
                base]
    for (attn, _), want in zip(matrices.correct, expected, strict=True):
        assert attn.dtype == want.dtype and np.array_equal(attn, want)
    short, transposed, nan_row, first, last = (attn for attn, _ in matrices.rows_broken)
    assert np.array_equal(transposed, base.T) and np.isnan(nan_row[0]).all()
    for broken, row in ((short, 3), (first, 0), (last, 7)):
        assert np.array_equal(np.delete(broken, row, axis=0), np.delete(base, row, axis=0))
        assert np.array_equal(broken[row], base[row] * test_ex3.SHORT_ROW)
    leak, unmasked, _, _, adjacent, corner = (attn for attn, _ in matrices.future_broken)
    assert np.argwhere(leak != base).tolist() == [[2, 2], [2, 5]]
    assert np.argwhere(adjacent != base).tolist() == [[5, 5], [5, 6]]
    assert np.argwhere(corner != base).tolist() == [[0, 0], [0, 7]]
    assert np.array_equal(unmasked, _lesson_weights(317, 8, np.float64, causal=False))
    assert [what for _, what in matrices.rows_broken][0].endswith(
        "whose fourth row sums to half a hundredth less than 1")
    assert "whose first row is NaN" in matrices.rows_broken[2][1]


def _students_check_matrices(student):
    variant = variant_for(SEED, "sdpa", student)
    return test_ex3.check_matrices(variant), variant


def test_every_students_correct_check_matrices_are_correct_and_only_rounded():
    seen = set()
    for student in CLASS:
        matrices, variant = _students_check_matrices(student)
        kinds = [(attn.shape[0], attn.dtype) for attn, _ in matrices.correct]
        assert {dtype for _, dtype in kinds} == {np.dtype(np.float32), np.dtype(np.float64)}
        mediums = [(T, dtype) for T, dtype in kinds if T >= 40]
        assert sorted(dtype.name for _, dtype in mediums) == ["float32", "float64"]
        assert all(40 <= T <= 80 for T, _ in mediums)
        assert all(4 <= T <= 10 for T, _ in kinds if T < 40)
        for attn, what in matrices.correct:
            # 50 times inside np.allclose's tolerance, the loosest right check's
            assert np.abs(_row_sums(attn) - 1).max() <= 1e-5 / 50, (student, what)
            assert not np.triu(attn, k=1).any() and np.all(np.diagonal(attn) > 0)
            assert np.all(attn >= 0)
            # `== 1` meets a row it rejects, in the matrix's own dtype and summed exactly
            assert (attn.sum(axis=-1) != 1).any(), (student, what)
            assert any(math.fsum(map(float, row)) != 1 for row in attn), (student, what)
            T = attn.shape[0]
            assert f"({T}, {T})" in what or T < 40 and "(" not in what.split("matrix")[0]
            assert attn.dtype.name in what
        seen.add(matrices.correct[-1][0].tobytes())
    assert len(seen) == len(CLASS)  # matrices leaked by one say nothing about another's


def test_every_students_broken_check_matrices_are_broken_in_the_stated_fact_only():
    rows, leaks, nans, adjacents = set(), set(), set(), set()
    for student in CLASS:
        matrices, _ = _students_check_matrices(student)
        base = matrices.correct[-1][0]  # (b, b): the broken ones start from it
        T = base.shape[0]
        correct_kinds = {(attn.shape, attn.dtype) for attn, _ in matrices.correct}
        for attn, what in matrices.rows_broken + matrices.future_broken:
            assert (attn.shape, attn.dtype) in correct_kinds, (student, what)
        short, transposed, nan_row = matrices.rows_broken[:3]
        # one row sums to half a hundredth less than 1, the one named; the future stays zero
        off = np.flatnonzero(np.abs(_row_sums(short[0]) - 1) > ROUNDING)
        assert off.tolist() == [_named_row(short[1])], (student, short[1])
        assert abs(_row_sums(short[0])[off[0]] - test_ex3.SHORT_ROW) <= ROUNDING
        assert not np.triu(short[0], k=1).any()
        assert np.array_equal(transposed[0], base.T)
        # a row of NaN, the one named, the others untouched
        nan = np.flatnonzero(np.isnan(nan_row[0]).all(axis=-1))
        assert nan.tolist() == [_named_row(nan_row[1])] and np.isnan(nan_row[0]).sum() == T
        assert np.isnan(np.triu(nan_row[0], k=1)).any()  # NaN on a future key too
        assert matrices.future_broken[2:4] == (transposed, nan_row)  # broken in both facts
        # the edges an off-by-one misses: the first and the last row, each on its own ...
        for (attn, what), row in zip(matrices.rows_broken[3:], (0, T - 1), strict=True):
            off_rows = np.flatnonzero(np.abs(_row_sums(attn) - 1) > ROUNDING)
            assert off_rows.tolist() == [row] and not np.triu(attn, k=1).any(), (student, what)
            assert ("first row" if row == 0 else "last row") in what
        # ... and one weight of 1e-6 just above the diagonal, one in the top-right corner
        for (attn, what), kind in zip(matrices.future_broken[4:], ("adjacent", "corner"),
                                      strict=True):
            future = np.argwhere(np.triu(attn, k=1) != 0)
            assert len(future) == 1 and attn[tuple(future[0])] == pytest.approx(1e-6, rel=1e-9)
            t, j = (int(x) for x in future[0])
            assert (j == t + 1) if kind == "adjacent" else (t, j) == (0, T - 1), (student, what)
            assert np.all(attn >= 0) and np.abs(_row_sums(attn) - 1).max() <= 1e-7
            if kind == "adjacent":
                assert _named_row(what) == t
                adjacents.add(t)
        leak, unmasked = matrices.future_broken[:2]
        # a weight of 1e-6 on one future key, taken from the present: rows still sum to 1
        future = np.argwhere(np.triu(leak[0], k=1) != 0)
        assert len(future) == 1 and leak[0][tuple(future[0])] == pytest.approx(1e-6, rel=1e-9)
        assert np.all(leak[0] >= 0) and np.abs(_row_sums(leak[0]) - 1).max() <= 1e-7
        assert np.all(unmasked[0][np.triu_indices(T, k=1)] > 0)  # every future key weighted
        assert np.abs(_row_sums(unmasked[0]) - 1).max() <= 1e-7
        rows.add(int(off[0]))
        leaks.add(tuple(future[0]))
        nans.add(int(nan[0]))
    assert len(rows) >= 5 and len(leaks) >= 10 and len(nans) >= 5  # drawn, not fixed
    assert len(adjacents) >= 5


def test_check_descriptions_carry_sizes_and_rows_never_values():
    for student in CLASS[:50]:
        matrices, _ = _students_check_matrices(student)
        sizes = {str(attn.shape[0]) for attn, _ in matrices.correct}
        for _, what in matrices.correct + matrices.rows_broken + matrices.future_broken:
            numbers = set(re.findall(r"\d+(?:\.\d+)?(?:e-\d+)?", what))
            assert numbers <= sizes | {"1", "1e-6", "32", "64"}, (student, what)


def test_the_suites_loop_without_rescaling_is_the_corpus_s_slip():
    """Exercise 4's drawn inputs are kept only if `without_rescaling` lands far from the
    reference: it must compute what the catalogued slip computes."""
    from autograder.corpus import pieces

    namespace = {"np": np}
    exec(pieces.BLOCKWISE_NO_RESCALE, namespace)
    for student in MANY[:10]:
        for calls in test_ex4.reference_inputs(variant_for(SEED, "sdpa", student)).values():
            for Q, K, V, causal, block in calls:
                kwargs = {"causal": causal} | ({} if block is None else {"block": block})
                with np.errstate(all="ignore"):
                    slip = namespace["attention_blockwise"](Q, K, V, **kwargs)
                assert np.allclose(test_ex4.without_rescaling(Q, K, V, causal, block), slip,
                                   rtol=1e-5, atol=1e-6)


def test_the_default_variant_keeps_the_lesson_s_exercise_4_inputs():
    def lesson(seed, n, m, d_k, d_v, dtype=np.float64):
        rng = np.random.default_rng(seed)
        arrays = (rng.normal(size=(n, d_k)), rng.normal(size=(m, d_k)), rng.normal(size=(m, d_v)))
        return tuple(a.astype(dtype) for a in arrays)

    inputs = test_ex4.reference_inputs(DEFAULT)
    expected = {
        "blockwise_matches_attention_without_mask": [(lesson(401, 9, 23, 5, 3), False, 4)],
        "blockwise_matches_attention_with_causal_mask": [(lesson(402, 22, 22, 4, 3), True, 5)],
        "blockwise_matches_attention_in_float32": [
            (lesson(403, 7, 19, 6, 4, np.float32), False, 6)],
        "blockwise_matches_attention_for_any_block_size": [
            *((lesson(404, 6, 12, 3, 2), False, block) for block in (1, 7, 12, 100)),
            (lesson(405, 5, 150, 4, 3), False, None)],
    }
    assert list(inputs) == list(expected)
    for name, calls in expected.items():
        for (*got, causal, block), (arrays, want_causal, want_block) in zip(
                inputs[name], calls, strict=True):
            assert (causal, block) == (want_causal, want_block)
            assert all(a.dtype == b.dtype and np.array_equal(a, b)
                       for a, b in zip(got, arrays, strict=True))
    moderate, large = test_ex4.stability_inputs(DEFAULT)
    Q, K, V = lesson(406, 6, 10, 3, 2)
    assert np.array_equal(moderate[0], np.hstack([Q, np.zeros((6, 1))]))
    assert np.array_equal(large[1], np.hstack([K, np.full((10, 1), 40.0)]))
    assert all(np.array_equal(a, b) for a, b in zip(test_ex4.memory_inputs(DEFAULT),
                                                    lesson(408, 2048, 2048, 4, 4), strict=True))


def test_every_students_exercise_4_inputs_keep_what_the_tests_rely_on():
    seen, memory_seen = set(), set()
    for student in CLASS:
        variant = variant_for(SEED, "sdpa", student)
        inputs = test_ex4.reference_inputs(variant)
        shapes = set()
        for name, calls in inputs.items():
            for Q, K, V, causal, _ in calls:
                (n, d_k), (m, d_v) = Q.shape, V.shape
                assert K.shape == (m, d_k) and d_k != d_v and d_k >= 2, (student, name)
                assert (n == m) == causal and causal == (name.endswith("causal_mask"))
                assert Q.dtype == (np.float32 if name.endswith("float32") else np.float64)
                shapes.add((n, m, d_k, d_v))
        for name in ("without_mask", "with_causal_mask", "in_float32"):
            (*_, V, _, block), = inputs[f"blockwise_matches_attention_{name}"]
            assert 1 < block < V.shape[0] and V.shape[0] % block, (student, name)
        blocks = inputs["blockwise_matches_attention_for_any_block_size"]
        m = blocks[0][1].shape[0]
        assert [call[4] for call in blocks][::2] == [1, m, None]
        assert 1 < blocks[1][4] < m and m % blocks[1][4] and blocks[3][4] > m
        default_m = blocks[4][1].shape[0]
        assert default_m > 2 * 64 and default_m % 64
        assert len(shapes) == 5  # the without-mask, causal and float32 tests' shapes differ
        moderate, large = test_ex4.stability_inputs(variant)
        gain = (large[0] @ large[1].T - moderate[0] @ moderate[1].T) / np.sqrt(
            moderate[0].shape[1])  # (n, m)
        assert np.allclose(gain, 800.0) and moderate[1].shape[0] > 3
        seen.add(inputs["blockwise_matches_attention_without_mask"][0][0].tobytes())
        if student in CLASS[:20]:
            # the shapes the limits are set at, values their own
            Q, K, V = test_ex4.memory_inputs(variant)
            assert Q.shape == K.shape == V.shape == (test_ex4.MEMORY_T, test_ex4.MEMORY_D)
            Q, K, V = test_ex4.long_inputs(variant)
            assert Q.shape == (test_ex4.LONG_N, test_ex4.MEMORY_D)
            assert K.shape == V.shape == (test_ex4.LONG_M, test_ex4.MEMORY_D)
            assert test_ex4.LONG_N * test_ex4.LONG_M == test_ex4.MEMORY_T ** 2
            memory_seen.add(test_ex4.memory_inputs(variant)[0][:4].tobytes() + Q[:4].tobytes())
    assert len(seen) == len(CLASS) and len(memory_seen) == 20


# -- the notebook works the numbers out as the grader does -----------------------------------

SHARED = ("_variant_digest", "_draws", "_lesson_weight", "_ex1_fits", "_ex1_numbers",
          "_ex2_numbers", "student_numbers")


def _definitions(source: str) -> dict[str, str]:
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = ast.dump(node)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = ast.dump(node)
    return found


@pytest.fixture(scope="module")
def cells():
    import nbformat

    from sdpa_course.course.notebooks import source_notebook_path

    notebook = nbformat.read(source_notebook_path(REPO), as_version=4)
    return {cell.id: cell.source for cell in notebook.cells}


def test_the_notebook_holds_the_graders_own_code_for_the_numbers(cells):
    mine = _definitions(Path(numbers_module.__file__).read_text())
    theirs = _definitions(cells[NUMBERS_CELL])
    for name in (*SHARED, "LESSON_EX1", "LESSON_EX2", "DEFAULT_LABEL", "LESSON_SCALED_GAPS",
                 "HEAD_DIMENSIONS"):
        assert theirs[name] == mine[name], f"{name} differs from autograder/variants/numbers.py"


def test_the_notebook_shows_each_student_the_numbers_the_grader_expects(cells):
    for student in MANY[:40]:
        namespace = in_notebook(cells, variant_for(SEED, "sdpa", student))  # asserts label
        variant = variant_for(SEED, "sdpa", student)
        assert namespace["EX1"] == {k: v if k == "d_k" else tuple(v)
                                    for k, v in variant.public()["ex1"].items()}
        assert namespace["EX2"] == variant.public()["ex2"]


@pytest.mark.parametrize("folder", ["jdoe ", " jdoe", "jdoe\u00a0", "\tjdoe\n", "JDoe",
                                    "ＪＤＯＥ"])
def test_an_id_typed_another_way_gets_the_numbers_its_notebook_shows(cells, folder):
    """Blanks around an id, its letter case and its Unicode form do not change the numbers, in
    the grader and in the notebook alike (a student may type `JDoe` where the folder is
    `jdoe`)."""
    variant = variant_for(SEED, "sdpa", folder)
    assert variant.label == variant_for(SEED, "sdpa", "jdoe").label
    in_notebook(cells, variant)  # asserts the notebook shows that variant
    typed = replace(variant, student="jdoe")  # typed in the notebook, graded as the folder
    in_notebook(cells, typed)


def test_an_accent_composed_or_decomposed_is_one_student():
    composed, decomposed = "jos\u00e9", "jose\u0301"
    assert (variant_for(SEED, "sdpa", composed).label
            == variant_for(SEED, "sdpa", decomposed).label)


def _numbers_cell_says(cells, *, key: str, typed: str = "", env=None, monkeypatch) -> str:
    import contextlib
    import io

    for name in ("SDPA_STUDENT_ID", "JUPYTERHUB_USER"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    namespace = {"STUDENT_ID": typed}
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(cells["setup"], namespace)
        exec(released_numbers_cell(cells[NUMBERS_CELL], key), namespace)
    return buffer.getvalue() + f"\n[{namespace['YOUR_VARIANT']}]"


def test_the_notebook_finds_the_id_typed_then_the_graders_then_jupyterhub_s(cells, monkeypatch):
    key = numbers_key(SEED)
    label = {s: variant_for(SEED, "sdpa", s).label for s in ("ann", "bo", "cy")}
    said = _numbers_cell_says(cells, key=key, typed=" ann ", monkeypatch=monkeypatch,
                              env={"SDPA_STUDENT_ID": "bo", "JUPYTERHUB_USER": "cy"})
    assert f"[{label['ann']}]" in said and "typed in the cell above" in said
    said = _numbers_cell_says(cells, key=key, monkeypatch=monkeypatch,
                              env={"SDPA_STUDENT_ID": "bo", "JUPYTERHUB_USER": "cy"})
    assert f"[{label['bo']}]" in said
    said = _numbers_cell_says(cells, key=key, monkeypatch=monkeypatch,
                              env={"JUPYTERHUB_USER": "cy"})
    assert f"[{label['cy']}]" in said and "JupyterHub" in said
    said = _numbers_cell_says(cells, key=key, monkeypatch=monkeypatch)
    assert "[default]" in said and "No student id found" in said
    said = _numbers_cell_says(cells, key="", typed="ann", monkeypatch=monkeypatch)
    assert "[default]" in said and "belongs to no course" in said


# -- fair on every variant: the suites and diagnoses in this process -------------------------

def _grade_ex12(case, variant) -> dict[str, tuple]:
    """Exercise -> (score, diagnoses, failed tests) of exercises 1 and 2, in this process."""
    student = InProcessStudent(run_case(case), variant)
    results = run_tests(student, EX12_TESTS)
    diagnoses = diagnose_submission(student, results)
    return {ex: (sum(r.score for r in results if r.exercise == ex), diagnoses[ex],
                 {r.name for r in results if r.exercise == ex and not r.passed})
            for ex in ("ex1", "ex2")}


@pytest.mark.parametrize("student", quick_first(["default", *MANY], 21))
def test_every_correct_and_mistaken_answer_grades_the_same_on_every_variant(student):
    """Every correct style earns every point of exercises 1 and 2 (the variant's answer key
    among them), and every catalogued mistake loses exactly its tests, with its diagnosis."""
    variant = DEFAULT if student == "default" else variant_for(SEED, "sdpa", student)
    for case in cases(variant):
        if case.kind == "hostile" or case.name in ("scipy-without-scipy", "syntax-error"):
            continue  # the sandbox's business: hostile code, modules, a file that fails to parse
        got = _grade_ex12(case, variant)
        for ex in ("ex1", "ex2"):
            expected = (case.scores[ex], case.expected_diagnoses[ex],
                        case.expected_failures[ex] if case.fails is not None else got[ex][2])
            assert got[ex] == expected, (student, case.name, ex)


# Exercise 3(c)'s checks and exercise 4 but its memory test (which needs the sandbox's gauge;
# its inputs differ per student in values only, test_corpus.py grades it on sampled variants).
CHECKS_AND_EX4 = tuple(t for t in collect() if "_passes_" in t.name or (
    t.exercise == "ex4" and t.name != "blockwise_memory_stays_far_below_one_score_matrix"))


class CopyingStudent(InProcessStudent):
    """Arrays copied on each call, as the sandbox's pipe does: the inputs are cached."""

    def call(self, name, *args, readonly=False, **kwargs):
        copied = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
        return super().call(name, *copied, readonly=readonly, **kwargs)


def _checks_and_ex4_failures(case, variant) -> set[str]:
    student = CopyingStudent(run_case(case), variant)
    tests = [t for t in CHECKS_AND_EX4 if t.exercise == "ex3" or case.attempts_ex4]
    return {r.name for r in run_tests(student, tests) if not r.passed}


CHECK_AND_EX4_CASES = [c.name for c in cases() if c.kind == "correct" or (
    c.kind == "mistake" and c.name.startswith(("ex3-check-", "ex4-")))]


@pytest.mark.parametrize("student", quick_first(["default", *MANY[:40]], 21))
def test_right_checks_and_blockwise_earn_full_marks_and_wrong_ones_lose_theirs(student):
    """On every student's own matrices and inputs: each correct style (the answer key among
    them) passes both checks and exercise 4; `== 1`, a tolerance tighter than float32, the
    lower triangle, the diagonal, and each blockwise slip lose exactly their tests."""
    variant = DEFAULT if student == "default" else variant_for(SEED, "sdpa", student)
    run = {t.name for t in CHECKS_AND_EX4}
    for case in cases(variant):
        if case.name not in CHECK_AND_EX4_CASES:
            continue
        expected = {t for ex in ("ex3", "ex4") for t in case.expected_failures[ex]} & run
        if not case.attempts_ex4:
            expected -= {t.name for t in CHECKS_AND_EX4 if t.exercise == "ex4"}
        assert _checks_and_ex4_failures(case, variant) == expected, (student, case.name)


# Exercise 3's attention tests in this process; not the two about what a call does to its
# input arrays (the sandbox's pipe hands each call copies: test_corpus.py grades them there).
EX3_VALUES_AND_PROPERTIES = tuple(t for t in collect() if t.exercise == "ex3" and t.name not in (
    "attention_leaves_its_inputs_unchanged", "attention_accepts_read_only_inputs"))
IN_SANDBOX_ONLY = {"ex3-mutates-input", "ex3-masked-array"}  # their inputs, as the sandbox's


@pytest.mark.parametrize("student", quick_first(MANY, 5))
def test_every_ex3_answer_loses_the_same_tests_on_every_variant(student):
    """Each correct style passes every test of exercise 3 and each mistake fails exactly its
    own, on every student's numbers and shapes: a test whose verdict on one slip depends on
    the numbers grades two students who made it differently (the stability test's one raised
    key let K.reshape(d_k, m) for K.T pass for a quarter of them)."""
    variant = variant_for(SEED, "sdpa", student)
    skipped = {t.name for t in collect() if t.exercise == "ex3"} - {
        t.name for t in EX3_VALUES_AND_PROPERTIES}
    for case in cases(variant):
        if case.kind not in ("correct", "mistake") or case.fails is None or (
                case.name in IN_SANDBOX_ONLY):
            continue
        student_run = CopyingStudent(run_case(case), variant)
        failed = {r.name for r in run_tests(student_run, EX3_VALUES_AND_PROPERTIES)
                  if not r.passed}
        assert failed == set(case.expected_failures["ex3"]) - skipped, (student, case.name)


def _figures(value: float, figures: int = 3) -> float:
    return float(format(value, f".{figures}g"))


def _float32_answers(numbers) -> dict[str, float]:
    """Exercise 2 computed in float32 throughout, the smaller weight as 1 - p."""
    def softmax32(z):
        z = np.asarray(z, dtype=np.float32)  # (2,)
        e = np.exp(z - z.max())  # (2,)
        return e / e.sum()  # (2,)

    p = softmax32([numbers.gap, 0.0])[0]
    p_s = softmax32(np.array([numbers.gap, 0.0]) / np.float32(np.sqrt(numbers.d_k)))[0]
    return {"p_unscaled": p, "p_scaled": p_s, "grad_unscaled": (1 - p) * p,
            "grad_scaled": (1 - p_s) * p_s}


def test_ex2_answers_in_float32_stay_a_tenth_of_a_figure_away_on_every_gap_and_d_k():
    """Beyond a gap of 9, 1 - p in float32 would cost grad_unscaled its third figure."""
    for gap, d_k in itertools.product(range(6, 10), (16, 25, 32, 36, 49, 64, 81, 100, 128)):
        numbers = variant_for(SEED, "sdpa", "x").ex2.__class__(gap, d_k)
        expected, got = numbers.expected(), _float32_answers(numbers)
        for name, value in expected.items():
            assert abs(float(got[name]) - value) <= significant_figures(value) / 10, (gap, d_k)


def test_a_student_who_submits_a_classmates_numbers_loses_those_points():
    """The classmate's answers are wrong for the student: each test of a number that differs
    fails, with no credit carried forward from scores that are not a slip of their own."""
    kept_for_nothing = 0
    for student in MANY:
        variant = variant_for(SEED, "sdpa", student)
        other = classmate(variant)
        copied = next(c for c in cases(other) if c.name == "lesson-style")
        got = _grade_ex12(copied, variant)
        assert got["ex1"][0] == 0 and got["ex1"][2] == {"scores", "weights", "output"}
        lost = {t for t in got["ex2"][2] if t.startswith(("p_", "grad_"))}
        assert lost >= {"p_scaled_is_the_weight_on_the_larger_key",
                        "grad_unscaled_is_the_smaller_keys_own_derivative",
                        "grad_scaled_is_the_smaller_keys_own_derivative"}, student
        kept_for_nothing += got["ex2"][0] - 3  # softmax's 3 points are the student's own
    # p_unscaled is 0.998 to 1.00 for every gap: right for both students, now and then
    assert kept_for_nothing <= 0.75 * len(MANY)


def test_the_lessons_own_numbers_answered_right_are_another_variant_not_a_misconception():
    """Worked before the id was typed (the notebook shows the lesson's numbers until then),
    the answers are right for the lesson: they lose their points, as `other-variant`, never
    diagnosed as a scaling or gradient mistake the student did not make. The graded notebook
    shows the student's own numbers (it runs with the folder's id), so only the answers tell."""
    lesson = next(c for c in cases(DEFAULT) if c.name == "lesson-style")
    for student in MANY:
        got = _grade_ex12(lesson, variant_for(SEED, "sdpa", student))
        for ex, points in (("ex1", 3), ("ex2", 6)):
            score, codes, _ = got[ex]
            assert codes == (["other-variant"] if score < points else []), (student, ex, codes)
        assert got["ex2"][0] < 6  # the scaled gap is never the lesson's 1: p_scaled differs


def test_each_catalogued_slip_of_exercise_1_stays_apart_from_the_right_answers():
    for student in CLASS:
        variant = variant_for(SEED, "sdpa", student)
        right = variant.ex1.expected()
        for code, model in slip_models(variant.ex1):
            apart = max(np.abs(model[name] - right[name]).max() for name in model)
            assert apart >= 30 * HAND, (student, code)


def test_hand_rounding_at_every_step_stays_inside_the_tolerance_on_every_variant():
    """Rounded or cut to three decimals at each step, from the previous step as written."""
    for student in CLASS:
        n = variant_for(SEED, "sdpa", student).ex1
        exact = n.expected()
        for step in (lambda x: np.round(x, 3), lambda x: np.trunc(x * 1000) / 1000):
            scores = step(exact["ex1_scores"])
            weights = step(sdpa_ref.softmax(scores))
            output = step(weights @ n.values)
            assert np.abs(scores - exact["ex1_scores"]).max() <= HAND
            assert np.abs(weights - sdpa_ref.softmax(scores)).max() <= HAND
            assert np.abs(output - weights @ n.values).max() <= 2 * HAND


def test_lesson_numbers_and_the_default_answers_read_as_before():
    assert LESSON_EX1 == {"q": (1, 0), "k1": (1, 0), "k2": (0, 1), "v1": (1, 0), "v2": (0, 1),
                          "d_k": 2}
    assert LESSON_EX2 == {"gap": 8, "d_k": 64}
    assert _figures(DEFAULT.ex2.expected()["grad_unscaled"]) == 3.35e-4


def _rounded_as_defined(attn) -> bool:
    """`test_ex3._rounded` as its docstring defines it, summed one numpy scalar at a time."""
    exact = [math.fsum(float(x) for x in row) for row in attn]
    return (max(abs(total - 1) for total in exact) <= test_ex3.ROUNDING_AT_MOST
            and bool((attn.sum(axis=-1) != 1).any()) and any(total != 1 for total in exact))


def test_the_check_matrices_rounding_test_decides_as_defined():
    """The quick form of `_rounded` (the cheap test first, rows summed from Python floats)
    accepts and rejects what the definition does: every drawn matrix stays the same."""
    rng = np.random.default_rng(7)
    decided = []
    for T, dtype in itertools.product((1, 4, 9, 40, 80), (np.float32, np.float64)):
        for _ in range(30):
            attn = test_ex3.causal_weights(rng, T, dtype)  # (T, T)
            short = attn.copy()  # (T, T)
            short[-1] *= 0.999  # a row beyond rounding
            for matrix in (attn, short, np.eye(T, dtype=dtype)):  # eye: rows exactly 1
                decided.append(test_ex3._rounded(matrix))
                assert decided[-1] == _rounded_as_defined(matrix), (T, dtype)
    assert True in decided and False in decided
