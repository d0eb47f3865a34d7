"""A corpus of written-by-hand submissions, each with the grade it must get.

Correct ones in several styles, one per mistake of the catalogue, and hostile ones. Each
case is assembled from the named pieces of `autograder.corpus.pieces` and states its
expected score and diagnoses per exercise, and for correct and mistake cases the exact set
of tests it fails (a misconception costs only the tests it really breaks); the kit's tests
grade every case and compare, and the demo can grade them as "typical mistakes".

Exercise 4 is optional: a case without `attention_blockwise` expects 0 there, no diagnosis
and every ex4 test failed, and full marks (`expected_score`) still; the cases that attempt it
state its score like any other (`expected_extra_credit`).

    from autograder.corpus import cases
    for case in cases():
        case.name, case.source, case.expected_score, case.expected_diagnoses, case.fails

`cases(variant)` writes exercises 1 and 2 with that student's own numbers (the lesson's by
default): every case expects the same grade on every variant.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from autograder.compare import significant_figures
from autograder.corpus import pieces as p
from autograder.diagnoses.ex1 import scale_slips
from autograder.exercises import EXERCISES
from autograder.variants import DEFAULT, Variant, variant_for

FULL = {"ex1": 3.0, "ex2": 6.0, "ex3": 11.0, "ex4": 4.0}
REQUIRED = {ex: points for ex, points in FULL.items() if not EXERCISES[ex].extra_credit}
CHECKS = (p.ROWS_SUM_ALLCLOSE, p.FUTURE_TRIU)  # exercise 3(c), right
CORRECT_EX3 = (p.ATTENTION_WHERE, p.CAUSAL_MASK_TRIU, *CHECKS)
# Classmates' variants, for the case of a notebook that shows another student's numbers.
CLASSMATES_SEED = "c1a55e00" * 8

# Groups of hidden tests, by name, for the failing sets below.
EX2_SOFTMAX = ("softmax_of_a_vector_matches_reference",
               "softmax_normalises_each_row_of_a_matrix", "softmax_survives_large_scores")
EX2_NUMBERS = ("p_unscaled_is_the_weight_on_the_larger_key",
               "p_scaled_is_the_weight_on_the_larger_key",
               "grad_unscaled_is_the_smaller_keys_own_derivative",
               "grad_scaled_is_the_smaller_keys_own_derivative")
ATTN_UNMASKED = ("attention_weights_without_mask",)
OUT_UNMASKED = ("attention_output_without_mask",)
ATTN_MASKED = ("attention_weights_with_causal_mask",
               "attention_weights_with_mask_hiding_largest_scores")
OUT_MASKED = ("attention_output_with_causal_mask",
              "attention_output_with_mask_hiding_largest_scores")
WEIGHTS = ATTN_UNMASKED + ATTN_MASKED  # the three value tests of attn: 2.75 points
OUTPUTS = OUT_UNMASKED + OUT_MASKED  # the three of out: 2.75 points
VALUES = WEIGHTS + OUTPUTS  # 5.5 points
MASKED = ATTN_MASKED + OUT_MASKED  # 3.5 points
UNMASKED = ATTN_UNMASKED + OUT_UNMASKED  # 2 points
STABLE = ("attention_is_stable_at_large_scores",)
READ_ONLY = ("attention_accepts_read_only_inputs",)
UNCHANGED = ("attention_leaves_its_inputs_unchanged",)
STATELESS = ("attention_answers_each_call_from_its_own_inputs",)
PROPERTIES = STABLE + READ_ONLY + UNCHANGED + STATELESS  # 2 points
CAUSAL_MASK = ("causal_mask_hides_strictly_the_future",)
ATTENTION = VALUES + PROPERTIES  # every test that calls attention: 7.5 points
ROWS_CHECK = ("rows_sum_to_one_passes_attention_and_fails_broken_rows",)  # 1 point
FUTURE_CHECK = ("future_is_zero_passes_causal_attention_and_fails_any_leak",)  # 1 point
BLOCKWISE_VALUES = ("blockwise_matches_attention_without_mask",  # 0.75
                    "blockwise_matches_attention_with_causal_mask",  # 0.75
                    "blockwise_matches_attention_in_float32",  # 0.5
                    "blockwise_matches_attention_for_any_block_size")  # 0.5
BLOCKWISE_CAUSAL = BLOCKWISE_VALUES[1:2]
BLOCKWISE_STABLE = ("blockwise_is_stable_at_large_scores",)  # 0.5
BLOCKWISE_MEMORY = ("blockwise_memory_stays_far_below_one_score_matrix",)  # 1
BLOCKWISE_ALL = BLOCKWISE_VALUES + BLOCKWISE_STABLE + BLOCKWISE_MEMORY  # 4 points


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # "correct", "mistake" or "hostile"
    description: str
    parts: tuple[str, ...]
    scores: dict[str, float] = field(default_factory=lambda: dict(FULL))
    diagnoses: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Exercise -> the names of exactly the tests the case fails; None: not pinned.
    fails: dict[str, tuple[str, ...]] | None = None

    @property
    def attempts_ex4(self) -> bool:
        return _attempts_ex4(self.parts)

    @property
    def source(self) -> str:
        """The submission as a `.py` file."""
        return "\n".join(part.strip("\n") + "\n" for part in (p.IMPORTS, *self.parts))

    @property
    def expected_score(self) -> float:
        """The report's `score`: the required exercises only."""
        return sum(v for ex, v in self.scores.items() if not EXERCISES[ex].extra_credit)

    @property
    def expected_extra_credit(self) -> float:
        return sum(v for ex, v in self.scores.items() if EXERCISES[ex].extra_credit)

    @property
    def expected_diagnoses(self) -> dict[str, list[str]]:
        """Exercise -> codes in the contract's order, [] for the others."""
        return {ex: list(self.diagnoses.get(ex, ())) for ex in FULL}

    @property
    def expected_failures(self) -> dict[str, set[str]] | None:
        """Exercise -> the set of tests it fails, or None when the case does not pin them."""
        if self.fails is None:
            return None
        unattempted = {} if self.attempts_ex4 else {"ex4": set(BLOCKWISE_ALL)}
        return {ex: set(self.fails.get(ex, ())) for ex in FULL} | unattempted

    def write(self, folder: Path | str) -> Path:
        path = Path(folder) / f"{self.name}.py"
        path.write_text(self.source)
        return path


def _attempts_ex4(parts) -> bool:
    """Whether the parts write attention_blockwise (the release's stub is no attempt)."""
    return any("def attention_blockwise" in part and "NotImplementedError" not in part
               for part in parts)


def _full(parts) -> dict[str, float]:
    """Every point, but none for the optional exercise 4 unless the parts attempt it."""
    return FULL if _attempts_ex4(parts) else {**FULL, "ex4": 0.0}


def _correct(name, description, *parts):
    return Case(name, "correct", description, parts, _full(parts), fails={})


def _mistake(name, description, *parts, lose: dict[str, float], codes: dict[str, tuple],
             fails: dict[str, tuple]):
    scores = {ex: points - lose.get(ex, 0.0) for ex, points in _full(parts).items()}
    return Case(name, "mistake", description, parts, scores, codes, fails)


def _hostile(name, description, *parts, scores=None, codes=None):
    return Case(name, "hostile", description, parts, {**_full(parts), **(scores or {})},
                codes or {})


def _forward_difference_step(variant: Variant) -> tuple[float, tuple[str, ...]]:
    """(step, the gradient tests it fails). With the lesson's numbers a forward difference
    with step 1e-2 is just outside three significant figures for grad_unscaled (1.7 units)
    and inside them for grad_scaled. On other gaps 1e-2 may be inside for both (the answer is
    then right to three figures), so other variants take a step of 0.1: 1.5% to 5% off, outside
    three figures (at most 1%) and inside `imprecise-gradient` (20%) for every gap and d_k."""
    if variant.is_default:
        return 1e-2, EX2_NUMBERS[2:3]
    return 0.1, EX2_NUMBERS[2:]


def _p_unscaled_apart(other: Variant, variant: Variant) -> float:
    """How far the classmate's p_unscaled, as written (`pieces.ex2_rounded`), is from the
    student's, in units of its third significant figure: every gap of the family gives 0.998
    to 1.00, so it is often right for both."""
    mine = variant.ex2.expected()["p_unscaled"]
    written = float(format(other.ex2.expected()["p_unscaled"], ".4g"))
    return abs(mine - written) / significant_figures(mine)


def _unlike(other: Variant, variant: Variant) -> bool:
    """Every answer of `other` is far from `variant`'s (p_unscaled far or the same), and none
    earns a point for it by coincidence (scores that are a slip on the student's own dot
    products, an output that is the weighted sum of the student's own values)."""
    mine, theirs = variant.ex1.expected(), other.ex1.expected()
    far = 0.05  # 50 times the three-decimal tolerance
    own_slips = [variant.ex1.raw * f for f in (variant.ex1.scale, *scale_slips(variant.ex1.d_k))]
    ex1_apart = (all(np.abs(mine[k] - theirs[k]).max() > far for k in mine)
                 and all(np.abs(theirs["ex1_scores"] - s).max() > far for s in own_slips)
                 and np.abs(theirs["ex1_weights"] @ variant.ex1.values
                            - theirs["ex1_output"]).max() > far)
    mine, theirs = variant.ex2.expected(), other.ex2.expected()
    ex2_apart = all(abs(mine[k] - theirs[k]) > 5 * significant_figures(mine[k])
                    for k in ("p_scaled", "grad_unscaled", "grad_scaled"))
    return ex1_apart and ex2_apart and abs(_p_unscaled_apart(other, variant) - 1) > 0.1


def classmate(variant: Variant) -> Variant:
    """The first classmate whose numbers give answers all unlike `variant`'s."""
    for index in itertools.count():
        other = variant_for(CLASSMATES_SEED, "sdpa", f"classmate-{index}")
        if _unlike(other, variant):
            return other
    raise AssertionError("unreachable")


def cases(variant: Variant = DEFAULT) -> list[Case]:
    """Every case of the corpus, correct ones first, with `variant`'s numbers."""
    ex1, ex2 = variant.ex1, variant.ex2
    ex1_rounded, ex2_rounded = p.ex1_rounded(ex1), p.ex2_rounded(ex2)
    correct_ex1, correct_ex2 = (ex1_rounded,), (p.SOFTMAX_STABLE, ex2_rounded)
    step, imprecise_fails = _forward_difference_step(variant)
    other = classmate(variant)
    other_fails = EX2_NUMBERS[1:] if _p_unscaled_apart(other, variant) < 1 else EX2_NUMBERS

    def _with_ex3(*ex3_parts, checks=CHECKS):
        return (*correct_ex1, *correct_ex2, *ex3_parts, *checks)

    def _ex3_attention_mistake(name, description, attention, lose, fails, *codes):
        return _mistake(name, description, *_with_ex3(attention, p.CAUSAL_MASK_TRIU),
                        lose={"ex3": lose}, codes={"ex3": codes}, fails={"ex3": fails})

    def _ex3_check_mistake(name, description, rows_check, future_check, fails, *codes):
        return _mistake(name, description, *_with_ex3(p.ATTENTION_WHERE, p.CAUSAL_MASK_TRIU,
                                                       checks=(rows_check, future_check)),
                        lose={"ex3": 1}, codes={"ex3": codes}, fails={"ex3": fails})

    def _ex4_mistake(name, description, blockwise, fails, *codes):
        lose = sum({**dict.fromkeys(BLOCKWISE_VALUES[:2], 0.75),
                    **dict.fromkeys(BLOCKWISE_VALUES[2:] + BLOCKWISE_STABLE, 0.5),
                    BLOCKWISE_MEMORY[0]: 1.0}[test] for test in fails)
        return _mistake(name, description, *_with_ex3(*CORRECT_EX3[:2]), blockwise,
                        lose={"ex4": lose}, codes={"ex4": codes}, fails={"ex4": fails})

    return [
        _correct("lesson-style", "the lesson's own code and hand-rounded numbers",
                 ex1_rounded, p.SOFTMAX_STABLE, ex2_rounded, p.ATTENTION_LESSON,
                 p.CAUSAL_MASK_TRIU, *CHECKS),
        _correct("numpy-computed", "every number computed with numpy, np.where masking",
                 p.ex1_computed(ex1), p.SOFTMAX_STABLE, p.ex2_computed(ex2), p.ATTENTION_WHERE,
                 p.CAUSAL_MASK_TRIU, p.ROWS_SUM_ISCLOSE, p.FUTURE_MASKED, p.BLOCKWISE_KEYS),
        _correct("plain-loops", "plain Python loops and lists, no numpy in the answers",
                 ex1_rounded, p.SOFTMAX_LOOPS, ex2_rounded, p.ATTENTION_LOOPS,
                 p.CAUSAL_MASK_LOOPS, p.ROWS_SUM_LOOPS, p.FUTURE_LOOPS, p.BLOCKWISE_TILES),
        _correct("noisy", "correct, but prints, warns and divides by zero along the way",
                 p.NOISY, *_with_ex3(p.ATTENTION_LESSON, p.CAUSAL_MASK_TRIU)),
        _correct("float32", "float32 throughout softmax and attention, a -1e9 fill",
                 ex1_rounded, p.SOFTMAX_FLOAT32, p.ex2_computed(ex2), p.ATTENTION_FLOAT32,
                 p.CAUSAL_MASK_TRIU, *CHECKS, p.BLOCKWISE_FLOAT32),
        _correct("epsilon-and-finfo", "1e-8 added to the softmax's denominator, finfo.min fill "
                 "(also in blocks, with copies of every input)",
                 p.ex1_computed(ex1), p.SOFTMAX_EPSILON, p.ex2_computed(ex2), p.ATTENTION_FINFO_MIN,
                 p.CAUSAL_MASK_TRIU, *CHECKS, p.BLOCKWISE_COPIES),
        _correct("truncated-numbers", "hand numbers cut, not rounded, to three figures",
                 p.ex1_truncated(ex1), p.SOFTMAX_STABLE, p.ex2_truncated(ex2), *CORRECT_EX3),
        _correct("one-element-answers", "numbers as arrays of shape (1,) and (1, 1), ex1 as "
                 "(1, 2) rows", p.ex1_row_vectors(ex1), p.SOFTMAX_STABLE, p.ex2_one_element(ex2),
                 *CORRECT_EX3),
        # -- exercise 1: the later steps earn their points from the student's own numbers
        _mistake("ex1-no-scaling", "scores not divided by sqrt(d_k), then a right softmax",
                 p.ex1_no_scaling(ex1), *correct_ex2, *CORRECT_EX3,
                 lose={"ex1": 1}, codes={"ex1": ("no-scaling",)}, fails={"ex1": ("scores",)}),
        _mistake("ex1-wrong-scale", "scores divided by d_k, then a right softmax",
                 p.ex1_wrong_scale(ex1), *correct_ex2, *CORRECT_EX3,
                 lose={"ex1": 1}, codes={"ex1": ("wrong-scale",)}, fails={"ex1": ("scores",)}),
        _mistake("ex1-not-normalized", "weights are exp(scores), never normalised",
                 p.ex1_not_normalized(ex1), *correct_ex2, *CORRECT_EX3,
                 lose={"ex1": 1}, codes={"ex1": ("not-normalized",)},
                 fails={"ex1": ("weights",)}),
        # -- a notebook showing a classmate's numbers, answered right for them
        _mistake("other-variant", "a classmate's numbers (a mistyped id), answered right",
                 p.shown_numbers(other), p.ex1_rounded(other.ex1), p.SOFTMAX_STABLE,
                 p.ex2_rounded(other.ex2), *CORRECT_EX3,
                 lose={"ex1": 3, "ex2": 0.75 * len(other_fails)},
                 codes={"ex1": ("other-variant",), "ex2": ("other-variant",)},
                 fails={"ex1": ("scores", "weights", "output"), "ex2": other_fails}),
        # -- exercise 2
        _mistake("ex2-unstable-softmax", "softmax without subtracting the maximum",
                 *correct_ex1, p.SOFTMAX_UNSTABLE, ex2_rounded, *CORRECT_EX3,
                 lose={"ex2": 1}, codes={"ex2": ("unstable-softmax",)},
                 fails={"ex2": ("softmax_survives_large_scores",)}),
        *(_mistake(f"ex2-softmax-subtract-{shift}", f"softmax subtracting each row's {shift}, "
                   "not its maximum: exact for close scores, overflowing for spread ones",
                   *correct_ex1, piece, ex2_rounded, *CORRECT_EX3, lose={"ex2": 1},
                   codes={"ex2": ("unstable-softmax",)},
                   fails={"ex2": ("softmax_survives_large_scores",)})
          for shift, piece in (("min", p.SOFTMAX_SUBTRACT_MIN), ("mean", p.SOFTMAX_SUBTRACT_MEAN),
                               ("first", p.SOFTMAX_SUBTRACT_FIRST))),
        _mistake("ex2-softmax-rows-only", "softmax along axis=1: raises on a 1-D z",
                 *correct_ex1, p.SOFTMAX_ROWS_ONLY, ex2_rounded, *CORRECT_EX3,
                 lose={"ex2": 1}, codes={"ex2": ("crashed",)},
                 fails={"ex2": ("softmax_of_a_vector_matches_reference",)}),
        _mistake("ex2-softmax-axis", "softmax normalised down the columns",
                 *correct_ex1, p.SOFTMAX_AXIS_0, ex2_rounded, *CORRECT_EX3,
                 lose={"ex2": 1}, codes={"ex2": ("softmax-axis",)},
                 fails={"ex2": ("softmax_normalises_each_row_of_a_matrix",)}),
        _mistake("ex2-not-normalized", "softmax never divides by the sum",
                 *correct_ex1, p.SOFTMAX_NOT_NORMALIZED, ex2_rounded, *CORRECT_EX3,
                 lose={"ex2": 2}, codes={"ex2": ("not-normalized",)},
                 fails={"ex2": EX2_SOFTMAX[:2]}),
        _mistake("ex2-wrong-key", "the smaller key's weights reported",
                 *correct_ex1, p.SOFTMAX_STABLE, p.ex2_wrong_key(ex2), *CORRECT_EX3,
                 lose={"ex2": 1.5}, codes={"ex2": ("wrong-key",)},
                 fails={"ex2": EX2_NUMBERS[:2]}),
        _mistake("ex2-no-scaling", "the scaled numbers computed without the 1/8",
                 *correct_ex1, p.SOFTMAX_STABLE, p.ex2_no_scaling(ex2), *CORRECT_EX3,
                 lose={"ex2": 1.5}, codes={"ex2": ("no-scaling",)},
                 fails={"ex2": EX2_NUMBERS[1::2]}),
        _mistake("ex2-wrong-scale", "scores divided by d_k = 64, the gradient right for that",
                 *correct_ex1, p.SOFTMAX_STABLE, p.ex2_wrong_scale(ex2), *CORRECT_EX3,
                 lose={"ex2": 1.5}, codes={"ex2": ("wrong-scale",)},
                 fails={"ex2": EX2_NUMBERS[1::2]}),
        _mistake("ex2-wrong-gradient", "the cross derivative -p1 p2 instead of p2 (1 - p2)",
                 *correct_ex1, p.SOFTMAX_STABLE, p.ex2_wrong_gradient(ex2), *CORRECT_EX3,
                 lose={"ex2": 1.5}, codes={"ex2": ("wrong-gradient",)},
                 fails={"ex2": EX2_NUMBERS[2:]}),
        _mistake("ex2-raw-score-gradient", "the scaled gradient taken w.r.t. the raw score",
                 *correct_ex1, p.SOFTMAX_STABLE, p.ex2_raw_score_gradient(ex2), *CORRECT_EX3,
                 lose={"ex2": 0.75}, codes={"ex2": ("raw-score-gradient",)},
                 fails={"ex2": EX2_NUMBERS[3:]}),
        _mistake("ex2-forward-difference", "gradients by a forward difference with a large "
                 "step", *correct_ex1, p.SOFTMAX_STABLE, p.ex2_forward_difference(ex2, step),
                 *CORRECT_EX3, lose={"ex2": 0.75 * len(imprecise_fails)},
                 codes={"ex2": ("imprecise-gradient",)}, fails={"ex2": imprecise_fails}),
        # -- exercise 3: attention. A mistake in the computation costs the six value tests
        # (5.5 points), a mistake in the masking the four masked ones (3.5); the property
        # tests (stable, read-only, unchanged inputs, stateless) hold whatever is computed.
        _ex3_attention_mistake("ex3-no-scaling", "scores not divided by sqrt(d_k)",
                               p.ATTENTION_NO_SCALING, 5.5, VALUES, "no-scaling"),
        _ex3_attention_mistake("ex3-scale-d-k", "scores divided by d_k",
                               p.ATTENTION_SCALE_D_K, 5.5, VALUES, "wrong-scale"),
        _ex3_attention_mistake("ex3-scale-d-v", "scores divided by sqrt(d_v)",
                               p.ATTENTION_SCALE_D_V, 5.5, VALUES, "wrong-scale"),
        _ex3_attention_mistake("ex3-scale-sqrt-n", "scores divided by sqrt(Q.shape[0]), the "
                               "number of queries", p.ATTENTION_SCALE_SQRT_N, 5.5, VALUES,
                               "wrong-scale"),
        _ex3_attention_mistake("ex3-scale-sqrt-m", "scores divided by sqrt(len(K)), the "
                               "number of keys", p.ATTENTION_SCALE_SQRT_M, 5.5, VALUES,
                               "wrong-scale"),
        _ex3_attention_mistake("ex3-softmax-axis", "softmax over the queries",
                               p.ATTENTION_SOFTMAX_AXIS, 5.5, VALUES, "softmax-axis"),
        _ex3_attention_mistake("ex3-not-normalized", "weights never divided by their sum",
                               p.ATTENTION_NOT_NORMALIZED, 5.5, VALUES, "not-normalized"),
        _ex3_attention_mistake("ex3-unstable-softmax", "no max subtraction before exp",
                               p.ATTENTION_UNSTABLE, 0.5, STABLE, "unstable-softmax"),
        _ex3_attention_mistake("ex3-subtract-min", "each row's smallest visible score "
                               "subtracted before exp, not its largest",
                               p.ATTENTION_SUBTRACT_MIN, 0.5, STABLE, "unstable-softmax"),
        _ex3_attention_mistake("ex3-mask-ignored", "the mask is never applied",
                               p.ATTENTION_MASK_IGNORED, 3.5, MASKED, "mask-ignored"),
        _ex3_attention_mistake("ex3-mask-inverted", "True treated as keep (the -1e9 fill)",
                               p.ATTENTION_MASK_INVERTED, 3.5, MASKED, "mask-inverted"),
        _ex3_attention_mistake("ex3-mask-after-softmax", "masked weights zeroed afterwards",
                               p.ATTENTION_MASK_AFTER_SOFTMAX, 3.5, MASKED,
                               "mask-after-softmax"),
        _ex3_attention_mistake("ex3-mask-zero-fill", "masked scores set to 0",
                               p.ATTENTION_MASK_ZERO_FILL, 3.5, MASKED, "mask-zero-fill"),
        _ex3_attention_mistake("ex3-mask-none-broken", "all scores -1e9 when mask is None",
                               p.ATTENTION_MASK_NONE_BROKEN, 2, UNMASKED, "mask-none-broken"),
        _ex3_attention_mistake("ex3-transposed", "K @ Q.T instead of Q @ K.T",
                               p.ATTENTION_TRANSPOSED, 5.5, VALUES, "transposed"),
        _ex3_attention_mistake("ex3-transposed-q", "Q.T @ K: crashes unless n = m = d_k",
                               p.ATTENTION_TRANSPOSED_QT, 5.5, VALUES, "transposed"),
        # fair5: slips the models name only since fair5 (a fitted fill or factor, Q @ K)
        _ex3_attention_mistake("ex3-mask-fill-minus-one", "masked scores set to -1, not to a "
                               "large negative number", p.ATTENTION_MASK_FILL_MINUS_ONE, 3.5,
                               MASKED, "mask-zero-fill"),
        _ex3_attention_mistake("ex3-scale-log-d-k", "scores divided by log(d_k)",
                               p.ATTENTION_SCALE_LOG_D_K, 5.5, VALUES, "wrong-scale"),
        _ex3_attention_mistake("ex3-not-transposed", "Q @ K: crashes unless d_k = m",
                               p.ATTENTION_NOT_TRANSPOSED, 5.5, VALUES, "transposed"),
        _ex3_attention_mistake("ex3-if-mask", "`if mask:`, which raises for any mask array",
                               p.ATTENTION_IF_MASK, 3.5, MASKED, "crashed"),
        _ex3_attention_mistake("ex3-mask-required", "def attention(Q, K, V, mask): no default",
                               p.ATTENTION_MASK_REQUIRED, 2, UNMASKED, "mask-none-broken"),
        _ex3_attention_mistake("ex3-out-from-k", "out = attn @ K, not attn @ V",
                               p.ATTENTION_OUT_FROM_K, 2.75, OUTPUTS, "wrong-shape"),
        _mistake("ex2-softmax-no-keepdims", "softmax divides by the row sums without keepdims; "
                 "attention calls it", *correct_ex1, p.SOFTMAX_NO_KEEPDIMS, ex2_rounded,
                 p.ATTENTION_CALLS_SOFTMAX, p.CAUSAL_MASK_TRIU, *CHECKS,
                 lose={"ex2": 1, "ex3": 5.5},
                 codes={"ex2": ("crashed",), "ex3": ("not-normalized",)},
                 fails={"ex2": ("softmax_normalises_each_row_of_a_matrix",), "ex3": VALUES}),
        _ex3_attention_mistake("ex3-returns-swapped", "returns (attn, out)",
                               p.ATTENTION_RETURNS_SWAPPED, 5.5, VALUES, "returns-swapped"),
        # weights holding the right values transposed are `transposed`, as their tests'
        # messages say (issue 27)
        _ex3_attention_mistake("ex3-wrong-shape", "returns out transposed",
                               p.ATTENTION_WRONG_SHAPE, 2.75, OUTPUTS, "wrong-shape"),
        _ex3_attention_mistake("ex3-attn-transposed", "returns attn transposed, out right",
                               p.ATTENTION_ATTN_TRANSPOSED, 2.75, WEIGHTS, "transposed"),
        _ex3_attention_mistake("ex3-attn-swapaxes", "loops over the queries, then returns "
                               "the weights with their axes swapped",
                               p.ATTENTION_ATTN_SWAPAXES, 2.75, WEIGHTS, "transposed"),
        # an uncatalogued slip: no code, and messages that say what was expected, never a
        # cause no probe found (issue 27: "exp overflows" for code that subtracts the maximum)
        _ex3_attention_mistake("ex3-reshape-for-transpose", "K.reshape(d_k, m) where K.T was "
                               "meant, the maximum subtracted all the same",
                               p.ATTENTION_RESHAPE_FOR_TRANSPOSE, 6, VALUES + STABLE),
        _ex3_attention_mistake("ex3-mutates-input", "divides Q in place",
                               p.ATTENTION_MUTATES_INPUT, 1, READ_ONLY + UNCHANGED,
                               "mutates-input"),
        _ex3_attention_mistake("ex3-stateful", "caches answers by shape",
                               p.ATTENTION_STATEFUL, 0.5, STATELESS, "stateful"),
        _ex3_attention_mistake("ex3-no-scaling-and-zero-fill", "two mistakes at once",
                               p.ATTENTION_NO_SCALING_ZERO_FILL, 5.5, VALUES, "no-scaling",
                               "mask-zero-fill"),
        _mistake("ex3-float32-no-scaling", "float32 throughout, scores not scaled",
                 *correct_ex1, p.SOFTMAX_FLOAT32, ex2_rounded, p.ATTENTION_FLOAT32_NO_SCALING,
                 p.CAUSAL_MASK_TRIU, *CHECKS, lose={"ex3": 5.5}, codes={"ex3": ("no-scaling",)},
                 fails={"ex3": VALUES}),
        _ex3_attention_mistake("ex3-stub-left", "the release's NotImplementedError stub",
                               p.ATTENTION_STUB, 7.5, ATTENTION, "not-answered"),
        _ex3_attention_mistake("ex3-masked-array", "returns numpy masked arrays",
                               p.ATTENTION_MASKED_ARRAY, 7.5, ATTENTION, "unsupported-type"),
        # -- exercise 3: causal mask
        _mistake("ex3-causal-diagonal", "causal_mask also hides the diagonal",
                 *_with_ex3(p.ATTENTION_WHERE, p.CAUSAL_MASK_DIAGONAL),
                 lose={"ex3": 1.5}, codes={"ex3": ("causal-diagonal",)},
                 fails={"ex3": CAUSAL_MASK}),
        _mistake("ex3-causal-wrong-triangle", "causal_mask hides the past",
                 *_with_ex3(p.ATTENTION_WHERE, p.CAUSAL_MASK_WRONG_TRIANGLE),
                 lose={"ex3": 1.5}, codes={"ex3": ("causal-wrong-triangle",)},
                 fails={"ex3": CAUSAL_MASK}),
        _mistake("ex3-causal-mask-missing", "causal_mask never written",
                 *_with_ex3(p.ATTENTION_WHERE), lose={"ex3": 1.5},
                 codes={"ex3": ("missing-name",)}, fails={"ex3": CAUSAL_MASK}),
        # -- exercise 3(c): the checks, each graded on its own
        _ex3_check_mistake("ex3-check-exact", "rows_sum_to_one compares the sums with == 1",
                           p.ROWS_SUM_EXACT, p.FUTURE_TRIU, ROWS_CHECK, "check-exact-float"),
        _ex3_check_mistake("ex3-check-too-tight", "rows_sum_to_one with math.isclose's "
                           "default rel_tol=1e-9, tighter than float32 rounding",
                           p.ROWS_SUM_TOO_TIGHT, p.FUTURE_TRIU, ROWS_CHECK, "check-exact-float"),
        _ex3_check_mistake("ex3-check-lower-triangle", "future_is_zero looks below the diagonal",
                           p.ROWS_SUM_ALLCLOSE, p.FUTURE_LOWER, FUTURE_CHECK,
                           "check-lower-triangle"),
        _ex3_check_mistake("ex3-check-diagonal", "future_is_zero also wants a zero diagonal",
                           p.ROWS_SUM_ALLCLOSE, p.FUTURE_DIAGONAL, FUTURE_CHECK,
                           "check-diagonal"),
        _ex3_check_mistake("ex3-check-lower-and-diagonal", "future_is_zero looks on and below "
                           "the diagonal", p.ROWS_SUM_ALLCLOSE, p.FUTURE_LOWER_AND_DIAGONAL,
                           FUTURE_CHECK, "check-lower-triangle", "check-diagonal"),
        _mistake("ex3-checks-missing", "the two checks never written",
                 *_with_ex3(p.ATTENTION_WHERE, p.CAUSAL_MASK_TRIU, checks=()),
                 lose={"ex3": 2}, codes={"ex3": ("missing-name",)},
                 fails={"ex3": ROWS_CHECK + FUTURE_CHECK}),
        # -- exercise 4 (extra credit): a mistake costs only the tests it breaks, never more
        # than exercise 4's own points, and the required exercises keep all of theirs. The
        # memory test compares some rows of its answer with the reference, or with what a
        # catalogued slip computes (`test_ex4.slip_explains`): a value mistake costs only the
        # value tests, an answer that skips the work at the memory test's size the memory too.
        _ex4_mistake("ex4-no-rescale", "running maximum updated, old sums never rescaled",
                     p.BLOCKWISE_NO_RESCALE, BLOCKWISE_VALUES, "blockwise-no-rescale"),
        _ex4_mistake("ex4-per-block-normaliser", "the running output divided by the total at "
                     "every block", p.BLOCKWISE_PER_BLOCK_NORMALISER, BLOCKWISE_VALUES,
                     "blockwise-per-block-normaliser"),
        _ex4_mistake("ex4-not-divided", "the running weighted sum returned, never divided by "
                     "the total", p.BLOCKWISE_NOT_DIVIDED, BLOCKWISE_VALUES, "not-normalized"),
        _ex4_mistake("ex4-causal-off-by-one", "key j hidden when j >= t: a query misses itself",
                     p.BLOCKWISE_CAUSAL_OFF_BY_ONE, BLOCKWISE_CAUSAL,
                     "blockwise-causal-off-by-one"),
        _ex4_mistake("ex4-scale-d-v", "scores divided by sqrt(d_v), as exercise 3's slip",
                     p.BLOCKWISE_SCALE_D_V, BLOCKWISE_VALUES, "wrong-scale"),
        _ex4_mistake("ex4-causal-ignored", "causal=True changes nothing",
                     p.BLOCKWISE_CAUSAL_IGNORED, BLOCKWISE_CAUSAL, "mask-ignored"),
        _ex4_mistake("ex4-unstable", "no running maximum at all: exp of the raw scores",
                     p.BLOCKWISE_UNSTABLE, BLOCKWISE_STABLE, "unstable-softmax"),
        _ex4_mistake("ex4-full-matrix", "right values from the whole (n, m) score matrix",
                     p.BLOCKWISE_FULL_MATRIX, BLOCKWISE_MEMORY, "blockwise-quadratic-memory"),
        _ex4_mistake("ex4-full-causal-mask", "blocks of keys, but the whole (n, m) mask first",
                     p.BLOCKWISE_FULL_CAUSAL_MASK, BLOCKWISE_MEMORY,
                     "blockwise-quadratic-memory"),
        # issue 25: the memory point is the algorithm's. Right values a query row at a time
        # (Exercise 3's attention per row, `block` ignored) keep the value and stability
        # points; a buffer made before the call and written in it is memory all the same.
        _ex4_mistake("ex4-row-at-a-time", "Exercise 3's attention called one query row at a "
                     "time, block ignored", p.BLOCKWISE_ROW_AT_A_TIME, BLOCKWISE_MEMORY,
                     "blockwise-keys-not-blocked"),
        _ex4_mistake("ex4-preallocated-buffer", "the whole (n, m) scores written into a "
                     "buffer made at import", p.BLOCKWISE_PREALLOCATED, BLOCKWISE_MEMORY,
                     "blockwise-quadratic-memory"),
        # issue 27: a slip in slow code is named from the calls that answered in time, and
        # a causal slip that gives NaN costs the causal value test only
        _ex4_mistake("ex4-key-by-key-no-scaling", "an online softmax a key and a query at a "
                     "time in plain Python, never divided by sqrt(d_k): too slow at T = 2048",
                     p.BLOCKWISE_KEY_BY_KEY_NO_SCALING, BLOCKWISE_VALUES + BLOCKWISE_MEMORY,
                     "no-scaling", "timeout"),
        _mistake("ex4-blocks-reversed", "key blocks visited last to first: NaN with the mask "
                 "where a query's first block is all in its future",
                 *_with_ex3(*CORRECT_EX3[:2]), p.BLOCKWISE_BLOCKS_REVERSED,
                 lose={"ex4": 0.75}, codes={"ex4": ()}, fails={"ex4": BLOCKWISE_CAUSAL}),
        # issue 27's fairness round: public online-softmax and flash-attention code, ported
        # to the exercise's signature (`pieces.PORTED` names each one's source). Right ones
        # in any loop order keep every point; a whole (n, m) kept in pieces costs the memory
        # point; one mistake costs what it breaks; too slow for the memory test's size costs
        # that point only (docs/CONTRACT-ADDITIONS.md says why).
        *(_correct(f"ex4-port-{name}", f"ported from {p.PORTED[name][1]}",
                   *_with_ex3(*CORRECT_EX3[:2]), p.PORTED[name][0])
          for name in ("urw7rs-chunk-summaries", "samarth-naive-flash", "samarth-two-pass",
                       "mog9-rows", "kaminyou-v1")),
        _ex4_mistake("ex4-port-ezhoureal-tiles", "ported from "
                     f"{p.PORTED['ezhoureal-tiles'][1]}: its is_causal is never used",
                     p.PORTED["ezhoureal-tiles"][0], BLOCKWISE_CAUSAL, "mask-ignored"),
        _ex4_mistake("ex4-port-wangshankun-no-scale", "ported from "
                     f"{p.PORTED['wangshankun-no-scale'][1]}: scores never divided by sqrt(d)",
                     p.PORTED["wangshankun-no-scale"][0], BLOCKWISE_VALUES, "no-scaling"),
        *(_ex4_mistake(f"ex4-port-{name}", f"ported from {p.PORTED[name][1]}: every block's "
                       "weights kept until the end", p.PORTED[name][0], BLOCKWISE_MEMORY,
                       "blockwise-quadratic-memory")
          for name in ("pannagas-partials", "samarth-kept-chunks")),
        _ex4_mistake("ex4-port-oreo-key-by-key", "ported from "
                     f"{p.PORTED['oreo-key-by-key'][1]}: a query and a key at a time, right, "
                     "too slow at T = 2048", p.PORTED["oreo-key-by-key"][0], BLOCKWISE_MEMORY,
                     "timeout"),
        _correct("ex4-stub-left", "the release's stub for the optional exercise: no extra "
                 "credit, nothing lost", *_with_ex3(*CORRECT_EX3[:2]), p.BLOCKWISE_STUB),
        # -- modules the grader does not have
        _mistake("scipy-without-scipy", "correct with scipy.special.softmax; no scipy here",
                 *correct_ex1, p.SOFTMAX_SCIPY, p.ex2_computed(ex2), p.ATTENTION_SCIPY,
                 p.CAUSAL_MASK_TRIU, *CHECKS, lose={"ex2": 6, "ex3": 7.5},
                 codes={"ex2": ("missing-name", "crashed", "missing-module"),
                        "ex3": ("crashed", "missing-module")},
                 fails={"ex2": EX2_SOFTMAX + EX2_NUMBERS, "ex3": ATTENTION}),
        # -- the whole file
        _mistake("syntax-error", "a missing colon: the file does not parse",
                 *_with_ex3(p.ATTENTION_WHERE, p.SYNTAX_ERROR), lose=REQUIRED,
                 codes={ex: ("missing-name", "syntax-error") for ex in REQUIRED},
                 fails={"ex1": ("scores", "weights", "output"), "ex2": EX2_SOFTMAX + EX2_NUMBERS,
                        "ex3": CAUSAL_MASK + ATTENTION + ROWS_CHECK + FUTURE_CHECK}),
        # -- hostile
        _hostile("patched-numpy", "patches numpy.allclose and friends, then gets it wrong",
                 p.PATCH_NUMPY, *_with_ex3(p.ATTENTION_NO_SCALING, p.CAUSAL_MASK_TRIU,
                                           checks=(p.ROWS_SUM_ISCLOSE, p.FUTURE_TRIU)),
                 scores={"ex3": 5.5}, codes={"ex3": ("no-scaling",)}),
        _hostile("import-reference", "imports attention from sdpa_ref",
                 *correct_ex1, *correct_ex2, p.IMPORT_REFERENCE,
                 scores={"ex3": 0}, codes={"ex3": ("missing-name", "forbidden-import")}),
        _hostile("import-reference-tricks", "reaches sdpa_ref and autograder by other spellings",
                 *correct_ex1, p.IMPORT_REFERENCE_TRICKS, ex2_rounded, *CORRECT_EX3,
                 scores={"ex2": 3}, codes={"ex2": ("missing-name", "forbidden-import")}),
        _hostile("import-reference-in-call", "imports sdpa_ref inside attention",
                 *correct_ex1, *correct_ex2, p.IMPORT_REFERENCE_IN_CALL, p.CAUSAL_MASK_TRIU,
                 *CHECKS, scores={"ex3": 3.5}, codes={"ex3": ("forbidden-import",)}),
        _hostile("exit-at-import", "os._exit in the middle of the file",
                 *correct_ex1, p.EXIT_AT_IMPORT, *correct_ex2, *CORRECT_EX3),
        _hostile("exit-in-call", "attention calls os._exit",
                 *correct_ex1, *correct_ex2, p.EXIT_IN_CALL, p.CAUSAL_MASK_TRIU, *CHECKS,
                 scores={"ex3": 3.5}, codes={"ex3": ("crashed",)}),
        _hostile("loop-at-import", "an endless loop between two exercises",
                 *correct_ex1, p.LOOP_AT_IMPORT, *correct_ex2, *CORRECT_EX3),
        _hostile("loop-in-call", "attention never returns",
                 *correct_ex1, *correct_ex2, p.LOOP_IN_CALL, p.CAUSAL_MASK_TRIU, *CHECKS,
                 scores={"ex3": 3.5}, codes={"ex3": ("timeout",)}),
        _hostile("memory-hog-at-import", "allocates 16 GiB at import",
                 *correct_ex1, p.MEMORY_HOG_AT_IMPORT, *correct_ex2, *CORRECT_EX3),
        _hostile("memory-hog-in-call", "causal_mask allocates 64 GiB",
                 *correct_ex1, *correct_ex2, p.ATTENTION_WHERE, p.MEMORY_HOG_IN_CALL, *CHECKS,
                 scores={"ex3": 9.5}, codes={"ex3": ("memory-limit",)}),
        _hostile("huge-output", "prints megabytes to stdout and stderr",
                 p.HUGE_OUTPUT, *_with_ex3(p.ATTENTION_WHERE, p.CAUSAL_MASK_TRIU)),
        _hostile("background-processes", "starts a child and a setsid daemon",
                 p.BACKGROUND_PROCESSES, *_with_ex3(p.ATTENTION_WHERE, p.CAUSAL_MASK_TRIU)),
        _hostile("zeros-of-the-right-shape", "attention returns zeros: no property points",
                 *_with_ex3(p.ATTENTION_ZEROS, p.CAUSAL_MASK_TRIU), scores={"ex3": 3.5},
                 codes={"ex3": ("not-normalized",)}),
        _hostile("nan-of-the-right-shape", "attention returns NaN: no property points",
                 *_with_ex3(p.ATTENTION_NAN, p.CAUSAL_MASK_TRIU), scores={"ex3": 3.5}),
        _hostile("ex4-memory-peak-reset", "the whole (n, m) matrix, then resets "
                 "tracemalloc's peak", *_with_ex3(*CORRECT_EX3[:2]), p.BLOCKWISE_RESET_PEAK,
                 scores={"ex4": 3}, codes={"ex4": ("blockwise-quadratic-memory",)}),
        _hostile("ex4-memory-measure-patched", "the whole (n, m) matrix, and the worker's "
                 "measuring functions patched", *_with_ex3(*CORRECT_EX3[:2]),
                 p.BLOCKWISE_PATCHED_MEASURE, scores={"ex4": 3},
                 codes={"ex4": ("blockwise-quadratic-memory",)}),
        _hostile("ex4-memory-in-mmap", "the whole (n, m) matrix in an anonymous mmap",
                 *_with_ex3(*CORRECT_EX3[:2]), p.BLOCKWISE_IN_MMAP, scores={"ex4": 3},
                 codes={"ex4": ("blockwise-quadratic-memory",)}),
        _hostile("ex4-memory-in-child", "the whole (n, m) matrix in a forked process",
                 *_with_ex3(*CORRECT_EX3[:2]), p.BLOCKWISE_IN_CHILD, scores={"ex4": 3},
                 codes={"ex4": ("crashed",)}),  # a measured call may not fork
        # -- wrong answers that once earned points (attack2): zeros carried forward, a
        # softmax that is none or never exponentiates "stable", checks off by one at an edge,
        # and a blockwise answer that returns something cheap at the memory test's size
        _hostile("ex1-all-zeros", "(0, 0) for every answer of exercise 1",
                 p.EX1_ZEROS, *correct_ex2, *CORRECT_EX3,
                 scores={"ex1": 0}, codes={"ex1": ("not-normalized",)}),
        _hostile("ex2-softmax-ones", "softmax returns ones; the numbers computed with it",
                 *correct_ex1, p.SOFTMAX_ONES, p.ex2_computed(ex2), *CORRECT_EX3,
                 scores={"ex2": 0.75}, codes={"ex2": ("not-normalized",)}),
        _hostile("ex2-softmax-no-exp", "softmax never exponentiates; the numbers computed "
                 "with it", *correct_ex1, p.SOFTMAX_NO_EXP, p.ex2_computed(ex2), *CORRECT_EX3,
                 scores={"ex2": 0}),
        _hostile("ex3-check-skip-last-row", "rows_sum_to_one never looks at the last row",
                 *_with_ex3(p.ATTENTION_WHERE, p.CAUSAL_MASK_TRIU,
                            checks=(p.ROWS_SUM_SKIP_LAST, p.FUTURE_TRIU)), scores={"ex3": 10}),
        _hostile("ex3-check-triu-k2", "future_is_zero misses the keys just after each query",
                 *_with_ex3(p.ATTENTION_WHERE, p.CAUSAL_MASK_TRIU,
                            checks=(p.ROWS_SUM_ALLCLOSE, p.FUTURE_TRIU_K2)), scores={"ex3": 10}),
        _hostile("ex4-not-blockwise-at-size", "the whole (n, m) softmax, and the queries "
                 "themselves at the memory test's size", *_with_ex3(*CORRECT_EX3[:2]),
                 p.BLOCKWISE_NOT_AT_SIZE, scores={"ex4": 3},
                 codes={"ex4": ("blockwise-keys-not-blocked",)}),
        _hostile("read-hidden-files", "looks for the hidden suites and the answer key",
                 p.READ_HIDDEN_FILES, *correct_ex2, *CORRECT_EX3,
                 scores={"ex1": 0}, codes={"ex1": ("missing-name",)}),
    ]


def case(name: str, variant: Variant = DEFAULT) -> Case:
    """The case called `name`, with `variant`'s numbers."""
    for found in cases(variant):
        if found.name == name:
            return found
    raise KeyError(name)
