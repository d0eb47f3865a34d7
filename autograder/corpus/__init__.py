"""A corpus of written-by-hand submissions, each with the grade it must get.

Correct ones in several styles, one per mistake of the catalogue, and hostile ones. Each
case is assembled from the named pieces of `autograder.corpus.pieces` and states its
expected score and diagnoses per exercise, and for correct and mistake cases the exact set
of tests it fails (a misconception costs only the tests it really breaks); the kit's tests
grade every case and compare, and the demo can grade them as "typical mistakes".

    from autograder.corpus import cases
    for case in cases():
        case.name, case.source, case.expected_score, case.expected_diagnoses, case.fails
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.corpus import pieces as p

FULL = {"ex1": 3.0, "ex2": 6.0, "ex3": 11.0}
CORRECT_EX1, CORRECT_EX2, CORRECT_EX3 = (
    (p.EX1_ROUNDED,),
    (p.SOFTMAX_STABLE, p.EX2_ROUNDED),
    (p.ATTENTION_WHERE, p.CAUSAL_MASK_TRIU),
)

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
PROPERTIES = STABLE + READ_ONLY + UNCHANGED + STATELESS  # 4 points
CAUSAL_MASK = ("causal_mask_hides_strictly_the_future",)
ATTENTION = VALUES + PROPERTIES  # every test that calls attention: 9.5 points


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
    def source(self) -> str:
        """The submission as a `.py` file."""
        return "\n".join(part.strip("\n") + "\n" for part in (p.IMPORTS, *self.parts))

    @property
    def expected_score(self) -> float:
        return sum(self.scores.values())

    @property
    def expected_diagnoses(self) -> dict[str, list[str]]:
        """Exercise -> codes in the contract's order, [] for the others."""
        return {ex: list(self.diagnoses.get(ex, ())) for ex in FULL}

    @property
    def expected_failures(self) -> dict[str, set[str]] | None:
        """Exercise -> the set of tests it fails, or None when the case does not pin them."""
        if self.fails is None:
            return None
        return {ex: set(self.fails.get(ex, ())) for ex in FULL}

    def write(self, folder: Path | str) -> Path:
        path = Path(folder) / f"{self.name}.py"
        path.write_text(self.source)
        return path


def _correct(name, description, *parts):
    return Case(name, "correct", description, parts, fails={})


def _mistake(name, description, *parts, lose: dict[str, float], codes: dict[str, tuple],
             fails: dict[str, tuple]):
    scores = {ex: FULL[ex] - lose.get(ex, 0.0) for ex in FULL}
    return Case(name, "mistake", description, parts, scores, codes, fails)


def _hostile(name, description, *parts, scores=None, codes=None):
    return Case(name, "hostile", description, parts, {**FULL, **(scores or {})}, codes or {})


def _with_ex3(*ex3_parts):
    return (*CORRECT_EX1, *CORRECT_EX2, *ex3_parts)


def _ex3_attention_mistake(name, description, attention, lose, fails, *codes):
    return _mistake(name, description, *_with_ex3(attention, p.CAUSAL_MASK_TRIU),
                    lose={"ex3": lose}, codes={"ex3": codes}, fails={"ex3": fails})


def cases() -> list[Case]:
    """Every case of the corpus, correct ones first."""
    return [
        _correct("lesson-style", "the lesson's own code and hand-rounded numbers",
                 p.EX1_ROUNDED, p.SOFTMAX_STABLE, p.EX2_ROUNDED, p.ATTENTION_LESSON,
                 p.CAUSAL_MASK_TRIU),
        _correct("numpy-computed", "every number computed with numpy, np.where masking",
                 p.EX1_COMPUTED, p.SOFTMAX_STABLE, p.EX2_COMPUTED, p.ATTENTION_WHERE,
                 p.CAUSAL_MASK_TRIU),
        _correct("plain-loops", "plain Python loops and lists, no numpy in the answers",
                 p.EX1_ROUNDED, p.SOFTMAX_LOOPS, p.EX2_ROUNDED, p.ATTENTION_LOOPS,
                 p.CAUSAL_MASK_LOOPS),
        _correct("noisy", "correct, but prints, warns and divides by zero along the way",
                 p.NOISY, *_with_ex3(p.ATTENTION_LESSON, p.CAUSAL_MASK_TRIU)),
        _correct("float32", "float32 throughout softmax and attention, a -1e9 fill",
                 p.EX1_ROUNDED, p.SOFTMAX_FLOAT32, p.EX2_COMPUTED, p.ATTENTION_FLOAT32,
                 p.CAUSAL_MASK_TRIU),
        _correct("epsilon-and-finfo", "1e-8 added to the softmax's denominator, finfo.min fill",
                 p.EX1_COMPUTED, p.SOFTMAX_EPSILON, p.EX2_COMPUTED, p.ATTENTION_FINFO_MIN,
                 p.CAUSAL_MASK_TRIU),
        _correct("truncated-numbers", "hand numbers cut, not rounded, to three figures",
                 p.EX1_TRUNCATED, p.SOFTMAX_STABLE, p.EX2_TRUNCATED, *CORRECT_EX3),
        _correct("one-element-answers", "numbers as arrays of shape (1,) and (1, 1), ex1 as "
                 "(1, 2) rows", p.EX1_ROW_VECTORS, p.SOFTMAX_STABLE, p.EX2_ONE_ELEMENT,
                 *CORRECT_EX3),
        # -- exercise 1: the later steps earn their points from the student's own numbers
        _mistake("ex1-no-scaling", "scores not divided by sqrt(d_k), then a right softmax",
                 p.EX1_NO_SCALING, *CORRECT_EX2, *CORRECT_EX3,
                 lose={"ex1": 1}, codes={"ex1": ("no-scaling",)}, fails={"ex1": ("scores",)}),
        _mistake("ex1-wrong-scale", "scores divided by d_k, then a right softmax",
                 p.EX1_WRONG_SCALE, *CORRECT_EX2, *CORRECT_EX3,
                 lose={"ex1": 1}, codes={"ex1": ("wrong-scale",)}, fails={"ex1": ("scores",)}),
        _mistake("ex1-not-normalized", "weights are exp(scores), never normalised",
                 p.EX1_NOT_NORMALIZED, *CORRECT_EX2, *CORRECT_EX3,
                 lose={"ex1": 1}, codes={"ex1": ("not-normalized",)},
                 fails={"ex1": ("weights",)}),
        # -- exercise 2
        _mistake("ex2-unstable-softmax", "softmax without subtracting the maximum",
                 *CORRECT_EX1, p.SOFTMAX_UNSTABLE, p.EX2_ROUNDED, *CORRECT_EX3,
                 lose={"ex2": 1}, codes={"ex2": ("unstable-softmax",)},
                 fails={"ex2": ("softmax_survives_large_scores",)}),
        _mistake("ex2-softmax-axis", "softmax normalised down the columns",
                 *CORRECT_EX1, p.SOFTMAX_AXIS_0, p.EX2_ROUNDED, *CORRECT_EX3,
                 lose={"ex2": 1}, codes={"ex2": ("softmax-axis",)},
                 fails={"ex2": ("softmax_normalises_each_row_of_a_matrix",)}),
        _mistake("ex2-not-normalized", "softmax never divides by the sum",
                 *CORRECT_EX1, p.SOFTMAX_NOT_NORMALIZED, p.EX2_ROUNDED, *CORRECT_EX3,
                 lose={"ex2": 2}, codes={"ex2": ("not-normalized",)},
                 fails={"ex2": EX2_SOFTMAX[:2]}),
        _mistake("ex2-wrong-key", "the smaller key's weights reported",
                 *CORRECT_EX1, p.SOFTMAX_STABLE, p.EX2_WRONG_KEY, *CORRECT_EX3,
                 lose={"ex2": 1.5}, codes={"ex2": ("wrong-key",)},
                 fails={"ex2": EX2_NUMBERS[:2]}),
        _mistake("ex2-no-scaling", "the scaled numbers computed without the 1/8",
                 *CORRECT_EX1, p.SOFTMAX_STABLE, p.EX2_NO_SCALING, *CORRECT_EX3,
                 lose={"ex2": 1.5}, codes={"ex2": ("no-scaling",)},
                 fails={"ex2": EX2_NUMBERS[1::2]}),
        _mistake("ex2-wrong-scale", "scores divided by d_k = 64, the gradient right for that",
                 *CORRECT_EX1, p.SOFTMAX_STABLE, p.EX2_WRONG_SCALE, *CORRECT_EX3,
                 lose={"ex2": 1.5}, codes={"ex2": ("wrong-scale",)},
                 fails={"ex2": EX2_NUMBERS[1::2]}),
        _mistake("ex2-wrong-gradient", "the cross derivative -p1 p2 instead of p2 (1 - p2)",
                 *CORRECT_EX1, p.SOFTMAX_STABLE, p.EX2_WRONG_GRADIENT, *CORRECT_EX3,
                 lose={"ex2": 1.5}, codes={"ex2": ("wrong-gradient",)},
                 fails={"ex2": EX2_NUMBERS[2:]}),
        _mistake("ex2-raw-score-gradient", "the scaled gradient taken w.r.t. the raw score",
                 *CORRECT_EX1, p.SOFTMAX_STABLE, p.EX2_RAW_SCORE_GRADIENT, *CORRECT_EX3,
                 lose={"ex2": 0.75}, codes={"ex2": ("raw-score-gradient",)},
                 fails={"ex2": EX2_NUMBERS[3:]}),
        _mistake("ex2-forward-difference", "gradients by a forward difference with step 1e-2",
                 *CORRECT_EX1, p.SOFTMAX_STABLE, p.EX2_FORWARD_DIFFERENCE, *CORRECT_EX3,
                 lose={"ex2": 0.75}, codes={"ex2": ("imprecise-gradient",)},
                 fails={"ex2": EX2_NUMBERS[2:3]}),
        # -- exercise 3: attention. A mistake in the computation costs the six value tests
        # (5.5 points), a mistake in the masking the four masked ones (3.5); the property
        # tests (stable, read-only, unchanged inputs, stateless) hold whatever is computed.
        _ex3_attention_mistake("ex3-no-scaling", "scores not divided by sqrt(d_k)",
                               p.ATTENTION_NO_SCALING, 5.5, VALUES, "no-scaling"),
        _ex3_attention_mistake("ex3-scale-d-k", "scores divided by d_k",
                               p.ATTENTION_SCALE_D_K, 5.5, VALUES, "wrong-scale"),
        _ex3_attention_mistake("ex3-scale-d-v", "scores divided by sqrt(d_v)",
                               p.ATTENTION_SCALE_D_V, 5.5, VALUES, "wrong-scale"),
        _ex3_attention_mistake("ex3-softmax-axis", "softmax over the queries",
                               p.ATTENTION_SOFTMAX_AXIS, 5.5, VALUES, "softmax-axis"),
        _ex3_attention_mistake("ex3-not-normalized", "weights never divided by their sum",
                               p.ATTENTION_NOT_NORMALIZED, 5.5, VALUES, "not-normalized"),
        _ex3_attention_mistake("ex3-unstable-softmax", "no max subtraction before exp",
                               p.ATTENTION_UNSTABLE, 1, STABLE, "unstable-softmax"),
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
                               p.ATTENTION_TRANSPOSED_QT, 6.5, VALUES + STABLE,
                               "transposed"),
        _ex3_attention_mistake("ex3-returns-swapped", "returns (attn, out)",
                               p.ATTENTION_RETURNS_SWAPPED, 5.5, VALUES, "returns-swapped"),
        _ex3_attention_mistake("ex3-wrong-shape", "returns out transposed",
                               p.ATTENTION_WRONG_SHAPE, 2.75, OUTPUTS, "wrong-shape"),
        _ex3_attention_mistake("ex3-attn-transposed", "returns attn transposed, out right",
                               p.ATTENTION_ATTN_TRANSPOSED, 2.75, WEIGHTS, "wrong-shape"),
        _ex3_attention_mistake("ex3-mutates-input", "divides Q in place",
                               p.ATTENTION_MUTATES_INPUT, 2, READ_ONLY + UNCHANGED,
                               "mutates-input"),
        _ex3_attention_mistake("ex3-stateful", "caches answers by shape",
                               p.ATTENTION_STATEFUL, 1, STATELESS, "stateful"),
        _ex3_attention_mistake("ex3-no-scaling-and-zero-fill", "two mistakes at once",
                               p.ATTENTION_NO_SCALING_ZERO_FILL, 5.5, VALUES, "no-scaling",
                               "mask-zero-fill"),
        _mistake("ex3-float32-no-scaling", "float32 throughout, scores not scaled",
                 *CORRECT_EX1, p.SOFTMAX_FLOAT32, p.EX2_ROUNDED, p.ATTENTION_FLOAT32_NO_SCALING,
                 p.CAUSAL_MASK_TRIU, lose={"ex3": 5.5}, codes={"ex3": ("no-scaling",)},
                 fails={"ex3": VALUES}),
        _ex3_attention_mistake("ex3-stub-left", "the release's NotImplementedError stub",
                               p.ATTENTION_STUB, 9.5, ATTENTION, "crashed"),
        _ex3_attention_mistake("ex3-masked-array", "returns numpy masked arrays",
                               p.ATTENTION_MASKED_ARRAY, 9.5, ATTENTION, "unsupported-type"),
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
        # -- modules the grader does not have
        _mistake("scipy-without-scipy", "correct with scipy.special.softmax; no scipy here",
                 *CORRECT_EX1, p.SOFTMAX_SCIPY, p.EX2_COMPUTED, p.ATTENTION_SCIPY,
                 p.CAUSAL_MASK_TRIU, lose={"ex2": 6, "ex3": 9.5},
                 codes={"ex2": ("missing-name", "crashed", "missing-module"),
                        "ex3": ("crashed", "missing-module")},
                 fails={"ex2": EX2_SOFTMAX + EX2_NUMBERS, "ex3": ATTENTION}),
        # -- the whole file
        _mistake("syntax-error", "a missing colon: the file does not parse",
                 *_with_ex3(p.ATTENTION_WHERE, p.SYNTAX_ERROR), lose=FULL,
                 codes={ex: ("missing-name", "syntax-error") for ex in FULL},
                 fails={"ex1": ("scores", "weights", "output"), "ex2": EX2_SOFTMAX + EX2_NUMBERS,
                        "ex3": CAUSAL_MASK + ATTENTION}),
        # -- hostile
        _hostile("patched-numpy", "patches numpy.allclose and friends, then gets it wrong",
                 p.PATCH_NUMPY, *_with_ex3(p.ATTENTION_NO_SCALING, p.CAUSAL_MASK_TRIU),
                 scores={"ex3": 5.5}, codes={"ex3": ("no-scaling",)}),
        _hostile("import-reference", "imports attention from sdpa_ref",
                 *CORRECT_EX1, *CORRECT_EX2, p.IMPORT_REFERENCE,
                 scores={"ex3": 0}, codes={"ex3": ("missing-name", "forbidden-import")}),
        _hostile("import-reference-tricks", "reaches sdpa_ref and autograder by other spellings",
                 *CORRECT_EX1, p.IMPORT_REFERENCE_TRICKS, p.EX2_ROUNDED, *CORRECT_EX3,
                 scores={"ex2": 3}, codes={"ex2": ("missing-name", "forbidden-import")}),
        _hostile("import-reference-in-call", "imports sdpa_ref inside attention",
                 *CORRECT_EX1, *CORRECT_EX2, p.IMPORT_REFERENCE_IN_CALL, p.CAUSAL_MASK_TRIU,
                 scores={"ex3": 1.5}, codes={"ex3": ("forbidden-import",)}),
        _hostile("exit-at-import", "os._exit in the middle of the file",
                 *CORRECT_EX1, p.EXIT_AT_IMPORT, *CORRECT_EX2, *CORRECT_EX3),
        _hostile("exit-in-call", "attention calls os._exit",
                 *CORRECT_EX1, *CORRECT_EX2, p.EXIT_IN_CALL, p.CAUSAL_MASK_TRIU,
                 scores={"ex3": 1.5}, codes={"ex3": ("crashed",)}),
        _hostile("loop-at-import", "an endless loop between two exercises",
                 *CORRECT_EX1, p.LOOP_AT_IMPORT, *CORRECT_EX2, *CORRECT_EX3),
        _hostile("loop-in-call", "attention never returns",
                 *CORRECT_EX1, *CORRECT_EX2, p.LOOP_IN_CALL, p.CAUSAL_MASK_TRIU,
                 scores={"ex3": 1.5}, codes={"ex3": ("timeout",)}),
        _hostile("memory-hog-at-import", "allocates 16 GiB at import",
                 *CORRECT_EX1, p.MEMORY_HOG_AT_IMPORT, *CORRECT_EX2, *CORRECT_EX3),
        _hostile("memory-hog-in-call", "causal_mask allocates 64 GiB",
                 *CORRECT_EX1, *CORRECT_EX2, p.ATTENTION_WHERE, p.MEMORY_HOG_IN_CALL,
                 scores={"ex3": 9.5}, codes={"ex3": ("memory-limit",)}),
        _hostile("huge-output", "prints megabytes to stdout and stderr",
                 p.HUGE_OUTPUT, *_with_ex3(*CORRECT_EX3)),
        _hostile("background-processes", "starts a child and a setsid daemon",
                 p.BACKGROUND_PROCESSES, *_with_ex3(*CORRECT_EX3)),
        _hostile("zeros-of-the-right-shape", "attention returns zeros: no property points",
                 *_with_ex3(p.ATTENTION_ZEROS, p.CAUSAL_MASK_TRIU), scores={"ex3": 1.5},
                 codes={"ex3": ("not-normalized",)}),
        _hostile("nan-of-the-right-shape", "attention returns NaN: no property points",
                 *_with_ex3(p.ATTENTION_NAN, p.CAUSAL_MASK_TRIU), scores={"ex3": 1.5}),
        _hostile("read-hidden-files", "looks for the hidden suites and the answer key",
                 p.READ_HIDDEN_FILES, *CORRECT_EX2, *CORRECT_EX3,
                 scores={"ex1": 0}, codes={"ex1": ("missing-name",)}),
    ]


def case(name: str) -> Case:
    """The case called `name`."""
    for found in cases():
        if found.name == name:
            return found
    raise KeyError(name)
