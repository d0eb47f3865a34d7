"""Checks of a student's answer against the reference, in the trusted process.

Type first, then shape, then values; nothing is broadcast before comparing. A failed check
raises `Mismatch`, whose message is written for the student and never holds reference values
computed on hidden inputs, nor more than a few words chosen by the answer: an answer computed
on hidden inputs can pick what it returns to spell them out, so a message names its shape
only when every size is one the kit chose (`shape_seen`), how many values differ in three
words (`expect_close`), and its dtype by numpy's name of a kind of number (`_type_name`).
Nothing here raises anything else, whatever the student's value
(a 400-digit integer, a string, a ragged list, complex numbers): every such value is an
answer that is wrong, and says so.

Tolerances (CONTRACT section 1, "Precision"). Each is chosen between two measured figures,
the largest error of a correct computation and the smallest error of a catalogued mistake on
the hidden inputs (the lesson's and those of a sample of students' variants);
`tests/test_tolerances.py` measures both on the corpus, so that the margin cannot silently
vanish (`python tests/test_tolerances.py` prints them).

- `FLOAT_RESULTS`, attention and softmax on O(1) inputs. A correct float32 computation
  (float32 throughout, -1e9, finfo.min or -inf fills, a 1e-8 epsilon in the denominator,
  plain loops) is off by at most 1.3e-7 (float32 rounds to 2**-24 ~ 6e-8 per operation):
  6.4e-4 of the tolerance on the lesson's hidden inputs, 1.1e-3 on students' own; exercise
  4's blockwise sums in float32 over up to 150 keys, 1.0e-3. The closest mistake, scaling by
  1/sqrt(d_v), is off by 379 times the tolerance on the lesson's inputs and at least 100
  times on students' own. rtol = atol = 1e-4 sits near the geometric middle of the two.
- `LARGE_SCORES`, a student's answer at scores near 800 against the same student's answer on
  inputs whose scores are lower by one constant (softmax does not change). float32 spaces
  numbers near 800 by 6.1e-5 (and the raw products near 1600 by 1.2e-4), so a correct
  float32 answer moves by up to about 5e-5: measured on 600 random inputs of the test's shape
  and on students' own inputs (variants), where it uses up to 1/20 of 1e-3; the lesson's
  fixed inputs alone had shown 5.8e-6. rtol = atol = 3e-3 keeps it under 1/50; the closest
  mistake is hundreds of times outside, and a softmax without max subtraction gives inf or NaN.
- `HAND`, exercise 1: numbers rounded or truncated to three decimals (0.669 and 0.670 for
  0.6698); the closest slip, scores divided by d_k, moves the weights by 47 times that.
- `BLOCKWISE_MEMORY`, exercise 4: the peak memory `attention_blockwise` may allocate in one
  call on T * T scores at T = 2048 (d_k = d_v = 4; with the mask n = m = T and block = 64,
  without it 128 queries against 32768 keys and block = 256), as tracemalloc measures it in
  the sandbox: a quarter of one T x T float64 matrix, 8 MiB. Blockwise code in the styles of
  the corpus peaks at 4.2 to 4.4 MiB (all queries against one block of keys: a few (T, 64)
  arrays) or 0.2 MiB (tiles); the (T, T) scores alone are 32 MiB, four times the limit (a
  whole softmax peaks at 96 MiB), and a causal mask built from np.ones((T, T)) at 68 MiB.
- `BLOCKWISE_RESIDENT`, exercise 4: how far the same call may raise its process's memory
  high-water mark, read by the trusted side (`autograder.sandbox.gauge`), which the student's
  code cannot reset, patch or allocate around (an mmap, a forked process) as it can
  tracemalloc: 24 MiB. The mark also counts pages of code and of the sandbox's own messages
  touched for the first time: measured as the worker's first call, the corpus's blockwise
  styles raise it by up to 11.9 MiB, at most 7.5 MiB above what tracemalloc sees of them
  (about half that once warm), and other correct styles (a row at a time into lists, blocks
  of queries over whole rows, extra copies) by up to 13.1 MiB; so an answer at tracemalloc's
  limit stays below 24 MiB, while one T x T float64 array is 32 MiB. The same bound holds
  the memory the call touched that the process had written (`MemoryGauge.touched`), so that
  memory allocated before the call and reused in it counts (a module-level T x T buffer:
  35 MiB and more); the corpus's correct styles touch at most 8.3 MiB (its inputs, its
  messages and its heap included). A T x T float32 array (16 MiB) hidden from tracemalloc
  stays below the bound.
- `significant_figures`, exercise 2: one unit in the third significant figure (rounded or
  truncated); a forward difference with step 1e-2 (3.369e-4 for 3.352e-4) is 1.7 units off
  and fails, as three significant figures require.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    """|actual - expected| <= atol + rtol * |expected|, elementwise."""

    rtol: float
    atol: float

    def ratio(self, actual, expected) -> float:
        """The largest error as a fraction of what is allowed (<= 1 passes); inf if not finite."""
        actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
        with np.errstate(all="ignore"):
            allowed = self.atol + self.rtol * np.abs(expected)  # expected.shape
            error = np.abs(actual - expected) / allowed  # expected.shape
        if error.size == 0:
            return 0.0
        return float(np.max(error)) if np.all(np.isfinite(error)) else math.inf


FLOAT_RESULTS = Tolerance(rtol=1e-4, atol=1e-4)
# exercise 4's memory test: n = m = T with the mask, n * m = T * T without
BLOCKWISE_MEMORY_T = 2048
# d_k = d_v there: the memory is the (T, block) and (T, T) arrays', whatever d is; a small d
# keeps the call cheap (the matrix products scale with it, and the test runs per submission)
BLOCKWISE_MEMORY_D = 4
BLOCKWISE_MEMORY = BLOCKWISE_MEMORY_T * BLOCKWISE_MEMORY_T * 8 // 4  # bytes: 8 MiB
BLOCKWISE_RESIDENT = BLOCKWISE_MEMORY_T * BLOCKWISE_MEMORY_T * 8 * 3 // 4  # bytes: 24 MiB
LARGE_SCORES = Tolerance(rtol=3e-3, atol=3e-3)
HAND = 1e-3 + 1e-12  # the 1e-12 absorbs the binary representation of 0.669 - 0.6698
# Exercise 1's later steps judged against the student's own earlier numbers (error carried
# forward): their own rounding (HAND) plus that of the step before, through softmax's slope
# (at most 1/4 per unit of score difference, so 2 * HAND / 4).
CARRIED_FORWARD = HAND + HAND / 2
# The most numbers any answer of this assignment has: exercise 4's memory test's out is
# (2048, 4), 8,192 values. A student's answer with more (a worker may reply with 64 MiB of
# uint8) is wrong by its size and never converted: read as float64 it was 8 times larger,
# once per check and probe, and a `check` of one such notebook grew to 5.8 GB.
MAX_ANSWER_VALUES = 2**20


def significant_figures(reference: float, figures: int = 3) -> float:
    """Absolute tolerance: one unit in the last of `figures` significant figures.

    0.99966 -> 1e-3, so 1.00, 0.999 and 0.9997 pass; 3.352e-4 -> 1e-6, so 3.35e-4 passes
    and 3.369e-4 (a forward difference with step 1e-2) does not.
    """
    if reference == 0 or not math.isfinite(reference):
        return 0.0
    exponent = math.floor(math.log10(abs(reference)))
    return 10.0 ** (exponent - figures + 1) * (1 + 1e-9)


def fewer_figures(value: float, reference: float, figures: int = 3) -> bool:
    """`value` is `reference` given to fewer significant figures than asked, rounded or cut:
    written with at most `figures` - 1 of them (0.73, 0.00034, 1.0) and within one unit of
    the last. Not a wrong computation: its message says to give more figures."""
    if not (math.isfinite(value) and math.isfinite(reference)) or reference == 0:
        return False
    return (value == float(f"{value:.{figures - 1}g}")
            and abs(value - reference) <= significant_figures(reference, figures - 1))


def fewer_decimals(values, expected, decimals: int = 3) -> bool:
    """Every one of `values` is its `expected` given to fewer decimals than asked, rounded or
    cut (0.71 for 0.7071): written with at most `decimals` - 1 of them, within one unit of
    the last."""
    unit = 10.0 ** -(decimals - 1)
    with np.errstate(all="ignore"):
        values, expected = np.asarray(values, dtype=float), np.asarray(expected, dtype=float)
        return bool(values.shape == expected.shape and np.all(np.isfinite(values))
                    and np.all(np.abs(values - np.round(values, decimals - 1)) <= 1e-12)
                    and np.all(np.abs(values - expected) <= unit * (1 + 1e-9)))


class Mismatch(AssertionError):
    """A check failed; `str(self)` is the message shown to the student.

    `problem` says what is wrong and `hint` what usually causes it; the report may replace
    the hint by the diagnosis that explains the failure.
    """

    def __init__(self, problem: str, hint: str = ""):
        self.problem, self.hint = problem, hint
        super().__init__(join_hint(problem, hint))


def join_hint(problem: str, hint: str) -> str:
    return f"{problem}: {hint}" if hint else problem


def _type_name(value) -> str:
    if isinstance(value, np.ndarray):
        kind = value.dtype.kind
        if kind in "biufcmM":  # numpy's own names: a bounded few
            return f"an array of {value.dtype.name}"
        return {"U": "an array of text", "S": "an array of bytes",
                "O": "an array of objects"}.get(kind, "an array of another dtype")
    return f"a {type(value).__name__}"  # plain data only: the codec's few types


def shape_seen(shape: tuple, sizes=()) -> str:
    """`shape` as a message may echo it: when its sizes are among `sizes` (the kit's, for
    this check), 0, 1 and 2, in at most one more dimension than those; else "another
    shape", as an answer computed on hidden inputs may choose its shape to spell them."""
    allowed = {0, 1, 2, *(int(s) for s in sizes)}
    shape = tuple(shape)
    if len(shape) <= max(len(sizes), 1) + 1 and all(size in allowed for size in shape):
        return f"shape {shape}"
    return "another shape"


def mib_seen(nbytes: int) -> int:
    """Memory in MiB as a message may say it: rounded up to a power of two, as a call on
    hidden inputs may choose how much it allocates to spell them."""
    mib = max(1, -(-int(nbytes) // 2**20))
    return 1 << (mib - 1).bit_length()


def _differ(wrong: int, size: int) -> str:
    """How many values differ, in three words: the count itself is the answer's choice."""
    if size == 1:
        return "the value differs"
    if wrong == size:
        return f"all {size} values differ"
    return f"one of {size} values differs" if wrong == 1 else f"some of {size} values differ"


def numbers(value) -> np.ndarray | None:
    """`value` as a float64 array, or None when it is not real numbers; never raises.

    For diagnosing, where a value that is not numbers is simply no match.
    """
    try:
        arr = np.asarray(value)
        if arr.dtype.kind not in "iuf" or arr.size > MAX_ANSWER_VALUES:
            return None
        with np.errstate(all="ignore"):
            return arr.astype(np.float64)
    except Exception:  # noqa: BLE001 - ragged lists, huge ints...: not numbers
        return None


# Numbers written in quotes: the notebook's self-checks say the same (they never read text).
_TEXT_HINT = "write the numbers themselves, without quotes"


def as_array(value, what: str, *, dtype_kind: str = "numbers") -> np.ndarray:
    """The answer as an ndarray, or a Mismatch when it is not numbers (or booleans)."""
    if value is None:
        raise Mismatch(f"{what} is None", "did you forget to return or assign it?")
    if isinstance(value, (str, bytes)):
        raise Mismatch(f"{what} should be {dtype_kind}, got text ({_type_name(value)})",
                       _TEXT_HINT)
    if isinstance(value, (dict, set)):
        raise Mismatch(f"{what} should be {dtype_kind}, got {_type_name(value)}")
    try:
        arr = np.asarray(value)
    except ValueError:
        raise Mismatch(f"{what} should be a rectangular array of {dtype_kind}; its rows "
                       "have different lengths") from None
    except Exception:  # noqa: BLE001 - whatever numpy makes of it, it is not numbers
        raise Mismatch(f"{what} should be {dtype_kind}, got {_type_name(value)}") from None
    if arr.size > MAX_ANSWER_VALUES:
        raise Mismatch(f"{what} has more than {MAX_ANSWER_VALUES} values, far more than "
                       "any answer here")
    if dtype_kind == "booleans":
        if arr.dtype != np.bool_:
            raise Mismatch(f"{what} should be an array of booleans (True = masked out), "
                           f"got {_type_name(arr)}")
    elif arr.dtype.kind in "SU":
        raise Mismatch(f"{what} should hold real numbers, got text ({_type_name(arr)})",
                       _TEXT_HINT)
    elif arr.dtype.kind not in "iuf":
        kind = "numbers too large for a float" if arr.dtype.kind == "O" else _type_name(arr)
        raise Mismatch(f"{what} should hold real numbers, got {kind}")
    return arr


def as_floats(value, what: str) -> np.ndarray:
    """Real numbers as float64; a number too large for float64 is a Mismatch."""
    arr = as_array(value, what)
    with np.errstate(all="ignore"):
        floats = arr.astype(np.float64)
    if np.any(np.isinf(floats) & ~np.isinf(arr)):
        raise Mismatch(f"{what} holds numbers too large for a float")
    return floats


def as_verdict(value, what: str) -> bool:
    """A check's answer: True or False (a Python or numpy bool, or a one-element bool array)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.ndarray) and value.dtype == np.bool_ and value.size == 1:
        return bool(value.reshape(()))
    shape = f" of {shape_seen(value.shape)}" if isinstance(value, np.ndarray) else ""
    raise Mismatch(f"{what} should return True or False, got {_type_name(value)}{shape}",
                   "a check answers with one bool for the whole matrix (np.all(...) gives one)")


def as_number(value, what: str) -> float:
    """A single real number: int, float, numpy scalar, 0-d or one-element array or list."""
    if isinstance(value, (bool, np.bool_)):
        raise Mismatch(f"{what} should be a number, got a bool")
    arr = as_floats(value, what)
    if arr.size != 1:
        raise Mismatch(f"{what} should be a single number, got an array of "
                       f"{shape_seen(arr.shape)}")
    return float(arr.reshape(()))


def as_pair(value, what: str, *, hint: str = "") -> np.ndarray:
    """Two numbers, shape (2,): a list or tuple of two numbers, or an array of 2 values
    in any layout that squeezes to (2,), such as (1, 2)."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return np.array([as_number(v, what) for v in value])
    arr = as_floats(value, what)
    if arr.size == 2:  # two values squeeze to (2,) whatever their layout
        return arr.reshape(2)
    raise Mismatch(f"{what} should be two numbers, got {shape_seen(arr.shape, (2,))}", hint)


def expect_shape(arr: np.ndarray, shape: tuple, what: str, *, hint: str = "") -> None:
    if arr.shape != tuple(shape):
        raise Mismatch(f"{what} should have shape {tuple(shape)}, got "
                       f"{shape_seen(arr.shape, shape).removeprefix('shape ')}", hint)


def expect_finite(arr: np.ndarray, what: str, *, hint: str = "") -> None:
    with np.errstate(all="ignore"):
        floats = np.asarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(floats)):
        bad = "NaN" if np.any(np.isnan(floats)) else "inf"
        raise Mismatch(f"{what} contains {bad}", hint)


def expect_close(
    actual: np.ndarray,
    expected: np.ndarray,
    what: str,
    *,
    tolerance: Tolerance = FLOAT_RESULTS,
    hint: str = "",
) -> None:
    """Values within tolerance, once type and shape are known to be right."""
    expected = np.asarray(expected, dtype=np.float64)
    expect_shape(actual, expected.shape, what)
    expect_finite(actual, what, hint=hint)
    with np.errstate(all="ignore"):
        actual = np.asarray(actual, dtype=np.float64)
        allowed = tolerance.atol + tolerance.rtol * np.abs(expected)  # expected.shape
        wrong = np.abs(actual - expected) > allowed  # expected.shape
    if np.any(wrong):
        raise Mismatch(f"{what} is wrong: {_differ(int(wrong.sum()), wrong.size)} from the "
                       "expected result", hint)


def close(actual, expected, tolerance: Tolerance = FLOAT_RESULTS) -> bool:
    """Agreement for diagnosing (not grading): same shape, finite, values near; never raises."""
    actual, expected = numbers(actual), numbers(expected)
    return (
        actual is not None and expected is not None
        and actual.shape == expected.shape
        and bool(np.all(np.isfinite(actual)))
        and tolerance.ratio(actual, expected) <= 1
    )
