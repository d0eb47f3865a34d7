"""Each student's numbers for exercises 1 and 2, worked out from the course's numbers key.

Pure standard library, and written to be copied: the notebook's *Your numbers* cell holds
these same functions, character for character (`tests/test_variants.py` holds them equal), so
that a released notebook works out any student's numbers from their id without the kit.

- `_variant_digest`: HMAC-SHA256 of "assignment, student" under the course's public numbers
  key (domain-separated), 32 bytes that fix one student's numbers and variant label.
- `_ex1_numbers`: q, k1, k2 (d_k small integers each, d_k in {2, 3, 4}), v1 and v2 (two
  small integers each). `_ex1_fits` keeps numbers a calculator handles, on which each
  catalogued slip shows and which tell the lesson's story: scores of at most 4, key 1 the
  better match (q.k1 > q.k2, and q.k1 >= 0: unnormalised weights then sum to 1.13 or more),
  a scaled gap between the keys of 0.5 to 2 (every wrong scale then moves the weights by at
  least 0.047, 47 times the three-decimal tolerance), no zero value vector and values that
  differ in both components (each output component then depends on the weights), and
  weights that are not ones the lesson prints (`LESSON_SCALED_GAPS`).
- `_ex2_numbers`: the raw score gap in 6..9 and d_k a head dimension people use (16, 32, 64
  or 128), never a scaled weight the lesson prints (0.731, 0.881, or 0.6698 at a gap of 8
  with d_k = 128). Not beyond 9: a correct float32 computation of the smaller key's weight
  as 1 - p, which float32 holds near 1 to about 6e-8, is then no longer right to three
  significant figures (at a gap of 12 it is 5 units of the third figure off; up to 9, a
  twentieth of one).

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
