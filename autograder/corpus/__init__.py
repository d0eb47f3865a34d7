"""A corpus of written-by-hand submissions, each with the grade it must get.

Correct ones in several styles, one per mistake of the catalogue, and hostile ones. Each
case is assembled from the named pieces of `autograder.corpus.pieces` and states its
expected score and diagnoses per exercise; the kit's tests grade every case and compare,
and the demo can grade them as "typical mistakes".

    from autograder.corpus import cases
    for case in cases():
        case.name, case.source, case.expected_score, case.expected_diagnoses
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


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # "correct", "mistake" or "hostile"
    description: str
    parts: tuple[str, ...]
    scores: dict[str, float] = field(default_factory=lambda: dict(FULL))
    diagnoses: dict[str, tuple[str, ...]] = field(default_factory=dict)

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

    def write(self, folder: Path | str) -> Path:
        path = Path(folder) / f"{self.name}.py"
        path.write_text(self.source)
        return path


def _correct(name, description, *parts):
    return Case(name, "correct", description, parts)


def _mistake(name, description, *parts, lose: dict[str, float], codes: dict[str, tuple]):
    scores = {ex: FULL[ex] - lose.get(ex, 0.0) for ex in FULL}
    return Case(name, "mistake", description, parts, scores, codes)


def _hostile(name, description, *parts, scores=None, codes=None):
    return Case(name, "hostile", description, parts, {**FULL, **(scores or {})}, codes or {})


def _with_ex3(*ex3_parts):
    return (*CORRECT_EX1, *CORRECT_EX2, *ex3_parts)


def _ex3_attention_mistake(name, description, attention, lose, *codes):
    return _mistake(name, description, *_with_ex3(attention, p.CAUSAL_MASK_TRIU),
                    lose={"ex3": lose}, codes={"ex3": codes})


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
        # -- exercise 1
        _mistake("ex1-no-scaling", "scores not divided by sqrt(d_k)",
                 p.EX1_NO_SCALING, *CORRECT_EX2, *CORRECT_EX3,
                 lose={"ex1": 3}, codes={"ex1": ("no-scaling",)}),
        _mistake("ex1-wrong-scale", "scores divided by d_k",
                 p.EX1_WRONG_SCALE, *CORRECT_EX2, *CORRECT_EX3,
                 lose={"ex1": 3}, codes={"ex1": ("wrong-scale",)}),
        _mistake("ex1-not-normalized", "weights are exp(scores), never normalised",
                 p.EX1_NOT_NORMALIZED, *CORRECT_EX2, *CORRECT_EX3,
                 lose={"ex1": 2}, codes={"ex1": ("not-normalized",)}),
        # -- exercise 2
        _mistake("ex2-unstable-softmax", "softmax without subtracting the maximum",
                 *CORRECT_EX1, p.SOFTMAX_UNSTABLE, p.EX2_ROUNDED, *CORRECT_EX3,
                 lose={"ex2": 1}, codes={"ex2": ("unstable-softmax",)}),
        _mistake("ex2-softmax-axis", "softmax normalised down the columns",
                 *CORRECT_EX1, p.SOFTMAX_AXIS_0, p.EX2_ROUNDED, *CORRECT_EX3,
                 lose={"ex2": 2}, codes={"ex2": ("softmax-axis",)}),
        _mistake("ex2-not-normalized", "softmax never divides by the sum",
                 *CORRECT_EX1, p.SOFTMAX_NOT_NORMALIZED, p.EX2_ROUNDED, *CORRECT_EX3,
                 lose={"ex2": 3}, codes={"ex2": ("not-normalized",)}),
        _mistake("ex2-wrong-key", "the smaller key's weights reported",
                 *CORRECT_EX1, p.SOFTMAX_STABLE, p.EX2_WRONG_KEY, *CORRECT_EX3,
                 lose={"ex2": 1.5}, codes={"ex2": ("wrong-key",)}),
        _mistake("ex2-no-scaling", "the scaled numbers computed without the 1/8",
                 *CORRECT_EX1, p.SOFTMAX_STABLE, p.EX2_NO_SCALING, *CORRECT_EX3,
                 lose={"ex2": 1.5}, codes={"ex2": ("no-scaling",)}),
        _mistake("ex2-wrong-gradient", "the cross derivative -p1 p2 instead of p2 (1 - p2)",
                 *CORRECT_EX1, p.SOFTMAX_STABLE, p.EX2_WRONG_GRADIENT, *CORRECT_EX3,
                 lose={"ex2": 1.5}, codes={"ex2": ("wrong-gradient",)}),
        # -- exercise 3: attention
        _ex3_attention_mistake("ex3-no-scaling", "scores not divided by sqrt(d_k)",
                               p.ATTENTION_NO_SCALING, 7.5, "no-scaling"),
        _ex3_attention_mistake("ex3-scale-d-k", "scores divided by d_k",
                               p.ATTENTION_SCALE_D_K, 7.5, "wrong-scale"),
        _ex3_attention_mistake("ex3-scale-d-v", "scores divided by sqrt(d_v)",
                               p.ATTENTION_SCALE_D_V, 7.5, "wrong-scale"),
        _ex3_attention_mistake("ex3-softmax-axis", "softmax over the queries",
                               p.ATTENTION_SOFTMAX_AXIS, 7.5, "softmax-axis"),
        _ex3_attention_mistake("ex3-not-normalized", "weights never divided by their sum",
                               p.ATTENTION_NOT_NORMALIZED, 7.5, "not-normalized"),
        _ex3_attention_mistake("ex3-unstable-softmax", "no max subtraction before exp",
                               p.ATTENTION_UNSTABLE, 1, "unstable-softmax"),
        _ex3_attention_mistake("ex3-mask-ignored", "the mask is never applied",
                               p.ATTENTION_MASK_IGNORED, 5.5, "mask-ignored"),
        _ex3_attention_mistake("ex3-mask-inverted", "True treated as keep",
                               p.ATTENTION_MASK_INVERTED, 5.5, "mask-inverted"),
        _ex3_attention_mistake("ex3-mask-after-softmax", "masked weights zeroed afterwards",
                               p.ATTENTION_MASK_AFTER_SOFTMAX, 5.5, "mask-after-softmax"),
        _ex3_attention_mistake("ex3-mask-zero-fill", "masked scores set to 0",
                               p.ATTENTION_MASK_ZERO_FILL, 4.5, "mask-zero-fill"),
        _ex3_attention_mistake("ex3-mask-none-broken", "crashes when mask is None",
                               p.ATTENTION_MASK_NONE_BROKEN, 2, "mask-none-broken"),
        _ex3_attention_mistake("ex3-transposed", "K @ Q.T instead of Q @ K.T",
                               p.ATTENTION_TRANSPOSED, 9.5, "transposed"),
        _ex3_attention_mistake("ex3-returns-swapped", "returns (attn, out)",
                               p.ATTENTION_RETURNS_SWAPPED, 9.5, "returns-swapped"),
        _ex3_attention_mistake("ex3-wrong-shape", "returns out transposed",
                               p.ATTENTION_WRONG_SHAPE, 9.5, "wrong-shape"),
        _ex3_attention_mistake("ex3-mutates-input", "divides Q in place",
                               p.ATTENTION_MUTATES_INPUT, 2, "mutates-input"),
        _ex3_attention_mistake("ex3-stateful", "caches answers by shape",
                               p.ATTENTION_STATEFUL, 1, "stateful"),
        _ex3_attention_mistake("ex3-no-scaling-and-zero-fill", "two mistakes at once",
                               p.ATTENTION_NO_SCALING_ZERO_FILL, 7.5, "no-scaling",
                               "mask-zero-fill"),
        _ex3_attention_mistake("ex3-stub-left", "the release's NotImplementedError stub",
                               p.ATTENTION_STUB, 9.5, "crashed"),
        _ex3_attention_mistake("ex3-masked-array", "returns numpy masked arrays",
                               p.ATTENTION_MASKED_ARRAY, 9.5, "unsupported-type"),
        # -- exercise 3: causal mask
        _mistake("ex3-causal-diagonal", "causal_mask also hides the diagonal",
                 *_with_ex3(p.ATTENTION_WHERE, p.CAUSAL_MASK_DIAGONAL),
                 lose={"ex3": 1.5}, codes={"ex3": ("causal-diagonal",)}),
        _mistake("ex3-causal-wrong-triangle", "causal_mask hides the past",
                 *_with_ex3(p.ATTENTION_WHERE, p.CAUSAL_MASK_WRONG_TRIANGLE),
                 lose={"ex3": 1.5}, codes={"ex3": ("causal-wrong-triangle",)}),
        _mistake("ex3-causal-mask-missing", "causal_mask never written",
                 *_with_ex3(p.ATTENTION_WHERE), lose={"ex3": 1.5},
                 codes={"ex3": ("missing-name",)}),
        # -- the whole file
        _mistake("syntax-error", "a missing colon: the file does not parse",
                 *_with_ex3(p.ATTENTION_WHERE, p.SYNTAX_ERROR), lose=FULL,
                 codes={ex: ("missing-name", "syntax-error") for ex in FULL}),
        # -- hostile
        _hostile("patched-numpy", "patches numpy.allclose and friends, then gets it wrong",
                 p.PATCH_NUMPY, *_with_ex3(p.ATTENTION_NO_SCALING, p.CAUSAL_MASK_TRIU),
                 scores={"ex3": 3.5}, codes={"ex3": ("no-scaling",)}),
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
