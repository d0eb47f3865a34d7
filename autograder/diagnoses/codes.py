"""The diagnosis codes (CONTRACT section 3) and their one wording, in the contract's order.

`WORDING` is the only table of what each code means. Everything that words a code reads it:
the terminal report (`autograder.report`), the feedback page and the summary of each graded
cell (`sdpa_course.reports.feedback_text`), the class report, `docs/CONTRACT.md` and
`docs/CONTRACT-ADDITIONS.md` (a test holds their tables to this one). Each code has

- `where`: the exercises it can show on (`any` for the codes of how code failed),
- `meaning`: one line for instructors, as in the contract's table,
- `explanation`: one or two sentences for the student (what went wrong, what to look at),
- `lesson`: the notebook section that covers it (a key of `LESSON_SECTIONS`), or
  `EXERCISE_SECTION` for the section of the exercise it shows on.

`unsupported-type` comes from the sandbox (a value that cannot cross back as plain data) and
`stateful` from the grader (a second call with the same inputs answers differently); both are
codes added beside the contract's, none of which is renamed. So are `raw-score-gradient`,
`imprecise-gradient`, `missing-module`, `other-variant` (the answers are another
variant's, `autograder.variants`) and `not-answered` (an answer left as the release has it,
`diagnoses.unanswered`), which the contract's additions list. A new code
needs an entry here: tests fail for a code that the grader can report and this table does not
word. (What a report says about a failed test that a diagnosis explains is
`diagnoses.explanations`: a message per test, not a code's wording.)
"""

from __future__ import annotations

from dataclasses import dataclass

EXERCISE_SECTION = "exercise"


@dataclass(frozen=True)
class Section:
    heading: str  # the notebook's heading, as written in source/sdpa/attention.py
    title: str  # the same in plain text, for a terminal

    @property
    def anchor(self) -> str:
        """The heading's id in the feedback page (the kit's markdown renderer gives it)."""
        return heading_anchor(self.heading)


def heading_anchor(heading: str) -> str:
    """`2. Why divide by $\\sqrt{d_k}$?` -> `2-why-divide-by-sqrt-d-k`."""
    words, word = [], []
    for char in heading.lower():
        if char.isascii() and char.isalnum():
            word.append(char)
        elif word:
            words.append("".join(word))
            word = []
    if word:
        words.append("".join(word))
    return "-".join(words) or "section"


LESSON_SECTIONS: dict[str, Section] = {
    "numbers": Section("Your numbers", "Your numbers"),
    "lookup": Section("1. Attention as a soft lookup table",
                      "1. Attention as a soft lookup table"),
    "scaling": Section("2. Why divide by $\\sqrt{d_k}$?", "2. Why divide by sqrt(d_k)?"),
    "ex1": Section("Exercise 1: attention by hand (3 points)", "Exercise 1"),
    "ex2": Section("Exercise 2: scaled vs unscaled softmax (6 points + 2 points written)",
                   "Exercise 2"),
    "masking": Section("4. Causal masking", "4. Causal masking"),
    "ex3": Section("Exercise 3: causal scaled dot-product attention (11 points)", "Exercise 3"),
    "ex4": Section("Exercise 4: blockwise attention, online softmax (optional, 4 points extra "
                   "credit)", "Exercise 4"),
}


@dataclass(frozen=True)
class Wording:
    where: str
    meaning: str
    explanation: str
    lesson: str


WORDING: dict[str, Wording] = {
    "no-scaling": Wording(
        "ex1, ex2, ex3, ex4", "the 1/sqrt(d_k) factor is missing",
        "The scores are not divided by sqrt(d_k), so large scores saturate the softmax. "
        "Divide every score q.k by the square root of the key dimension before the softmax.",
        "scaling"),
    "wrong-scale": Wording(
        "ex1, ex2, ex3, ex4", "scaled, but by the wrong factor (d_k, sqrt(d_v), …)",
        "The scores are scaled, but by the wrong factor. The factor is 1/sqrt(d_k), with d_k "
        "the dimension of the keys and queries (not d_k itself, not the values' d_v, nor "
        "the number of queries or keys: d_k is Q.shape[-1], not Q.shape[0]).",
        "scaling"),
    "not-normalized": Wording(
        "ex1, ex2, ex3, ex4", "weights do not sum to 1",
        "The attention weights do not sum to 1. Each row of weights must be a softmax over "
        "the keys: exponentiate, then divide by the row's sum.",
        "lookup"),
    "softmax-axis": Wording(
        "ex2, ex3", "normalised over the wrong axis (queries instead of keys)",
        "The softmax normalises over the wrong axis. Each query's weights over the keys must "
        "sum to 1: use the last axis (axis=-1), not axis 0.",
        "lookup"),
    "unstable-softmax": Wording(
        "ex2, ex3, ex4", "overflows or returns NaN/inf for large scores (no max subtraction)",
        "The softmax overflows for large scores (np.exp(1000.0) is inf, and inf/inf is NaN), "
        "also when it subtracts a row's smallest score, its mean or its first score, which "
        "leave the largest far above 0. Subtract each row's largest score before "
        "exponentiating: the result is unchanged.",
        "ex2"),
    "wrong-key": Wording(
        "ex2", "reported the smaller key's weight instead of the larger one's",
        "The weight you reported is the smaller key's, not the larger key's. p_unscaled and "
        "p_scaled are the weights of the key with the larger score.",
        "scaling"),
    "wrong-gradient": Wording(
        "ex2", "the softmax derivative is wrong",
        "The softmax derivative is wrong. For a weight p_i and its own score z_i, "
        "d p_i / d z_i = p_i (1 - p_i).",
        "scaling"),
    "raw-score-gradient": Wording(
        "ex2",
        "the scaled gradient taken with respect to the raw score, not the scaled score that "
        "goes into the softmax (off by 1/sqrt(d_k))",
        "Your scaled gradient is taken with respect to the raw score, so it is off by "
        "1/sqrt(d_k). The question asks for the derivative with respect to the score that goes "
        "into the softmax (the scaled one): p (1 - p) with the scaled weight p.",
        "scaling"),
    "imprecise-gradient": Wording(
        "ex2",
        "the derivative is only approximately right (a finite difference with a large step, "
        "or computed from a rounded weight)",
        "Your derivative is close but not exact: a finite difference with a large step, or a "
        "weight rounded before use. Use the exact formula p (1 - p) with the unrounded weight.",
        "scaling"),
    "other-variant": Wording(
        "ex1, ex2",
        "the answers are right for other numbers than the student's own: those the notebook "
        "shows (another student's, another variant) or the lesson's own",
        "Your answers are right, but for numbers that are not yours (another student's that "
        "your notebook showed, or the lesson's own): check the student id in the cell Your "
        "numbers near the top, run it again and work with your own numbers.",
        "numbers"),
    "mask-ignored": Wording(
        "ex3, ex4", "the mask has no effect",
        "The mask has no effect: masked positions still get weight. Set their scores to a "
        "large negative number (or -inf) before the softmax.",
        "masking"),
    "mask-inverted": Wording(
        "ex3", 'True treated as "keep"',
        'The mask is applied the wrong way round. In this kit True means "masked out": the '
        "positions where the mask is True must get zero weight.",
        "masking"),
    "mask-after-softmax": Wording(
        "ex3", "masked weights zeroed after softmax without renormalising",
        "The masked weights are set to zero after the softmax, so the rows no longer sum to 1. "
        "Mask the scores before the softmax instead.",
        "masking"),
    "mask-zero-fill": Wording(
        "ex3", "masked scores set to 0 (or another small number, such as -1) instead of a "
        "large negative number",
        "The masked scores are set to 0 (or another number too small to hide them, such as "
        "-1), which still gives the masked positions weight (exp(0) = 1). Use -inf or a large "
        "negative number such as -1e9.",
        "masking"),
    "mask-none-broken": Wording(
        "ex3", "wrong or crashing when `mask=None`",
        "attention fails or is wrong when it is called without a mask (mask=None). With no "
        "mask, nothing is masked.",
        "ex3"),
    "transposed": Wording(
        "ex3",
        "keys/queries multiplied in the wrong orientation (breaks when n ≠ m or d_k ≠ d_v)",
        "Queries and keys are multiplied in the wrong orientation, or the weights come back "
        "transposed. The scores are Q K^T, of shape (n, m), and attn is returned that way, "
        "one row per query; test with n != m and d_k != d_v to see the difference.",
        "lookup"),
    "wrong-shape": Wording(
        "ex3", "an output has the wrong shape",
        "An output has the wrong shape: out must be (n, d_v) and attn (n, m), for n queries "
        "and m keys.",
        "ex3"),
    "returns-swapped": Wording(
        "ex3", "returns `(attn, out)` instead of `(out, attn)`",
        "attention returns (attn, out) instead of (out, attn): swap the two return values.",
        "ex3"),
    "mutates-input": Wording(
        "ex3", "modifies Q, K, V or mask in place",
        "The function changes its inputs in place (Q, K, V or mask). Work on new arrays, "
        "for example with np.where, instead of assigning into the inputs.",
        "ex3"),
    "stateful": Wording(
        "ex3", "answers differently when called again with the same inputs",
        "Called twice with the same inputs, your function gave two different answers. It "
        "must not keep anything between calls (a global, a default list) or change its "
        "inputs.",
        "ex3"),
    "causal-diagonal": Wording(
        "ex3", "`causal_mask` also masks the diagonal",
        "causal_mask also masks the diagonal, but a position may attend to itself: only the "
        "entries strictly above the diagonal (the future) are True.",
        "masking"),
    "causal-wrong-triangle": Wording(
        "ex3", "`causal_mask` masks the past instead of the future",
        "causal_mask masks the past instead of the future: the True entries belong strictly "
        "above the diagonal (np.triu(..., k=1)).",
        "masking"),
    "check-exact-float": Wording(
        "ex3",
        "`rows_sum_to_one` compares float sums with 1 exactly (== 1, or more tightly than float "
        "rounding)",
        "rows_sum_to_one compares each row's sum with 1 exactly (or almost exactly), but a sum "
        "of floats is 1 only up to rounding: a correct float32 row is off by about 1e-7. "
        "Compare with a tolerance, as np.allclose does.",
        "ex3"),
    "check-lower-triangle": Wording(
        "ex3", "`future_is_zero` checks below the diagonal (the past) instead of above it",
        "future_is_zero looks below the diagonal, at the past. The future is above it (key j "
        "after query t, j > t): the weights of np.triu(attn, k=1) must be exactly 0.",
        "masking"),
    "check-diagonal": Wording(
        "ex3", "`future_is_zero` also requires the diagonal to be zero",
        "future_is_zero also wants the diagonal to be 0, but the diagonal is each query's "
        "weight on itself, which is allowed. Only the weights strictly above it must be 0.",
        "masking"),
    "blockwise-no-rescale": Wording(
        "ex4",
        "`attention_blockwise` does not rescale the sums already accumulated when the running "
        "maximum grows",
        "When the running maximum grows from m to m', the sums accumulated so far were taken "
        "with exp(s - m): multiply both of them (the weights' sum and the weighted values) by "
        "exp(m - m') before adding the new block.",
        "ex4"),
    "blockwise-per-block-normaliser": Wording(
        "ex4",
        "`attention_blockwise` normalises each block's weights on their own instead of once "
        "by the total over all keys",
        "Each block is normalised on its own, but the softmax divides by the total over all "
        "the keys. Keep the running sums unnormalised and divide once, after the last block.",
        "ex4"),
    "blockwise-causal-off-by-one": Wording(
        "ex4",
        "`attention_blockwise`'s causal boundary is off by one (a query misses its own key, or "
        "sees the next one)",
        "The causal boundary is off by one: query t must see keys 0 to t, itself included, "
        "and not key t + 1. Check the comparison where a block of keys meets the diagonal.",
        "ex4"),
    "blockwise-quadratic-memory": Wording(
        "ex4",
        "`attention_blockwise` holds a whole (T, T) array at once (scores, weights or the "
        "causal mask)",
        "Your function builds a whole (T, T) array (the scores, the weights or the causal "
        "mask), which is what blocks avoid. Keep one block of scores, and of the mask, at a "
        "time.",
        "ex4"),
    "not-answered": Wording(
        "any",
        "an answer left as the release has it (`...`, the NotImplementedError stub): not "
        "attempted, not a mistake",
        "This answer is not written yet: it is still as the notebook was handed out (`...` or "
        "raise NotImplementedError). Write it in its cell, run the cell and its self-check.",
        EXERCISE_SECTION),
    "blockwise-keys-not-blocked": Wording(
        "ex4",
        "right values, but the keys are not taken a block at a time (a query's whole row of "
        "keys at once, or one key at a time)",
        "Your function computes attention, but not with the keys taken `block` at a time: "
        "with a few queries and many keys its memory follows the number of keys, or stays the "
        "same whatever `block` is. Take the keys `block` at a time, keeping a running "
        "maximum and sum per query.",
        "ex4"),
    "missing-name": Wording(
        "any", "a required name is not defined",
        "A name the exercise asks for is not defined. Check its spelling and that the cell "
        "defining it runs without an error.",
        EXERCISE_SECTION),
    "syntax-error": Wording(
        "any", "the submission does not parse",
        "A cell does not parse as Python, so none of it ran. The message says on which line.",
        EXERCISE_SECTION),
    "crashed": Wording(
        "any", "the student's code raised or its process died",
        "Your code raised an error (or stopped the process) while it ran. The message says "
        "where; run the cell again in your notebook to see the full error.",
        EXERCISE_SECTION),
    "timeout": Wording(
        "any", "the student's code ran past its time limit",
        "Your code ran past its time limit and was stopped. Look for an endless loop or a "
        "computation much larger than the exercise needs.",
        EXERCISE_SECTION),
    "memory-limit": Wording(
        "any", "the student's code ran past its memory limit",
        "Your code used more memory than allowed and was stopped. Look for arrays far larger "
        "than the inputs (a few small matrices are all the exercise needs).",
        EXERCISE_SECTION),
    "forbidden-import": Wording(
        "any", "the submission tried to import the reference or the grader",
        "Your code tried to import the reference solution or the grader, which submissions "
        "may not use: write the computation yourself with numpy.",
        EXERCISE_SECTION),
    "missing-module": Wording(
        "any",
        "the code needs a module the grader does not have (it has numpy and matplotlib only)",
        "Your code imports a module the grader does not have: only numpy and matplotlib are "
        "there. Write the computation with numpy.",
        EXERCISE_SECTION),
    "unsupported-type": Wording(
        "any",
        "a value that is not plain numbers or a plain numeric array (custom object, subclass, "
        "masked array…)",
        "An answer is not plain numbers or a plain numpy array (for example a masked array or "
        "an object of your own), so it cannot be graded. Return a plain np.ndarray or numbers.",
        EXERCISE_SECTION),
}

# code -> its meaning (the contract's column), for code that needs only that
CODES: dict[str, str] = {code: wording.meaning for code, wording in WORDING.items()}


def lesson_section(code: str, exercise: str | None = None) -> Section | None:
    """The lesson section that covers `code` shown on `exercise`, if any."""
    wording = WORDING.get(code)
    if wording is None:
        return None
    key = exercise if wording.lesson == EXERCISE_SECTION else wording.lesson
    return LESSON_SECTIONS.get(key or "")


def ordered(codes) -> list[str]:
    """Codes in the contract's order, each once; unknown codes last, sorted."""
    codes = set(codes)
    return [c for c in CODES if c in codes] + sorted(codes - CODES.keys())
