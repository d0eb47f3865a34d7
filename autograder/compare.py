"""Checks of a student's answer against the reference, in the trusted process.

Type first, then shape, then values; nothing is broadcast before comparing. A failed check
raises `Mismatch`, whose message is written for the student and never holds reference values
computed on hidden inputs.
"""

from __future__ import annotations

import math

import numpy as np

# Float64 results on O(1) inputs.
RTOL = 1e-9
ATOL = 1e-10
# Hand arithmetic (exercise 1) rounded to three decimals: 0.707, 0.670, 0.330 all pass.
THREE_DECIMALS = 5e-4 + 1e-12


class Mismatch(AssertionError):
    """A check failed; `str(self)` is the message shown to the student."""


def three_significant_figures(reference: float) -> float:
    """Absolute tolerance accepting `reference` rounded to three significant figures.

    Half a unit in the third significant figure of the reference: 0.99966 -> 5e-4, so 1.00,
    0.9997 and 0.99966 pass; 3.352e-4 -> 5e-7, so 3.35e-4 passes and 3.4e-4 does not.
    """
    if reference == 0:
        return 0.0
    exponent = math.floor(math.log10(abs(reference)))
    return 0.5 * 10.0 ** (exponent - 2) * (1 + 1e-9)


def _type_name(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of {value.dtype}"
    return f"a {type(value).__name__}"


def as_array(value, what: str, *, dtype_kind: str = "numbers") -> np.ndarray:
    """The answer as an ndarray, or a Mismatch when it is not numbers (or booleans)."""
    if value is None:
        raise Mismatch(f"{what} is None: did you forget to return or assign it?")
    if isinstance(value, (str, bytes, dict, set)):
        raise Mismatch(f"{what} should be {dtype_kind}, got {_type_name(value)}")
    try:
        arr = np.asarray(value)
    except ValueError:
        raise Mismatch(f"{what} should be a rectangular array of {dtype_kind}; its rows "
                       "have different lengths") from None
    if dtype_kind == "booleans":
        if arr.dtype != np.bool_:
            raise Mismatch(f"{what} should be an array of booleans (True = masked out), "
                           f"got {_type_name(arr)}")
    elif arr.dtype.kind not in "iuf":
        raise Mismatch(f"{what} should hold real numbers, got {_type_name(arr)}")
    return arr


def as_number(value, what: str) -> float:
    """A single real number (int, float, numpy scalar or 0-d array)."""
    if isinstance(value, (bool, np.bool_)):
        raise Mismatch(f"{what} should be a number, got a bool")
    arr = as_array(value, what)
    if arr.ndim != 0:
        raise Mismatch(f"{what} should be a single number, got an array of shape {arr.shape}")
    return float(arr)


def expect_shape(arr: np.ndarray, shape: tuple, what: str, *, hint: str = "") -> None:
    if arr.shape != tuple(shape):
        message = f"{what} should have shape {tuple(shape)}, got {arr.shape}"
        raise Mismatch(f"{message}: {hint}" if hint else message)


def expect_close(
    actual: np.ndarray,
    expected: np.ndarray,
    what: str,
    *,
    rtol: float = RTOL,
    atol: float = ATOL,
    hint: str = "",
) -> None:
    """Values within tolerance, once type and shape are known to be right."""
    expected = np.asarray(expected)
    expect_shape(actual, expected.shape, what)
    if not np.all(np.isfinite(actual)):
        bad = "NaN" if np.any(np.isnan(actual)) else "inf"
        raise Mismatch(f"{what} contains {bad}" + (f": {hint}" if hint else ""))
    wrong = np.abs(actual - expected) > atol + rtol * np.abs(expected)  # expected.shape
    if np.any(wrong):
        count = f"{int(wrong.sum())} of {wrong.size} values" if wrong.size > 1 else "the value"
        message = f"{what} is wrong: {count} differ from the expected result"
        # ": hint", not ". Hint": a hint may start with a name (`attn`), never capitalised
        raise Mismatch(f"{message}: {hint}" if hint else message)


def close(actual, expected, *, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    """Loose agreement for diagnosing (not grading): same shape, finite, values near."""
    try:
        actual = np.asarray(actual, dtype=float)
    except (TypeError, ValueError):
        return False
    expected = np.asarray(expected, dtype=float)
    return (
        actual.shape == expected.shape
        and bool(np.all(np.isfinite(actual)))
        and bool(np.allclose(actual, expected, rtol=rtol, atol=atol))
    )
