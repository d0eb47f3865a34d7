"""Each student's numbers for exercises 1 and 2, worked out from the course's numbers key.

Pure standard library, and written to be copied: the notebook's *Your numbers* cell holds
these same functions, character for character (`tests/test_variants.py` holds them equal), so
that a released notebook works out any student's numbers from their id without the kit.

- `_variant_digest`: HMAC-SHA256 of "assignment, student" under the course's public numbers
  key (domain-separated), 32 bytes that fix one student's numbers and variant label.
- `_ex1_numbers`: q, k1, k2 (d_k small integers each, d_k in {2, 4}), v1 and v2 (two small
  integers each). `_ex1_fits` keeps numbers a calculator handles and on which each catalogued
  slip shows: scores of at most 4, a scaled gap between the keys of 0.5 to 2 (every wrong
  scale then moves the weights by at least 0.047, 47 times the three-decimal tolerance), a
  score of at least 0 (unnormalised weights then sum to 1.06 or more), two different values.
- `_ex2_numbers`: the raw score gap in 6..9 and d_k a perfect square from 16 to 100, never a
  scaled gap of 1 or 2, whose weights (0.731, 0.881) the lesson prints as its worked example.
  Not beyond 9: a correct float32 computation of the smaller key's weight as 1 - p, which
  float32 holds near 1 to about 6e-8, is then no longer right to three significant figures
  (at a gap of 12 it is 5 units of the third figure off; up to 9, a twentieth of one).

Without a key or a student id the numbers are the lesson's own (`LESSON_EX1`, `LESSON_EX2`):
the default variant, today's exercise.
"""

import hashlib
import hmac
import itertools
import math
import unicodedata

LESSON_EX1 = {"q": (1, 0), "k1": (1, 0), "k2": (0, 1), "v1": (1, 0), "v2": (0, 1), "d_k": 2}
LESSON_EX2 = {"gap": 8, "d_k": 64}
DEFAULT_LABEL = "default"


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


def _ex1_fits(numbers):
    """Numbers a calculator handles and on which every catalogued slip shows."""
    s1, s2 = (sum(a * b for a, b in zip(numbers["q"], numbers[k], strict=True))
              for k in ("k1", "k2"))
    return (max(abs(s1), abs(s2)) <= 4 and max(s1, s2) >= 0
            and 0.5 <= abs(s1 - s2) / math.sqrt(numbers["d_k"]) <= 2
            and numbers["v1"] != numbers["v2"] and numbers != LESSON_EX1)


def _ex1_numbers(digest):
    """Exercise 1: one query, two keys and their values, all small integers; d_k is 2 or 4."""
    draws = _draws(digest, "ex1")
    while True:
        d_k = (2, 4)[next(draws) % 2]
        q, k1, k2 = (tuple(next(draws) % 5 - 2 for _ in range(d_k)) for _ in range(3))
        v1, v2 = (tuple(next(draws) % 5 - 2 for _ in range(2)) for _ in range(2))
        numbers = {"q": q, "k1": k1, "k2": k2, "v1": v1, "v2": v2, "d_k": d_k}
        if _ex1_fits(numbers):
            return numbers


def _ex2_numbers(digest):
    """Exercise 2: the raw score gap (6 to 9) and d_k (a perfect square, 16 to 100)."""
    draws = _draws(digest, "ex2")
    while True:
        numbers = {"gap": 6 + next(draws) % 4, "d_k": (4 + next(draws) % 7) ** 2}
        if numbers["gap"] ** 2 not in (numbers["d_k"], 4 * numbers["d_k"]):
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
