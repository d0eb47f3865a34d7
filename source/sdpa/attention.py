# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Scaled dot-product attention
#
# The Transformer (Vaswani et al., 2017) turns the attention of earlier encoder-decoder models
# (Bahdanau attention) into one general operation, *scaled dot-product attention*, that any
# sequence can also apply to itself.
#
# This lab takes 90 minutes, each part's lesson and exercise together:
#
# 1. attention by hand for one query and two keys (**Exercise 1**, 3 points, 20 minutes);
# 2. why the scores are divided by $\sqrt{d_k}$, in numbers and in gradients (**Exercise 2**,
#    6 points + 2 for a written answer, 30 minutes);
# 3. attention with a causal mask, and two checks of its weights (**Exercise 3**, 11 points,
#    40 minutes).
#
# **Exercise 4**, blockwise attention, is a take-home extension after the lab (45 to 90
# minutes, up to 4 points of extra credit).
#
# **How this notebook works.** Answer where a cell says `YOUR CODE HERE` or `YOUR ANSWER HERE`;
# the *self-check* cell after each answer gives a first look (more tests run when your work is
# graded). *Run All* works at any time: parts not done say "not answered yet" or "not written yet".
#
# You only need numpy (and matplotlib for one picture).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
import sys
import time  # Exercise 4's self-check times one call at the grader's size, too
import tracemalloc  # Exercise 4's self-check measures memory the way the grader does

import numpy as np

# Modules students often reach for that are not installed where the work is graded, and the
# modules already loaded before any answer ran (the notebook's own).
_NOT_IN_GRADER = ("scipy", "torch", "tensorflow", "jax", "sklearn", "pandas", "numba", "einops")
_LOADED_AT_START = set(sys.modules)


def _report(exercise, problems):
    """Print a self-check's findings; a clean self-check is never the whole story."""
    imported = [name for name in _NOT_IN_GRADER
                if name in sys.modules and name not in _LOADED_AT_START]
    problems = list(problems) + [
        f"your notebook imports {name}, which is not installed where your work is graded "
        "(only numpy and matplotlib are): write your answers with numpy." for name in imported]
    if problems:
        print(f"{exercise} self-check: something to look at.")
        for problem in problems:
            print("  -", problem)
    else:
        print(f"{exercise} self-check: these quick checks pass. "
              "More tests run when your work is graded.")


def _not_plain(value, depth=0):
    """The type of the first part of `value` the grader cannot read, or "": it reads plain
    numbers, lists, tuples and numpy arrays, by their exact types (a Fraction, a namedtuple,
    an np.matrix or a masked array are not; convert them with float, tuple or np.asarray)."""
    kind = type(value)
    if value is None or kind in (bool, int, float, complex, str):
        return ""
    if kind is np.ndarray or (isinstance(value, np.generic) and kind.__module__ == "numpy"
                              and np.dtype(kind).kind in "biufc"):
        return ""
    if kind in (list, tuple):
        if depth > 3:
            return ""
        return next((name for item in value[:10_000] if (name := _not_plain(item, depth + 1))),
                    "")
    module = getattr(kind, "__module__", "")
    plain_name = module in ("builtins", "__main__")
    return kind.__qualname__ if plain_name else f"{module}.{kind.__qualname__}"


def _plain_problem(name, value):
    """What to say when `name`'s value is of a type the grader cannot read, or ""."""
    found = _not_plain(value)
    return (f"{name} holds a {found}, which the grader cannot read: give plain numbers, lists, "
            "tuples or numpy arrays (float(...), tuple(...), np.asarray(...)).") if found else ""


def _is_text(raw):
    """Numbers written in quotes ("0.731"), which the grader does not read as numbers."""
    if isinstance(raw, (list, tuple)):
        return any(isinstance(x, (str, bytes)) for x in raw)
    return isinstance(raw, (str, bytes)) or (isinstance(raw, np.ndarray)
                                             and raw.dtype.kind in "SU")

# %% [markdown]
# ## Your numbers
#
# In a course, Exercises 1 and 2 use numbers worked out from your student id (outside a course, the
# lesson's own: the *default variant*). JupyterHub and nbgrader's exchange give your id; elsewhere,
# type it below and run both cells. You are graded with the id you hand in under: check it is yours.

# %%
STUDENT_ID = ""  # your course id between the quotes, e.g. "jdoe" (leave "" on JupyterHub)

# %% jupyter={"source_hidden": true} nbgrader={"grade": false, "grade_id": "your_numbers", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Your numbers for Exercises 1 and 2, worked out from your student id. `sdpa-course release`
# writes your course's numbers key (public: it only turns ids into numbers) on the next line.
COURSE = {"assignment": "sdpa", "numbers_key": "", "course_id": "", "exchange_root": ""}

import getpass
import hashlib
import hmac
import itertools
import math
import os
import unicodedata

# -- the same code as the grader's autograder/variants/numbers.py --------------------------
LESSON_EX1 = {"q": (1, 0), "k1": (1, 0), "k2": (0, 1), "v1": (1, 0), "v2": (0, 1), "d_k": 2}
LESSON_EX2 = {"gap": 8, "d_k": 64}
DEFAULT_LABEL = "default"
# The scaled gaps the lesson works out (exercise 1's, and the two of section 2): a variant's
# weights stay clear of theirs, so that no student takes the lesson's printed numbers for theirs.
LESSON_SCALED_GAPS = (1 / math.sqrt(2), 1.0, 2.0)
HEAD_DIMENSIONS = (16, 32, 64, 128)


def _variant_digest(numbers_key, assignment, student):
    """32 bytes that fix one student's numbers: HMAC-SHA256 under the course's numbers key."""
    message = "\x00".join(("sdpa-course numbers v1", assignment, student)).encode("utf-8")
    return hmac.new(bytes.fromhex(numbers_key), message, hashlib.sha256).digest()


def _draws(digest, purpose):
    """Endless integers in [0, 2**32) for one purpose: SHA-256 of the digest, counter mode."""
    for counter in itertools.count():
        block = hashlib.sha256(digest + purpose.encode() + counter.to_bytes(8, "big")).digest()
        for start in range(0, 32, 4):
            yield int.from_bytes(block[start:start + 4], "big")


def _lesson_weight(scaled_gap):
    """Whether the larger key's weight at this scaled gap reads as one the lesson prints."""
    return any(abs(1 / (1 + math.exp(-scaled_gap)) - 1 / (1 + math.exp(-gap))) < 0.002
               for gap in LESSON_SCALED_GAPS)


def _ex1_fits(numbers):
    """Numbers a calculator handles, on which every catalogued slip shows, and which tell the
    lesson's story: the query matches key 1 best, so the output is mostly v1."""
    s1, s2 = (sum(a * b for a, b in zip(numbers["q"], numbers[k], strict=True))
              for k in ("k1", "k2"))
    v1, v2 = numbers["v1"], numbers["v2"]
    scaled_gap = (s1 - s2) / math.sqrt(numbers["d_k"])
    return (max(abs(s1), abs(s2)) <= 4 and s1 > s2 and s1 >= 0
            and 0.5 <= scaled_gap <= 2 and not _lesson_weight(scaled_gap)
            and any(v1) and any(v2) and all(a != b for a, b in zip(v1, v2, strict=True))
            and numbers != LESSON_EX1)


def _ex1_numbers(digest):
    """Exercise 1: one query, two keys and their values, all small integers; d_k is 2 to 4."""
    draws = _draws(digest, "ex1")
    while True:
        d_k = (2, 3, 4)[next(draws) % 3]
        q, k1, k2 = (tuple(next(draws) % 5 - 2 for _ in range(d_k)) for _ in range(3))
        v1, v2 = (tuple(next(draws) % 5 - 2 for _ in range(2)) for _ in range(2))
        numbers = {"q": q, "k1": k1, "k2": k2, "v1": v1, "v2": v2, "d_k": d_k}
        if _ex1_fits(numbers):
            return numbers


def _ex2_numbers(digest):
    """Exercise 2: the raw score gap (6 to 9) and d_k, a head dimension (16 to 128)."""
    draws = _draws(digest, "ex2")
    while True:
        numbers = {"gap": 6 + next(draws) % 4, "d_k": HEAD_DIMENSIONS[next(draws) % 4]}
        if not _lesson_weight(numbers["gap"] / math.sqrt(numbers["d_k"])):
            return numbers


def student_numbers(numbers_key, assignment, student):
    """{"label", "ex1", "ex2"} of one student; the lesson's own without a key or an id."""
    # One student however the id is typed: blanks around it, letter case (JupyterHub logins
    # are lower case), composed or decomposed accents (NFKC): "JDoe " is jdoe.
    student = unicodedata.normalize("NFKC", student.strip()).casefold()
    if not numbers_key or not student:
        return {"label": DEFAULT_LABEL, "ex1": dict(LESSON_EX1), "ex2": dict(LESSON_EX2)}
    digest = _variant_digest(numbers_key, assignment, student)
    return {"label": digest.hex()[:6], "ex1": _ex1_numbers(digest), "ex2": _ex2_numbers(digest)}
# -- end of the grader's code -------------------------------------------------------------


def _your_student_id():
    """(your id, where it was found): typed above, set for you, JupyterHub, nbgrader's exchange."""
    typed = globals().get("STUDENT_ID")
    if isinstance(typed, str) and typed.strip():
        return typed.strip(), "typed in the cell above"
    for variable, where in (("SDPA_STUDENT_ID", "set for you"),
                            ("JUPYTERHUB_USER", "your JupyterHub login")):
        if os.environ.get(variable, "").strip():
            return os.environ[variable].strip(), where
    exchange = os.path.join(COURSE["exchange_root"], COURSE["course_id"], "outbound")
    if COURSE["exchange_root"] and COURSE["course_id"] and os.path.isdir(exchange):
        try:
            return getpass.getuser(), "your login, as nbgrader's exchange knows you"
        except Exception:  # no login name to be found: ask for the id instead
            pass
    return "", ""


def _vector(numbers):
    return "(" + ", ".join(str(x) for x in numbers) + ")"


def _numbers_text(exercise):
    """Your numbers for one exercise, as the exercise states them."""
    if exercise == "ex1":
        vectors = [f"{name} = {_vector(EX1[name])}" for name in ("q", "k1", "k2", "v1", "v2")]
        return ", ".join(vectors + [f"d_k = {EX1['d_k']}"])
    gap, d_k = EX2["gap"], EX2["d_k"]
    # q.k has standard deviation sqrt(d_k): the gap in those units is the scaled gap
    deviations = gap / math.sqrt(d_k)
    spread = f"{deviations:.3g}"
    root = f"{math.isqrt(d_k)}" if math.isqrt(d_k) ** 2 == d_k else f"{math.sqrt(d_k):.2f}"
    return (f"raw scores ({gap}, 0), d_k = {d_k}: the gap is {spread} standard "
            f"deviation{'' if spread == '1' else 's'} of q.k "
            f"(sqrt({d_k}) {'=' if '.' not in root else '≈'} {root})")


def _show_your_numbers():
    student, where = _your_student_id()
    numbers = student_numbers(COURSE["numbers_key"], COURSE["assignment"], student)
    if not COURSE["numbers_key"]:
        print("This copy of the notebook belongs to no course: you work the lesson's numbers "
              "(the default variant).")
    elif not student:
        print("No student id found, so these are the lesson's numbers (the default variant). "
              "Type your course id in the cell above, then run both cells again.")
    else:
        print(f"Your numbers, variant {numbers['label']}, for student id {student!r} ({where}).")
    return numbers


YOUR_NUMBERS = _show_your_numbers()
YOUR_VARIANT = YOUR_NUMBERS["label"]
EX1, EX2 = YOUR_NUMBERS["ex1"], YOUR_NUMBERS["ex2"]
print("  Exercise 1:", _numbers_text("ex1"))
print("  Exercise 2:", _numbers_text("ex2"))

# %% [markdown]
# ## 1. Attention as a soft lookup table
#
# A dictionary returns the value of the one key that equals the query. Attention is a soft
# lookup: it compares the query with **every** key, turns the match scores into weights that are
# positive and sum to one, and returns the **weighted sum of all the values**.
#
# With $n$ queries, $m$ keys and $m$ values stacked as matrices
# $Q \in \mathbb{R}^{n \times d_k}$, $K \in \mathbb{R}^{m \times d_k}$ and
# $V \in \mathbb{R}^{m \times d_v}$, attention takes four steps:
#
# 1. **Scores.** $S = Q K^\top \in \mathbb{R}^{n \times m}$, one per (query, key) pair.
# 2. **Scale.** Divide by $\sqrt{d_k}$ (section 2 says why).
# 3. **Normalise.** Softmax each row: $A = \mathrm{softmax}(S / \sqrt{d_k})$, every row
#    summing to 1.
# 4. **Mix.** Return $A V \in \mathbb{R}^{n \times d_v}$: each query's weighted average of the
#    values.
#
# $$\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V$$
#
# Queries and keys share $d_k$ (they meet in a dot product); $d_v$ may differ, and so may $n$
# and $m$.

# %% [markdown]
# ---
# ## Exercise 1: attention by hand (3 points)
#
# One query $q$ attends to two keys $k_1$ and $k_2$, whose values are $v_1$ and $v_2$; $d_k$ is
# the length of $q$. Your numbers are printed below (and kept in `EX1`); the lesson's are
# $q = (1, 0)$, $k_1 = (1, 0)$, $k_2 = (0, 1)$, $v_1 = (1, 0)$, $v_2 = (0, 1)$ and $d_k = 2$.
# By hand (or with a calculator), compute
#
# * `ex1_scores`: the two scaled scores $q \cdot k_i / \sqrt{d_k}$,
# * `ex1_weights`: their softmax,
# * `ex1_output`: the output vector $w_1 v_1 + w_2 v_2$.
#
# Write **numbers**, not code: pairs such as `(0.25, 0.75)`, to three decimals, rounded or cut
# (for 2/3, both 0.667 and 0.666 count).

# %% nbgrader={"grade": false, "grade_id": "ex1_given", "locked": true, "schema_version": 3, "solution": false, "task": false}
print("Your numbers:", _numbers_text("ex1"))

# %% nbgrader={"grade": false, "grade_id": "ex1_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
# Computed from your numbers; with the lesson's: (0.7071, 0.0), (0.6698, 0.3302), (0.6698, 0.3302).
ex1_scores = tuple(np.array([EX1["k1"], EX1["k2"]]) @ EX1["q"] / np.sqrt(EX1["d_k"]))
ex1_weights = tuple(np.exp(ex1_scores) / np.exp(ex1_scores).sum())
ex1_output = tuple(np.array(ex1_weights) @ np.array([EX1["v1"], EX1["v2"]]))
### END SOLUTION

# %% jupyter={"source_hidden": true} tags=["self-check"] nbgrader={"grade": false, "grade_id": "ex1_selfcheck", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Self-check for Exercise 1: checks that your three answers fit together, not the final numbers.
# Your numbers are those of the cell *Your numbers* (`EX1`).
# Hand numbers count to three decimals, rounded or cut (for 2/3, 0.667 and 0.666 both count).
def _ex1_pair(raw):
    """Two numbers as an array of shape (2,), or None: (0.1, 0.9), a list, an array (1, 2)..."""
    try:
        if isinstance(raw, (list, tuple)) and len(raw) == 2:
            return np.array([np.asarray(x, dtype=float).item() for x in raw])  # (2,)
        pair = np.asarray(raw, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return None
    return pair.reshape(2) if pair.size == 2 and pair.squeeze().shape == (2,) else None


def _ex1_short_answers(answers):
    """The answers written with two decimals (0.25 for 0.2543) that three would get right."""
    raw_scores = np.array([np.dot(EX1["q"], EX1[key]) for key in ("k1", "k2")], dtype=float)
    exact_scores = raw_scores / np.sqrt(EX1["d_k"])  # (2,)
    exact_weights = np.exp(exact_scores - exact_scores.max())
    exact_weights = exact_weights / exact_weights.sum()  # (2,)
    exact_output = exact_weights @ np.array([EX1["v1"], EX1["v2"]], dtype=float)  # (d_v,)
    exact = {"ex1_scores": exact_scores, "ex1_weights": exact_weights, "ex1_output": exact_output}
    return [name for name, pair in answers.items()
            if np.all(np.abs(pair - np.round(pair, 2)) <= 1e-12)
            and np.abs(pair - exact[name]).max() <= 1e-2 + 1e-12
            and not np.abs(pair - exact[name]).max() <= 1e-3 + 1e-12]


def _ex1_problems():
    if "EX1" not in globals():
        return ["your numbers are not known yet: run the cell *Your numbers* near the top."]
    answers = {}
    for name in ("ex1_scores", "ex1_weights", "ex1_output"):
        if name not in globals():
            return [f"{name} is not defined: run the answer cell above first."]
        raw = globals()[name]
        if raw is ...:
            return [f"{name} is still `...`: not answered yet."]
        if _is_text(raw):
            return [f"{name} holds text: write the numbers themselves, without quotes, "
                    "such as (0.25, 0.75)."]
        if _plain_problem(name, raw):
            return [_plain_problem(name, raw)]
        pair = _ex1_pair(raw)
        if pair is None:
            return [f"{name} should be two numbers (one per key) such as (0.25, 0.75); "
                    f"got {str(raw)[:60]}."]
        answers[name] = pair
    scores, weights, output = answers.values()
    short = _ex1_short_answers(answers)
    if short:
        return [f"{', '.join(short)} {'is' if len(short) == 1 else 'are'} right to two "
                "decimals only: give three (rounded or cut)."]
    problems = []
    # The raw dot products q.k1 and q.k2 of your numbers: spot the usual slips in the scaling.
    d_k = EX1["d_k"]
    raw_scores = np.array([np.dot(EX1["q"], EX1[key]) for key in ("k1", "k2")], dtype=float)
    if np.abs(scores - raw_scores).max() <= 1e-3:
        problems.append("ex1_scores are the raw dot products q.k1 and q.k2: divide them by "
                        "sqrt(d_k).")
    elif any(np.abs(scores - raw_scores * wrong).max() <= 1e-3
             for wrong in (1 / d_k, np.sqrt(d_k), d_k)):
        problems.append("ex1_scores are q.k1 and q.k2 scaled by the wrong factor: the scale is "
                        "1 / sqrt(d_k), not 1 / d_k or sqrt(d_k).")
    if abs(weights.sum() - 1.0) > 2e-3:
        problems.append(f"your weights sum to {weights.sum():.3f}: softmax weights always "
                        "sum to 1.")
    else:
        with np.errstate(all="ignore"):
            softmax_of_scores = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
        # Your own rounding, plus that of the scores through the softmax's slope (at most 1/4).
        if not np.abs(weights - softmax_of_scores).max() <= 1.5e-3:
            problems.append("your weights are not the softmax of your scores: "
                            "w_i = exp(s_i) / (exp(s_1) + exp(s_2)).")
    values = np.array([EX1["v1"], EX1["v2"]], dtype=float)  # (2, d_v): v1 and v2 as rows
    # Your rounding of the output, plus that of your weights carried through the values.
    allowed = 2e-3 + 1e-3 * np.abs(values).sum(axis=0).max()
    if not np.abs(output - weights @ values).max() <= allowed:
        problems.append("your output is not w1 * v1 + w2 * v2 with your own weights.")
    return problems


_report("Exercise 1", _ex1_problems())

# %% nbgrader={"grade": true, "grade_id": "ex1_autograded", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Exercise 1 is graded by the kit's autograder when you submit (3 points).
print("Exercise 1 is graded when you submit; the self-check above is only a first look.")

# %% [markdown]
# ## 2. Why divide by $\sqrt{d_k}$?
#
# If the components of $q$ and $k$ are independent, with mean 0 and variance 1, then
# $q \cdot k = \sum_{i=1}^{d_k} q_i k_i$ has mean 0 and **variance $d_k$**: its standard deviation
# grows like $\sqrt{d_k}$, and dividing by $\sqrt{d_k}$ brings the scores back to unit variance (the
# cell below checks this by sampling). The assumption is about **initialisation**: training may
# change the scale later, but the fixed factor makes learning *start* with soft attention,
# whatever $d_k$ is.

# %% tags=["demo"] nbgrader={"grade": false, "grade_id": "demo_score_spread", "locked": true, "schema_version": 3, "solution": false, "task": false}
def _show_score_spread(samples=2_000):
    """Sample q.k for random unit-variance vectors and print its spread, raw and scaled."""
    rng = np.random.default_rng(0)
    for d_k in (4, 16, 64, 256):
        q = rng.normal(size=(samples, d_k))  # (samples, d_k)
        k = rng.normal(size=(samples, d_k))  # (samples, d_k)
        dots = (q * k).sum(axis=-1)  # (samples,): one q.k per sample
        print(f"d_k = {d_k:3d}: std of q.k = {dots.std():5.2f}  (sqrt(d_k) = {np.sqrt(d_k):5.2f}),"
              f"  after dividing by sqrt(d_k): {(dots / np.sqrt(d_k)).std():.2f}")


_show_score_spread()

# %% [markdown]
# Large gaps between scores drive the softmax towards a one-hot vector, where it is *saturated*:
# almost flat, so its gradients are tiny. With two keys,
#
# $$\frac{\partial w_1}{\partial s_1} = \frac{\partial w_2}{\partial s_2} = w_1 w_2, \qquad
#   \frac{\partial w_1}{\partial s_2} = \frac{\partial w_2}{\partial s_1} = -w_1 w_2,$$
#
# so when $w_1 \approx 1$ and $w_2 \approx 0$ all of them are tiny: saturation starves the winner
# and the query just as much as the loser.
#
# In numbers: at $d_k = 64$, a typical head dimension, the scores' standard deviation is
# $\sqrt{64} = 8$. Take two keys whose raw scores differ by one standard deviation, 8:
#
# * **Unscaled**, $\mathrm{softmax}(8, 0)$ gives the larger key **0.9997** and the smaller
#   0.0003: one-hot in all but name, every gradient starved ($w_1 w_2 \approx 0.0003$).
# * **Scaled** by $1/\sqrt{64} = 1/8$, the gap is 1 and $\mathrm{softmax}(1, 0)$ gives the
#   larger key **0.731**: soft, and both keys receive gradient.
#
# At two standard deviations (16 raw, 2 scaled), unscaled gives $\approx 1.0000$, scaled
# **0.881**. Scaling never changes *which* key wins; it decides whether the loser is heard at all.

# %% [markdown]
# ---
# ## Exercise 2: scaled vs unscaled softmax (6 points + 2 points written)
#
# **(a)** Write `softmax(z)`: the softmax along the **last axis** of a 1-D or 2-D array `z` (each
# row normalised on its own). Make it *numerically stable*: `np.exp(1000.0)` overflows to `inf`,
# so subtract each row's largest score first (why is the softmax unchanged?). Do not modify `z`.

# %% nbgrader={"grade": false, "grade_id": "ex2_softmax", "locked": false, "schema_version": 3, "solution": true, "task": false}
def softmax(z):
    """Softmax along the last axis of z (1-D or 2-D): every slice along it sums to 1."""
    ### BEGIN SOLUTION
    z = np.asarray(z, dtype=float)  # (..., m)
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., m): the largest entry is now 0
    exps = np.exp(shifted)  # (..., m): every entry in (0, 1], so no overflow
    return exps / exps.sum(axis=-1, keepdims=True)  # (..., m)
    ### END SOLUTION


# %% jupyter={"source_hidden": true} tags=["self-check"] nbgrader={"grade": false, "grade_id": "ex2_selfcheck_softmax", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Self-check for Exercise 2(a), on the lesson's worked numbers. float32 or float64 both count.
def _ex2_softmax_problems():
    if "softmax" not in globals():
        return ["softmax is not defined: run the cell above first."]
    try:
        one_row = softmax(np.array([8.0, 0.0]))  # (2,)
    except NotImplementedError as err:
        return [f"softmax is not written yet ({err})."]
    except Exception as err:
        return [f"softmax(np.array([8.0, 0.0])) raised {type(err).__name__}: {err}"]
    one_row = np.asarray(one_row, dtype=float)
    if one_row.shape != (2,):
        return [f"softmax of a 1-D array of 2 scores should have shape (2,); got {one_row.shape}."]
    problems = []
    if not abs(one_row.sum() - 1.0) <= 1e-5:
        return [f"softmax([8, 0]) sums to {one_row.sum():.10g}: divide by the sum of the "
                "exponentials."]
    for gap, lesson_value in ((8.0, 0.9997), (1.0, 0.731), (2.0, 0.881)):
        got = float(np.asarray(softmax(np.array([gap, 0.0])), dtype=float)[0])
        if not abs(got - lesson_value) <= 1e-3:
            problems.append(f"softmax([{gap:g}, 0])[0] = {got:.4f}; the lesson says "
                            f"{lesson_value}.")
    with np.errstate(all="ignore"):
        big = np.asarray(softmax(np.array([1000.0, 0.0])), dtype=float)  # (2,)
    if np.all(np.isfinite(big)):  # the largest not first: its minimum, mean, first overflow
        with np.errstate(all="ignore"):
            big = np.asarray(softmax(np.array([0.0, 2000.0])), dtype=float)  # (2,)
    if not np.all(np.isfinite(big)):
        problems.append(f"softmax([1000, 0]) or softmax([0, 2000]) gives {big}: exp "
                        "overflowed. Subtract the largest score (not the smallest, the mean "
                        "or the first) before calling np.exp.")
    # (3, 4): (queries, keys), not square, so a row sum without keepdims cannot broadcast
    scores = np.array([[1.0, 0.0, 0.0, 0.0], [2.0, 0.0, 0.0, 0.0], [8.0, 0.0, 0.0, 0.0]])
    untouched = scores.copy()
    try:
        rows = np.asarray(softmax(scores), dtype=float)  # (3, 4)
    except Exception as err:
        return problems + [f"softmax of a 2-D array raised {type(err).__name__}: {err}"]
    if not np.array_equal(scores, untouched):
        problems.append("softmax changed its input array: work on a copy.")
    if rows.shape != scores.shape:
        return problems + [f"softmax of a (3, 4) array should keep shape (3, 4); got {rows.shape}."]
    if not np.allclose(rows.sum(axis=-1), 1.0, rtol=0, atol=1e-5):
        if np.allclose(rows.sum(axis=0), 1.0, rtol=0, atol=1e-5):
            problems.append("each column of your softmax sums to 1 instead of each row: did you "
                            "normalise over the right axis? Use the last axis (axis=-1).")
        else:
            problems.append("the rows of your softmax of a 2-D array do not sum to 1: divide "
                            "each row by its own sum (axis=-1, keepdims=True).")
    return problems


_report("Exercise 2(a)", _ex2_softmax_problems())

# %% [markdown]
# **(b)** Two keys have raw scores $g$ and 0, with head dimension $d_k$: yours are printed below
# (and kept in `EX2`); the lesson's are $g = 8$, $d_k = 64$. With your `softmax`, compute
#
# * `p_unscaled`: the **larger** key's weight, unscaled;
# * `p_scaled`: the same after dividing the scores by $\sqrt{d_k}$;
# * `grad_unscaled`: $\partial w_2 / \partial s_2$, the slope of the **smaller** key's weight in
#   **its own** score, unscaled;
# * `grad_scaled`: the same, in the scaled score.
#
# One number each, to three significant figures (rounded or cut). Take each gradient from the
# **unrounded** weight: rounding the lesson's to 0.9997 first puts `grad_unscaled` 10% off.
# Hint: write $\partial w_2 / \partial s_2$ in terms of $w_2$.

# %% nbgrader={"grade": false, "grade_id": "ex2_given", "locked": true, "schema_version": 3, "solution": false, "task": false}
print("Your numbers:", _numbers_text("ex2"))

# %% nbgrader={"grade": false, "grade_id": "ex2_numbers", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
# Computed from your numbers; with the lesson's (8, 0) and d_k = 64: 0.99966, 0.73106,
# 3.352e-4 and 0.19661.
p_unscaled = float(softmax(np.array([EX2["gap"], 0.0]))[0])
p_scaled = float(softmax(np.array([EX2["gap"], 0.0]) / np.sqrt(EX2["d_k"]))[0])
# d w / d s of a key's own weight is w (1 - w); the smaller key's weight is 1 - p.
grad_unscaled = (1 - p_unscaled) * p_unscaled
grad_scaled = (1 - p_scaled) * p_scaled
### END SOLUTION

# %% jupyter={"source_hidden": true} tags=["self-check"] nbgrader={"grade": false, "grade_id": "ex2_selfcheck_numbers", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Self-check for Exercise 2(b): the weights for your numbers (`EX2`), the gradients against a
# precise finite-difference estimate, each to three significant figures as when graded.
def _ex2_figure(reference):
    """One unit in the third significant figure of `reference` (0.731 -> 0.001)."""
    return 10.0 ** (np.floor(np.log10(abs(reference))) - 2)


def _ex2_near(value, reference):
    return abs(value - reference) <= _ex2_figure(reference) * (1 + 1e-9)


def _ex2_short(value, reference):
    """Right, but written with two significant figures (0.73 for 0.731), or fewer."""
    return (value == float(f"{value:.2g}")
            and abs(value - reference) <= 10 * _ex2_figure(reference) * (1 + 1e-9))


def _ex2_smaller_weight_slope(gap):
    """d w2 / d s2 for scores (gap, s2) at s2 = 0, by a central difference with a tiny step."""
    step = 1e-4
    weight = lambda s2: 1.0 / (1.0 + np.exp(gap - s2))  # the smaller key's softmax weight
    return (weight(step) - weight(-step)) / (2 * step)


def _ex2_number_problems():
    if "EX2" not in globals():
        return ["your numbers are not known yet: run the cell *Your numbers* near the top."]
    answers = {}
    for name in ("p_unscaled", "p_scaled", "grad_unscaled", "grad_scaled"):
        if name not in globals():
            return [f"{name} is not defined: run the answer cell above first."]
        raw = globals()[name]
        if raw is ...:
            return [f"{name} is still `...`: not answered yet."]
        if _is_text(raw):
            return [f"{name} holds text: write the number itself, without quotes."]
        if _plain_problem(name, raw):
            return [_plain_problem(name, raw)]
        try:
            value = np.asarray(raw, dtype=float)
        except (TypeError, ValueError, OverflowError):
            value = None
        if value is None or value.size != 1 or not np.isfinite(value).all():
            return [f"{name} should be a single number; got {str(raw)[:60]}."]
        answers[name] = float(value.reshape(()))
    p_unscaled_, p_scaled_, grad_unscaled_, grad_scaled_ = answers.values()
    # The larger key's weight, 1 / (1 + e^-gap), for your raw and scaled gaps (for the lesson's
    # gap 8 and d_k = 64, the lesson's 0.9997 and 0.731).
    gap, d_k = EX2["gap"], EX2["d_k"]
    root = f"{math.isqrt(d_k)}" if math.isqrt(d_k) ** 2 == d_k else f"sqrt({d_k})"
    lesson = (gap, d_k) == (8, 64)
    larger_unscaled = 1 / (1 + np.exp(-gap))
    larger_scaled = 1 / (1 + np.exp(-gap / np.sqrt(d_k)))
    shown = (("p_unscaled", p_unscaled_, larger_unscaled),
             ("p_scaled", p_scaled_, larger_scaled),
             ("grad_unscaled", grad_unscaled_, _ex2_smaller_weight_slope(gap)),
             ("grad_scaled", grad_scaled_, _ex2_smaller_weight_slope(gap / np.sqrt(d_k))))
    short = [f"{name} = {value:g} is right to two significant figures only: give three."
             for name, value, reference in shown
             if not _ex2_near(value, reference) and _ex2_short(value, reference)]
    if short:
        return short
    problems = []
    if _ex2_near(p_unscaled_, 1 - larger_unscaled):
        problems.append("p_unscaled is the smaller key's weight: report the larger key's.")
    elif _ex2_near(p_unscaled_, larger_scaled):
        problems.append(f"p_unscaled looks scaled: use the raw scores ({gap}, 0) here.")
    elif not _ex2_near(p_unscaled_, larger_unscaled):
        problems.append(f"p_unscaled = {p_unscaled_:.5f}; " + (
            "the lesson gives 0.9997." if lesson else
            f"it should be the larger key's weight for the raw scores ({gap}, 0)."))
    if _ex2_near(p_scaled_, 1 - larger_scaled):
        problems.append("p_scaled is the smaller key's weight: report the larger key's.")
    elif _ex2_near(p_scaled_, larger_unscaled):
        problems.append(f"p_scaled equals the unscaled weight: divide the scores by sqrt(d_k) "
                        f"= {root}.")
    elif _ex2_near(p_scaled_, 1.0 / (1.0 + np.exp(-gap / d_k))):
        problems.append(f"p_scaled uses scores divided by d_k = {d_k}: the scale is "
                        f"1 / sqrt(d_k) = 1/{root}.")
    elif not _ex2_near(p_scaled_, larger_scaled):
        problems.append(f"p_scaled = {p_scaled_:.4f}; " + (
            "the lesson gives 0.731." if lesson else
            f"it should be the larger key's weight for the scores ({gap}, 0) / {root}.")
            + f" Did you divide by sqrt(d_k) = {root}?")
    for name, value in (("grad_unscaled", grad_unscaled_), ("grad_scaled", grad_scaled_)):
        if not 0.0 < value <= 0.25:
            problems.append(f"{name} = {value:.4g} cannot be right: a key's weight grows with "
                            "its own score, so the derivative is positive, and for a softmax it "
                            "never exceeds 0.25.")
    if problems:
        return problems
    for name, value, score_gap in (("grad_unscaled", grad_unscaled_, gap),
                                   ("grad_scaled", grad_scaled_, gap / np.sqrt(d_k))):
        estimate = _ex2_smaller_weight_slope(score_gap)
        if _ex2_near(value, estimate):
            continue
        if name == "grad_scaled" and _ex2_near(value, estimate / np.sqrt(d_k)):
            problems.append("grad_scaled is the derivative with respect to the raw score: take "
                            "it with respect to the scaled score that goes into the softmax.")
        elif abs(value - estimate) <= 0.2 * estimate:
            problems.append(f"{name} is only approximately right, not to three significant "
                            "figures: compute it from the unrounded weight (a finite difference "
                            "needs a much smaller step, or a central difference).")
        else:
            problems.append(f"{name} does not match a finite-difference estimate: nudge the "
                            "smaller key's score by a tiny amount and watch how its weight "
                            "moves.")
    return problems


_report("Exercise 2(b)", _ex2_number_problems())

# %% [markdown]
# **(c)** In two or three sentences, with your numbers from (b): why does dividing by
# $\sqrt{d_k}$ keep gradient flowing to the smaller key? *(2 points, graded by hand.)*

# %% [markdown] nbgrader={"grade": true, "grade_id": "ex2_explain", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# ### BEGIN SOLUTION
# **Model answer** (the lesson's numbers; `sdpa-course variant STUDENT` prints a student's own).
# Unscaled, the gap of 8 saturates the softmax: the larger key takes 0.9997, and the smaller
# key's weight barely reacts to its own score (slope $w(1-w) \approx 0.000335$), so almost no
# gradient reaches it. Divided by $\sqrt{d_k} = 8$ the gap is 1, the softmax stays soft (0.731)
# and the slope is 0.197, 586 times larger; at the raw score $q \cdot k$ (a further $1/8$: 0.0246)
# still 73 times. The ranking is unchanged; only the saturation goes.
#
# **Mark scheme (2 points).** Whole points only; read the answer for these two ideas:
# (i) *saturation*: unscaled, the gap of 8 makes the softmax nearly one-hot (0.9997), and
# (ii) *gradient*: where it is saturated the smaller key's weight has a near-zero slope
# ($w(1-w) \approx 0.0003$), while scaled (gap 1, 0.731) the slope is 586 times larger; with a
# student's own numbers it is between 60 and 1,800 times larger (`sdpa-course variant STUDENT`).
#
# * **2 points**: (i) and (ii), linked: saturation is *why* the gradient vanishes.
# * **1 point**: one only, e.g. *"unscaled, the other key is ignored"*, nothing on the gradient.
# * **0 points**: neither. **"Scaling prevents overflow" earns nothing**: subtracting the row's
#   maximum (2(a)) does that; a gap of 8 overflows nothing. Nor do gradients "explode": they vanish.
# ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex2_autograded", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false}
# Exercise 2 (a) and (b) are graded by the kit's autograder when you submit (6 points);
# (c) is graded by hand.
print("Exercise 2 is graded when you submit; the self-checks above are only a first look.")

# %% [markdown]
# ## 3. Self-attention
#
# In **self-attention** the queries, keys and values all come from one sequence
# $X \in \mathbb{R}^{T \times d}$ ($T$ tokens) through learned projections, $Q = X W_Q$,
# $K = X W_K$, $V = X W_V$ with $W_Q, W_K \in \mathbb{R}^{d \times d_k}$ and
# $W_V \in \mathbb{R}^{d \times d_v}$. Every position attends to every position of the same
# sequence: $n = m = T$.
#
# ## 4. Causal masking
#
# A language model that predicts the next token must not see it: position $t$ may not attend to
# positions $j > t$. A **causal mask** sets their scores to $-\infty$ *before* the softmax; as
# $e^{-\infty} = 0$, the future gets exactly zero weight and each row still sums to 1. (Zeroing
# weights *after* the softmax breaks the row sums; a score of 0 still gives the future weight.)
#
# Here a mask is a boolean $(n, m)$ array in which **`True` means "masked out"**; the causal mask
# is `True` strictly above the diagonal (a position always sees itself).
#
# **Careful:** PyTorch's `torch.nn.functional.scaled_dot_product_attention` reads a boolean
# `attn_mask` as `True` = *may attend*, and the Annotated Transformer's
# `scores.masked_fill(mask == 0, -1e9)` keeps the 1s. Handing one convention's mask to the other
# raises nothing and silently inverts it: invert it yourself (`~mask`).

# %% [markdown]
# ---
# ## Exercise 3: causal scaled dot-product attention (11 points)
#
# **(a)** Write `attention(Q, K, V, mask=None)` returning the pair `(out, attn)`:
#
# * `Q` has shape `(n, d_k)`, `K` has shape `(m, d_k)`, `V` has shape `(m, d_v)`;
# * `mask` is `None` (nothing masked) or a boolean `(n, m)` array, `True` = masked out;
# * `attn` is the `(n, m)` weights (rows sum to 1, masked entries 0), `out` the `(n, d_v)` outputs.
#
# $n$ may differ from $m$, and $d_k$ from $d_v$. Do not modify the inputs; you may use your
# `softmax`. (Rows with every key masked are not part of this exercise, and implementations
# disagree on them: a `-inf` fill gives NaN, the kit's reference returns zero weights, and a
# `-1e9` fill, as in the lesson, spreads the weight uniformly over the masked keys.)

# %% nbgrader={"grade": false, "grade_id": "ex3_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
def attention(Q, K, V, mask=None):
    """Scaled dot-product attention; mask True = masked out. Returns (out, attn)."""
    ### BEGIN SOLUTION
    d_k = Q.shape[-1]
    scores = Q @ K.T / np.sqrt(d_k)  # (n, d_k) @ (d_k, m) -> (n, m)
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)  # (n, m): a new array, the input is untouched
    attn = softmax(scores)  # (n, m): each row sums to 1
    out = attn @ V  # (n, m) @ (m, d_v) -> (n, d_v)
    return out, attn
    ### END SOLUTION


# %% jupyter={"source_hidden": true} tags=["self-check"] nbgrader={"grade": false, "grade_id": "ex3_selfcheck_attention", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Self-check for Exercise 3(a): shapes, rows, the lesson's scaling numbers, a causal mask and large
# scores. float32 or float64, -inf or -1e9 for masked scores: all count.
def _ex3_call(*args, **kwargs):
    """attention's answer as two float arrays, or a string saying what is wrong with it."""
    result = attention(*args, **kwargs)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        return "attention should return the pair (out, attn)."
    if _plain_problem("attention's answer", result):
        return _plain_problem("attention's answer", result)
    try:
        return tuple(np.asarray(x, dtype=float) for x in result)
    except (TypeError, ValueError, OverflowError):
        return "attention should return two arrays of numbers, (out, attn)."


def _ex3_attention_problems():
    if "attention" not in globals():
        return ["attention is not defined: run the cell above first."]
    rng = np.random.default_rng(7)
    n, m, d_k, d_v = 3, 5, 4, 2
    Q = rng.normal(size=(n, d_k))  # (n, d_k)
    K = rng.normal(size=(m, d_k))  # (m, d_k)
    V = rng.normal(size=(m, d_v))  # (m, d_v)
    originals = [Q.copy(), K.copy(), V.copy()]
    try:
        result = _ex3_call(Q, K, V)
    except NotImplementedError as err:
        return [f"attention is not written yet ({err})."]
    except Exception as err:
        hint = ""
        if isinstance(err, ValueError) and "broadcast" in str(err):
            hint = (" If it is the softmax's division: a sum over each row without "
                    "keepdims=True has shape (n,), which cannot divide the (n, m) scores (and "
                    "where n = m it divides the wrong entries, so the rows of your weights do "
                    "not sum to 1). Sum with keepdims=True.")
        elif isinstance(err, TypeError) and "mask" in str(err):
            hint = (" Give mask a default, def attention(Q, K, V, mask=None). When mask is None, "
                    "skip the masking step.")
        elif isinstance(err, ValueError) and ("matmul" in str(err) or "shape" in str(err)):
            hint = (f" Check the shapes, with n = {n} queries and m = {m} keys: Q K^T is (n, m) "
                    "and (n, m) @ V is (n, d_v).")
        return [f"attention(Q, K, V) with mask=None raised {type(err).__name__}: {err}.{hint}"]
    if isinstance(result, str):
        return [result]
    out, attn = result
    if out.shape == (n, m) and attn.shape == (n, d_v):
        return ["attention seems to return (attn, out): return (out, attn)."]
    if attn.shape == (m, n):
        if out.shape == (n, d_v) and np.allclose(out, attn.T @ V, atol=1e-5):
            return [f"attn should have shape (n, m) = ({n}, {m}), got {attn.shape}: your weights "
                    "are transposed; return them with one row per query."]
        return [f"attn should have shape (n, m) = ({n}, {m}), got {attn.shape}: did you multiply "
                "K by Q? The scores are Q K^T."]
    if attn.shape != (n, m):
        return [f"attn should have shape (n, m) = ({n}, {m}), got {attn.shape}."]
    if out.shape != (n, d_v):
        return [f"out should have shape (n, d_v) = ({n}, {d_v}), got {out.shape}."]
    problems = []
    if any(not np.array_equal(a, b) for a, b in zip((Q, K, V), originals)):
        problems.append("attention modified Q, K or V: leave its inputs untouched.")
        Q, K, V = originals
    try:
        again = _ex3_call(*(rng.normal(size=x.shape) for x in (Q, K, V)))  # new values, same shapes
    except Exception as err:
        return problems + [f"attention raised {type(err).__name__} on new inputs: {err}"]
    if not isinstance(again, str) and all(np.array_equal(a, b) for a, b in zip(again, result)):
        return problems + ["attention gives the same answer for new inputs of the same shapes: "
                           "it must not keep state (a cache, a global) between calls."]
    if np.allclose(attn, 1.0 / m):
        return problems + ["without a mask all your weights are equal (1/m): is a mask applied "
                           "even when mask is None? When mask is None, skip the masking step."]
    if not np.allclose(attn.sum(axis=-1), 1.0, rtol=0, atol=1e-5):
        if np.allclose(attn.sum(axis=0), 1.0, rtol=0, atol=1e-5):
            return problems + ["each column of your weights sums to 1 instead of each row: did "
                               "you normalise over the right axis? Each query's weights (a row) "
                               "should sum to 1."]
        return problems + ["the rows of your weights do not sum to 1: divide each row by its "
                           "own sum, so that each query's weights sum to 1."]
    if not np.abs(out - attn @ V).max() <= 1e-5:
        problems.append("out is not attn @ V: each output row is the weighted sum of the values.")
    # The lesson's numbers: d_k = 64, raw scores (8, 0), so the scaled weight is 0.731. Three
    # alike queries and two keys, so that d_k read from another axis (n = 3, m = 2) shows.
    q = np.zeros((3, 64))  # (3, d_k)
    q[:, 0] = 8.0
    keys = np.zeros((2, 64))  # (2, d_k): q.k1 = 8, q.k2 = 0
    keys[0, 0] = 1.0
    try:
        lesson = _ex3_call(q, keys, np.eye(2))  # attn (1, 2)
        if isinstance(lesson, str):
            return problems + [lesson]
        weight = float(lesson[1][0, 0])
    except Exception as err:
        return problems + [f"attention on one query and two keys raised {type(err).__name__}: "
                           f"{err}"]
    if abs(weight - 0.9997) < 1e-4:
        problems.append("with d_k = 64 and raw scores (8, 0) your weight is 0.9997, the unscaled "
                        "value: divide the scores by sqrt(d_k).")
    elif not abs(weight - 0.731) <= 1e-3:
        problems.append(f"with d_k = 64 and raw scores (8, 0) your weight is {weight:.4f}; the "
                        "lesson gives 0.731. Check the scale 1 / sqrt(d_k): d_k is the "
                        "length of each query and key (Q.shape[1]), not their number.")
    return problems + _ex3_mask_problems(rng, d_k) + _ex3_large_score_problems(rng)


def _ex3_mask_problems(rng, d_k):
    """A causal mask, judged against your own unmasked weights on the same inputs."""
    T = 5
    future = np.arange(T)[None, :] > np.arange(T)[:, None]  # (T, T): True where key j > query t
    X = rng.normal(size=(T, d_k))  # (T, d_k)
    mask_copy = future.copy()
    try:
        unmasked = _ex3_call(X, X, X)
        masked = _ex3_call(X, X, X, mask=future)
    except Exception as err:
        hint = (" Compare mask with None (mask is not None) instead: `if mask:` asks for the "
                "truth of a whole array." if "truth value" in str(err) else "")
        return [f"attention with a mask raised {type(err).__name__}: {err}.{hint}"]
    if isinstance(masked, str) or isinstance(unmasked, str) or masked[1].shape != (T, T):
        return [f"with T = {T} queries and keys and a mask, attn should be ({T}, {T})."]
    problems = []
    if not np.array_equal(future, mask_copy):
        problems.append("attention modified the mask: leave its inputs untouched.")
    weights, plain = masked[1], unmasked[1]  # (T, T) each
    has_future = future.any(axis=-1)  # (T,): rows with a key to hide (all but the last)
    with np.errstate(invalid="ignore"):
        leak = np.nan_to_num(np.abs(weights[future])).max()
        kept = np.nan_to_num(np.abs(weights[~future & has_future[:, None]])).max()
    if np.allclose(weights, plain, atol=1e-6):
        problems.append("the mask has no effect: set the scores where it is True to -inf (or a "
                        "large negative number such as -1e9) before the softmax.")
    elif leak > 1e-6 and kept <= 1e-6:
        problems.append("your mask works backwards: True means 'masked out' (weight 0), and "
                        "your weights hide the other keys instead.")
    elif leak > 1e-6:
        problems.append("a masked (future) key still gets weight: set masked scores to -inf (or "
                        "a large negative number such as -1e9) before the softmax; 0, or a "
                        "small number such as -1, is not enough.")
    elif not np.allclose(weights.sum(axis=-1), 1.0, rtol=0, atol=1e-5):
        problems.append("with the causal mask your rows no longer sum to 1: mask the scores "
                        "before the softmax, so the remaining weights still sum to 1.")
    return problems


def _ex3_large_score_problems(rng):
    """Scores near 800 (exp overflows above about 709) must give the same weights as near 0."""
    Q, K, V = rng.normal(size=(3, 3)), rng.normal(size=(3, 3)), rng.normal(size=(3, 2))
    shift = np.full((3, 1), 40.0)  # an extra component 40: every scaled score gains 800
    try:
        with np.errstate(all="ignore"):
            moderate = _ex3_call(np.hstack([Q, 0 * shift]), np.hstack([K, 0 * shift]), V)
            large = _ex3_call(np.hstack([Q, shift]), np.hstack([K, shift]), V)
    except Exception as err:
        return [f"attention with scores near 800 raised {type(err).__name__}: {err}"]
    if isinstance(large, str) or isinstance(moderate, str):
        return []
    if np.all(np.isfinite(moderate[1])) and not np.all(np.isfinite(large[1])):
        return ["with scores near 800 your weights contain inf or NaN: exp overflowed. Subtract "
                "each row's largest score before calling np.exp."]
    lift = np.sqrt(4000.0)  # an extra component: every query's score on key 1 gains 2000
    on_key_1 = np.array([[0.0], [lift], [0.0]])  # (3, 1)
    try:
        with np.errstate(all="ignore"):
            spread = _ex3_call(np.hstack([Q, 0 * shift + lift]), np.hstack([K, on_key_1]), V)
    except Exception as err:
        return [f"attention with one score 2000 above the others raised "
                f"{type(err).__name__}: {err}"]
    if (not isinstance(spread, str) and np.all(np.isfinite(moderate[1]))
            and not np.all(np.isfinite(spread[1]))):
        return ["with one score 2000 above the others in a row your weights contain inf or "
                "NaN: exp overflowed. Subtract each row's largest score (not its smallest, its "
                "mean or its first) before calling np.exp."]
    return []


_report("Exercise 3(a)", _ex3_attention_problems())

# %% [markdown]
# **(b)** Write `causal_mask(T)`: a boolean `(T, T)` array, `True` strictly above the diagonal
# (key $j$ later than query $t$) and `False` elsewhere, diagonal included.

# %% nbgrader={"grade": false, "grade_id": "ex3_causal_mask", "locked": false, "schema_version": 3, "solution": true, "task": false}
def causal_mask(T):
    """(T, T) boolean mask, True strictly above the diagonal: the future is masked out."""
    ### BEGIN SOLUTION
    return np.triu(np.ones((T, T), dtype=bool), k=1)  # (T, T)
    ### END SOLUTION


# %% jupyter={"source_hidden": true} tags=["self-check"] nbgrader={"grade": false, "grade_id": "ex3_selfcheck_causal_mask", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Self-check for Exercise 3(b).
def _ex3_causal_mask_problems():
    if "causal_mask" not in globals():
        return ["causal_mask is not defined: run the cell above first."]
    T = 4
    try:
        got = causal_mask(T)
    except NotImplementedError as err:
        return [f"causal_mask is not written yet ({err})."]
    except Exception as err:
        return [f"causal_mask({T}) raised {type(err).__name__}: {err}"]
    try:
        got = np.asarray(got)
    except Exception:
        return [f"causal_mask should return a numpy array; got {type(got).__name__}."]
    if got.shape != (T, T):
        return [f"causal_mask({T}) should have shape ({T}, {T}); got {got.shape}."]
    if got.dtype != bool:
        return [f"causal_mask should hold booleans (dtype bool); got dtype {got.dtype}."]
    problems = []
    above = np.arange(T)[None, :] > np.arange(T)[:, None]  # (T, T): key j later than query t
    below = np.arange(T)[None, :] < np.arange(T)[:, None]  # (T, T): key j earlier than query t
    if np.diagonal(got).any():
        problems.append("your mask covers the diagonal: a position may attend to itself.")
    if got[below].any() and not got[above].any():
        problems.append("your mask covers the past (below the diagonal) instead of the future.")
    elif not got[above].all():
        problems.append("every position above the diagonal (the future) should be True.")
    elif got[below].any():
        problems.append("positions below the diagonal (the past) should be False.")
    return problems


_report("Exercise 3(b)", _ex3_causal_mask_problems())

# %% [markdown]
# **(c)** A test is code too, and it can be wrong. Write two checks of a causal attention matrix
# `attn` of shape `(T, T)` (row $t$: query $t$; column $j$: key $j$), each returning `True` or
# `False`:
#
# * `rows_sum_to_one(attn)`: every row sums to 1, **up to floating-point rounding** (float32 or
#   float64);
# * `future_is_zero(attn)`: every weight strictly above the diagonal ($j > t$) is **exactly** 0;
#   the diagonal and below may hold any weight.
#
# Each checks its own fact and nothing else. A row of NaN (what a `-inf` fill gives a fully masked
# row) breaks both facts: its sum is not 1, its weights above the diagonal are not 0. Each check
# earns its point only if it passes every correct matrix it is handed (float64 and float32) and
# fails every broken one.

# %% nbgrader={"grade": false, "grade_id": "ex3_rows_sum_to_one", "locked": false, "schema_version": 3, "solution": true, "task": false}
def rows_sum_to_one(attn):
    """True when every row of attn sums to 1, up to floating-point rounding."""
    ### BEGIN SOLUTION
    sums = np.asarray(attn, dtype=np.float64).sum(axis=-1)  # (T,): one sum per query
    # float32 rounding moves a sum by about 1e-7; a NaN makes the comparison False.
    return bool(np.all(np.abs(sums - 1.0) <= 1e-5))
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "ex3_future_is_zero", "locked": false, "schema_version": 3, "solution": true, "task": false}
def future_is_zero(attn):
    """True when every weight strictly above the diagonal (the future) is exactly 0."""
    ### BEGIN SOLUTION
    weights = np.asarray(attn)  # (T, T)
    future = np.triu(np.ones(weights.shape, dtype=bool), k=1)  # (T, T): key j after query t
    return bool(np.all(weights[future] == 0.0))  # exp(-inf) and exp(-1e9) are exactly 0
    ### END SOLUTION


# %% jupyter={"source_hidden": true} tags=["self-check"] nbgrader={"grade": false, "grade_id": "ex3_selfcheck_checks", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Self-check for Exercise 3(c): your checks on matrices whose right answer is known.
def _ex3_weights(seed, T, dtype, causal=True):
    """A correct (T, T) attention matrix in dtype; its rows sum to 1 only up to rounding."""
    rng = np.random.default_rng(seed)
    Q, K = rng.normal(size=(T, 4)), rng.normal(size=(T, 4))  # (T, 4) each
    scores = (Q @ K.T / 2.0).astype(dtype)  # (T, T), scaled by 1 / sqrt(4)
    if causal:
        scores = np.where(np.arange(T)[None, :] > np.arange(T)[:, None], -np.inf, scores)
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))  # (T, T)
    return exps / exps.sum(axis=-1, keepdims=True)  # (T, T): rows sum to 1 up to rounding


def _ex3_verdict(check, attn):
    """The check's answer as True or False, or a string saying why there is none."""
    try:
        answer = check(attn.copy())
    except NotImplementedError:
        raise
    except Exception as err:
        return f"raised {type(err).__name__}: {err}"
    if isinstance(answer, (bool, np.bool_)):
        return bool(answer)
    if isinstance(answer, np.ndarray) and answer.dtype == bool and answer.size == 1:
        return bool(answer.reshape(()))
    return f"returned {type(answer).__name__}, not True or False (use np.all(...))"


_EX3_CORRECT = (
    (_ex3_weights(1, 5, np.float64), "a correct float64 causal attention matrix"),
    (_ex3_weights(2, 5, np.float32), "a correct float32 causal attention matrix (its rows sum "
                                     "to 1 only up to rounding)"),
    (_ex3_weights(3, 32, np.float32), "a correct (32, 32) float32 causal attention matrix"),
)
_EX3_BASE = _ex3_weights(4, 6, np.float64)  # (6, 6): the broken matrices start from it
_EX3_SHORT_ROW, _EX3_LEAK, _EX3_NAN = _EX3_BASE.copy(), _EX3_BASE.copy(), _EX3_BASE.copy()
_EX3_SHORT_ROW[2] *= 0.995  # row 2 sums to 0.995: a tolerance of 1e-2 misses it
_EX3_LEAK[1, 4], _EX3_LEAK[1, 1] = 1e-6, _EX3_LEAK[1, 1] - 1e-6  # a future key gets 1e-6
_EX3_NAN[0] = np.nan  # a fully masked row under a -inf fill
_EX3_BROKEN = {
    "rows_sum_to_one": (
        (_EX3_SHORT_ROW, "a matrix whose row 2 sums to 0.995"),
        (_EX3_BASE.T.copy(), "a transposed causal matrix (its columns sum to 1, not its rows)"),
        (_EX3_NAN, "a matrix whose first row is NaN"),
    ),
    "future_is_zero": (
        (_EX3_LEAK, "a causal matrix with a weight of 1e-6 on a future key"),
        (_ex3_weights(5, 6, np.float64, causal=False), "a matrix computed without a mask"),
        (_EX3_BASE.T.copy(), "a transposed causal matrix (its weights sit above the diagonal)"),
        (_EX3_NAN, "a matrix whose first row is NaN"),
    ),
}
# Matrices that tell the usual slips apart (see the problems they print below).
_EX3_DYADIC = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.25, 0.25, 0.5]])  # sums exactly 1
_EX3_PAST_ZERO = _EX3_BASE.T.copy()  # (6, 6): zero below the diagonal instead of above
_EX3_ON_AND_ABOVE_ZERO = np.tril(_EX3_BASE, k=-1)  # (6, 6): zero on and above the diagonal
_EX3_ON_AND_BELOW_ZERO = np.triu(_EX3_PAST_ZERO, k=1)  # (6, 6): zero on and below it


def _ex3_check_problems(name):
    if name not in globals():
        return [f"{name} is not defined: run the cell above that defines it first."]
    check = globals()[name]
    try:
        for attn, what in _EX3_CORRECT:
            verdict = _ex3_verdict(check, attn)
            if isinstance(verdict, str):
                return [f"{name} on {what} {verdict}"]
            if not verdict:
                return [f"{name} returned False for {what}. " + _ex3_slip(name, check)]
        for attn, what in _EX3_BROKEN[name]:
            verdict = _ex3_verdict(check, attn)
            if isinstance(verdict, str):
                return [f"{name} on {what} {verdict}"]
            if verdict:
                return [f"{name} returned True for {what}: a check must fail on a broken "
                        "matrix, or it catches nothing."]
    except NotImplementedError as err:
        return [f"{name} is not written yet ({err})."]
    return []


def _ex3_slip(name, check):
    """Why a check fails a correct matrix, when a usual slip explains it."""
    if name == "rows_sum_to_one":
        if _ex3_verdict(check, _EX3_DYADIC) is True:
            return ("It passes rows that sum to exactly 1, so it compares with 1 exactly: a sum "
                    "of floats is 1 only up to rounding: compare with a tolerance (as "
                    "np.allclose does), not with == 1.")
        return "A correct matrix must pass: each row sums to 1 up to rounding."
    below = _ex3_verdict(check, _EX3_PAST_ZERO)
    on_and_below = _ex3_verdict(check, _EX3_ON_AND_BELOW_ZERO)
    slips = []
    if below is True or on_and_below is True:
        slips.append("It looks below the diagonal (the past): the future is above it, j > t.")
    if _ex3_verdict(check, _EX3_ON_AND_ABOVE_ZERO) is True or (
            on_and_below is True and below is False):
        slips.append("It wants a zero diagonal, but the diagonal may hold weight: each query "
                     "attends to itself; only the weights strictly above it must be 0.")
    return " ".join(slips) or ("A correct causal matrix must pass: only the weights strictly "
                               "above the diagonal must be 0.")


_report("Exercise 3(c)", _ex3_check_problems("rows_sum_to_one")
        + _ex3_check_problems("future_is_zero"))

# %% [markdown]
# As the lesson does, the cell below runs your `attention` on a random causal example and
# applies your two checks.

# %% tags=["demo"] nbgrader={"grade": false, "grade_id": "ex3_verify", "locked": true, "schema_version": 3, "solution": false, "task": false}
def _verify_causal_example():
    rng = np.random.default_rng(0)
    T, d_k, d_v = 6, 8, 8
    Q, K, V = rng.normal(size=(T, d_k)), rng.normal(size=(T, d_k)), rng.normal(size=(T, d_v))
    try:
        out, attn = attention(Q, K, V, mask=causal_mask(T))  # (T, d_v), (T, T)
        facts = {"rows_sum_to_one(attn)": rows_sum_to_one(attn),
                 "future_is_zero(attn)": future_is_zero(attn)}
    except NotImplementedError as err:
        print(f"Not yet: {err}. Finish Exercise 3 and run this cell again.")
        return
    except Exception as err:
        print(f"Your code raised {type(err).__name__}: {err}")
        return
    print(f"A random causal example, T = {T}: out has shape {np.shape(out)}.")
    for call, verdict in facts.items():
        print(f"  {call:<22} -> {verdict}")
    if all(verdict is True or verdict is np.True_ for verdict in facts.values()):
        print("Both structural facts hold.")
    else:
        print("A fact does not hold: your attention or your check is wrong (the self-checks "
              "above say which).")


_verify_causal_example()

# %% nbgrader={"grade": true, "grade_id": "ex3_autograded", "locked": true, "points": 11, "schema_version": 3, "solution": false, "task": false}
# Exercise 3 is graded by the kit's autograder when you submit (11 points).
print("Exercise 3 is graded when you submit; the self-checks above are only a first look.")

# %% [markdown]
# ### Looking at causal self-attention
#
# The cell below draws your causal weights for $T = 8$ random tokens (row $t$: query $t$; column
# $j$: key $j$). Above the diagonal, the future should be exactly zero (grey); the first token sees
# only itself.

# %% tags=["demo"] nbgrader={"grade": false, "grade_id": "ex3_heatmap", "locked": true, "schema_version": 3, "solution": false, "task": false}
import matplotlib.pyplot as plt  # here, not in setup: only this picture needs it


def _draw_causal_attention():
    rng = np.random.default_rng(0)
    T, d_model, d_k, d_v = 8, 16, 8, 4
    X = rng.normal(size=(T, d_model))  # (T, d_model): one embedding per token
    W_q = rng.normal(size=(d_model, d_k)) / np.sqrt(d_model)  # (d_model, d_k)
    W_k = rng.normal(size=(d_model, d_k)) / np.sqrt(d_model)  # (d_model, d_k)
    W_v = rng.normal(size=(d_model, d_v)) / np.sqrt(d_model)  # (d_model, d_v)
    Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d_k), (T, d_k), (T, d_v)
    try:
        _, attn = attention(Q, K, V, mask=causal_mask(T))
    except NotImplementedError as err:
        print(f"No picture yet: {err}. Finish Exercise 3 and run this cell again.")
        return
    except Exception as err:
        print(f"No picture: your code raised {type(err).__name__}: {err}")
        return
    attn = np.asarray(attn)  # (T, T)
    if attn.shape != (T, T):
        print(f"No picture: attn should have shape ({T}, {T}), got {attn.shape}.")
        return
    # Exact zeros in light grey: a working mask greys out the whole upper triangle.
    colours = plt.get_cmap("viridis").copy()
    colours.set_bad("0.85")
    fig, ax = plt.subplots(figsize=(5, 4))
    image = ax.imshow(np.ma.masked_equal(attn, 0.0), cmap=colours, vmin=0.0, vmax=1.0)
    ax.set_xlabel("key position j")
    ax.set_ylabel("query position t")
    ax.set_title("Causal self-attention weights (grey: exactly 0)")
    ax.set_xticks(range(T))
    ax.set_yticks(range(T))
    fig.colorbar(image, ax=ax, label="weight")
    plt.show()
    # The same weights as numbers, for whoever cannot tell the colours apart.
    print("The weights drawn above (row t: query position t; column j: key position j):")
    print(np.array2string(attn, precision=2, suppress_small=True, floatmode="fixed"))


_draw_causal_attention()

# %% [markdown]
# ## 5. What attention costs
#
# For a sequence of length $T$, the scores $Q K^\top$ take $O(T^2 d_k)$ operations and the mix
# $A V$ another $O(T^2 d_v)$: $O(T^2 d)$ **time**, and $O(T^2)$ **memory** for the attention
# matrix. Memory bites first. One float32 $T \times T$ matrix, for one head of one sequence:

# %% tags=["demo"] nbgrader={"grade": false, "grade_id": "demo_attention_memory", "locked": true, "schema_version": 3, "solution": false, "task": false}
def _show_attention_memory():
    """Memory of one float32 (T, T) weight matrix for a few sequence lengths."""
    for T in (1_024, 4_096, 16_384, 65_536):
        mebibytes = T * T * 4 / 2**20  # 4 bytes per entry of the (T, T) matrix
        print(f"T = {T:6d}: {mebibytes:9,.0f} MiB")


_show_attention_memory()

# %% [markdown]
# **FlashAttention** computes the same output in tiles that fit in the GPU's fast on-chip memory,
# with a running softmax, never writing out the $T \times T$ matrix; the arithmetic is still
# $O(T^2 d)$. Linear-attention variants change the operation itself.
#
# **Next:** multi-head attention runs $h$ attention heads in parallel, each with its own
# projections, so that different heads can attend to different representation subspaces.

# %% [markdown]
# ---
# # Take-home extension: Exercise 4
#
# **The lab ends here.** Exercise 4 is optional, for after the session (45 to 90 minutes). It
# earns **extra credit**, added on top of your grade: it never lowers it, and leaving it alone
# costs nothing.

# %% [markdown]
# ---
# ## Exercise 4: blockwise attention, online softmax (optional, 4 points extra credit)
#
# Blockwise attention keeps only one block of the weights at a time. With blocks of 64 keys:
#
# | $T$ | one $(T, T)$ float32 matrix | one $(T, 64)$ block of it |
# |---:|---:|---:|
# | 1,024 | 4 MiB | 256 KiB |
# | 4,096 | 64 MiB | 1 MiB |
# | 16,384 | 1 GiB | 4 MiB |
# | 65,536 | 16 GiB | 16 MiB |
#
# The trick is an **online softmax**. Take the keys `block` at a time and keep, for every
# query, three running quantities: the largest score seen so far $m$, the sum of the weights
# so far $\ell = \sum_j e^{s_j - m}$, and the weighted sum of the values so far
# $a = \sum_j e^{s_j - m} v_j$. Start from $m = -\infty$, $\ell = 0$, $a = 0$; for each block,
# with its scaled scores $s_j$,
#
# $$m' = \max\big(m, \max_j s_j\big), \qquad
#   \ell \leftarrow e^{m - m'} \ell + \sum_j e^{s_j - m'}, \qquad
#   a \leftarrow e^{m - m'} a + \sum_j e^{s_j - m'} v_j, \qquad m \leftarrow m',$$
#
# and after the last block, $\text{out} = a / \ell$. The factor $e^{m - m'}$ moves what was
# summed under the old maximum onto the new one (it is 1 when the maximum did not grow), and
# the division by $\ell$ happens once, at the end.
#
# Write `attention_blockwise(Q, K, V, causal=False, block=64)` that returns `out`, shape
# `(n, d_v)`: the same as `attention(Q, K, V)[0]`, or with `causal=True` (where $n = m$) the
# same as `attention(Q, K, V, mask=causal_mask(T))[0]`. `Q`, `K` and `V` are float64 or float32
# arrays (both are graded; in float32, `out` may stay float32). There is no `attn` to return:
# the point is never to build an $(n, m)$ array, neither the scores nor the weights nor a
# mask. `block` need not divide the number of keys. When graded, your function runs at
# $T = 2048$ and the memory it allocates is measured: it must stay below a quarter of one
# $T \times T$ float64 matrix (8 MiB). It must also finish in a few seconds (the grader stops a
# call after 5): work on a whole block of keys at once with numpy, not key by key in Python.

# %% nbgrader={"grade": false, "grade_id": "ex4_attention_blockwise", "locked": false, "schema_version": 3, "solution": true, "task": false}
def attention_blockwise(Q, K, V, causal=False, block=64):
    """out of attention(Q, K, V) (causal: with the causal mask), keys taken block by block."""
    ### BEGIN SOLUTION
    n, m = Q.shape[0], K.shape[0]
    scale = 1.0 / np.sqrt(Q.shape[-1])
    running_max = np.full(n, -np.inf)  # (n,): the largest score seen so far, per query
    total = np.zeros(n)  # (n,): sum of exp(score - running_max) so far
    acc = np.zeros((n, V.shape[-1]))  # (n, d_v): sum of exp(score - running_max) * value
    queries = np.arange(n)[:, None]  # (n, 1): query positions, for the causal mask
    for start in range(0, m, block):
        stop = min(start + block, m)
        scores = Q @ K[start:stop].T * scale  # (n, d_k) @ (d_k, b) -> (n, b)
        if causal:  # hide the keys after each query
            future = np.arange(start, stop)[None, :] > queries  # (n, b): key after query
            scores = np.where(future, -np.inf, scores)  # (n, b)
        new_max = np.maximum(running_max, scores.max(axis=-1))  # (n,)
        rescale = np.exp(running_max - new_max)  # (n,): 0 at the first block
        weights = np.exp(scores - new_max[:, None])  # (n, b): each at most 1
        total = total * rescale + weights.sum(axis=-1)  # (n,)
        acc = acc * rescale[:, None] + weights @ V[start:stop]  # (n, b) @ (b, d_v) -> (n, d_v)
        running_max = new_max
    return acc / total[:, None]  # (n, d_v): normalised once, at the end
    ### END SOLUTION


# %% jupyter={"source_hidden": true} tags=["self-check"] nbgrader={"grade": false, "grade_id": "ex4_selfcheck", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Self-check for Exercise 4: your function against itself (any block size must give the same
# answer), the lesson's numbers, the causal boundary, large scores and memory at T = 2048.

def _ex4_out(*args, **kwargs):
    """attention_blockwise's answer as a float array, or a string saying what is wrong."""
    result = attention_blockwise(*args, **kwargs)
    if isinstance(result, (tuple, list)):
        return "attention_blockwise should return out alone, not a pair: there is no attn."
    if _plain_problem("attention_blockwise's answer", result):
        return _plain_problem("attention_blockwise's answer", result)
    try:
        return np.asarray(result, dtype=float)
    except (TypeError, ValueError):
        return "attention_blockwise should return an array of numbers."


def _ex4_problems():
    if "attention_blockwise" not in globals():
        return ["attention_blockwise is not defined: run the cell above first."]
    rng = np.random.default_rng(11)
    n, m, d_k, d_v = 5, 11, 4, 3
    Q, K, V = rng.normal(size=(n, d_k)), rng.normal(size=(m, d_k)), rng.normal(size=(m, d_v))
    try:
        one_block = _ex4_out(Q, K, V, block=m)  # (n, d_v): every key in one block
        answers = {block: _ex4_out(Q, K, V, block=block) for block in (1, 3, 5)}
    except NotImplementedError as err:
        return [f"attention_blockwise is not written yet ({err})."]
    except Exception as err:
        return [f"attention_blockwise raised {type(err).__name__}: {err}"]
    for answer in (one_block, *answers.values()):
        if isinstance(answer, str):
            return [answer]
        if answer.shape != (n, d_v):
            return [f"out should have shape (n, d_v) = ({n}, {d_v}); got {answer.shape}."]
    for block, answer in answers.items():
        if not np.allclose(answer, one_block, rtol=1e-5, atol=1e-8):
            return [f"with block = {block} your answer differs from your own answer with every "
                    "key in one block: when the running maximum grows, rescale both running "
                    "sums by exp(m - m'), and divide by the total only once, at the end."]
    return (_ex4_lesson_problems() + _ex4_causal_problems() + _ex4_large_score_problems(Q, K, V)
            + _ex4_memory_problems())


def _ex4_lesson_problems():
    """d_k = 64, raw scores (0, 8), one key per block: the larger key's weight is 0.731."""
    q = np.zeros((1, 64))  # (1, d_k)
    q[0, 0] = 8.0
    keys = np.zeros((2, 64))  # (2, d_k): q.k1 = 0, q.k2 = 8, so the maximum grows
    keys[1, 0] = 1.0
    weights = _ex4_out(q, keys, np.eye(2), block=1)  # (1, 2): with V = I, out is the weights
    if isinstance(weights, str) or weights.shape != (1, 2):
        return []
    if abs(weights[0, 1] - 0.9997) < 1e-4:
        return ["with d_k = 64 and raw scores (0, 8) the second key's weight is 0.9997, the "
                "unscaled value: divide the scores by sqrt(d_k)."]
    if not abs(weights[0, 1] - 0.731) <= 1e-3:
        return [f"with d_k = 64, raw scores (0, 8) and block = 1, the second key's weight is "
                f"{weights[0, 1]:.4f}; the lesson gives 0.731."]
    return []


def _ex4_causal_problems():
    """With V the identity the output is the weight matrix: which keys does each query see?"""
    T = 9
    rng = np.random.default_rng(12)
    Q, K = rng.normal(size=(T, 3)), rng.normal(size=(T, 3))  # (T, 3) each
    try:
        with np.errstate(all="ignore"):
            weights = _ex4_out(Q, K, np.eye(T), causal=True, block=4)  # (T, T)
    except Exception as err:
        return [f"attention_blockwise with causal=True raised {type(err).__name__}: {err}"]
    if isinstance(weights, str) or weights.shape != (T, T):
        return []
    with np.errstate(invalid="ignore"):
        seen = np.isfinite(weights) & (np.abs(weights) > 1e-12)  # (T, T)
    last = [int(row.sum()) - 1 if row[:int(row.sum())].all() else None for row in seen]
    if all(t == T - 1 for t in last):
        return ["with causal=True every query sees every key: hide the keys after it (j > t)."]
    if None not in last and last != list(range(T)):
        if all(abs(e - t) <= 1 for t, e in enumerate(last)):
            return ["with causal=True the boundary is off by one: query t must see keys 0 to t, "
                    "itself included, and not key t + 1 (look where a block meets the diagonal)."]
        return ["with causal=True query t must see exactly keys 0 to t."]
    if None in last:
        return ["with causal=True query t must see exactly keys 0 to t."]
    return []


def _ex4_large_score_problems(Q, K, V):
    shift = np.full((Q.shape[0], 1), 40.0), np.full((K.shape[0], 1), 40.0)
    try:
        with np.errstate(all="ignore"):
            large = _ex4_out(np.hstack([Q, shift[0]]), np.hstack([K, shift[1]]), V, block=3)
    except Exception as err:
        return [f"attention_blockwise with scores near 800 raised {type(err).__name__}: {err}"]
    if not isinstance(large, str) and not np.all(np.isfinite(large)):
        return ["with scores near 800 your output contains inf or NaN: exp overflowed. Subtract "
                "the running maximum before calling np.exp."]
    return []


def _ex4_memory_problems():
    """Peak memory of one call at T = 2048, measured the way the grader measures it."""
    T, limit = 2048, 2048 * 2048 * 8 // 4  # a quarter of one (T, T) float64 matrix: 8 MiB
    rng = np.random.default_rng(13)
    Q, K, V = (rng.normal(size=(T, 4)) for _ in range(3))  # (T, 4) each, as the grader's
    # First an eighth of the keys and queries (a 64th of the work): code that would take
    # minutes at T = 2048 is told so now, instead of keeping this cell busy for them.
    small = T // 8
    started = time.thread_time()
    try:
        with np.errstate(all="ignore"):
            attention_blockwise(Q[:small], K[:small], V[:small], block=64)
    except Exception as err:
        return [f"attention_blockwise at T = {small} raised {type(err).__name__}: {err}"]
    estimate = (time.thread_time() - started) * (T // small) ** 2
    if estimate > 2.5:  # half the grader's limit, as below
        return [f"at T = {small} your function took {estimate / (T // small) ** 2:.2f} s, so "
                f"about {estimate:.0f} s at T = {T}; the grader stops a call after 5 s. Work "
                "on a whole block of keys at once with numpy, not key by key in Python."]
    for causal in (False, True):
        tracing = tracemalloc.is_tracing()
        if not tracing:
            tracemalloc.start()
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        try:
            # processor time of this thread, as the grader counts (waiting for a processor
            # excluded); numpy's own worker threads are not this thread's, and not slow
            started = time.thread_time()
            with np.errstate(all="ignore"):
                attention_blockwise(Q, K, V, causal=causal, block=64)
            seconds = time.thread_time() - started
            peak = tracemalloc.get_traced_memory()[1] - before
        except Exception as err:
            return [f"attention_blockwise at T = {T} raised {type(err).__name__}: {err}"]
        finally:
            if not tracing:
                tracemalloc.stop()
        if peak > limit:
            return [f"at T = {T} (causal={causal}) your function allocated {peak / 2**20:.1f} MiB "
                    f"at once, more than {limit // 2**20} MiB: it holds a whole (T, T) array "
                    "(scores, weights or mask). Keep one block at a time."]
        if seconds > 2.5:  # half the grader's limit: its machine may be slower than yours
            return [f"at T = {T} (causal={causal}) your function took {seconds:.1f} s; the "
                    "grader stops a call after 5 s, on a machine that may be slower than "
                    "yours. Work on a whole block of keys at once with numpy, not key by key "
                    "in Python."]
    return []


_report("Exercise 4", _ex4_problems())

# %% nbgrader={"grade": true, "grade_id": "ex4_autograded", "locked": true, "points": 0, "schema_version": 3, "solution": false, "task": false}
# Exercise 4 is optional: what it earns is recorded as extra credit when you submit.
print("Exercise 4 is graded when you submit, as extra credit; the self-check above is only a "
      "first look.")
