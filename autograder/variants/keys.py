"""The course seed and the two keys made from it, one public and one secret.

The seed is a secret of the course (`c.CourseVariants.seed` in its nbgrader_config.py, written
by `sdpa-course init`). Two keys are made from it by HMAC-SHA256 with distinct labels, so
that neither says anything about the other or about the seed:

- the *numbers key* is public: `sdpa-course release` writes it into the released notebook,
  which works out any student's numbers for exercises 1 and 2 from it (`numbers`);
- the *inputs key* never leaves the instructor: it draws each student's hidden test inputs
  (`inputs_seed`), so inputs leaked by one submission say nothing about another's, and
  knowing the numbers key does not help to find them.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

SEED_DIGITS = 32  # at least 128 bits, as hexadecimal digits
_SEED = re.compile(r"[0-9a-fA-F]+")


class BadSeed(ValueError):
    """The course seed is not at least 32 hexadecimal digits."""


def new_seed() -> str:
    """A fresh random course seed: 64 hexadecimal digits (256 bits)."""
    return secrets.token_hex(32)


def checked_seed(seed: str) -> bytes:
    """The seed's bytes; BadSeed when it is too short or not hexadecimal."""
    text = seed.strip() if isinstance(seed, str) else ""
    if len(text) < SEED_DIGITS or len(text) % 2 or not _SEED.fullmatch(text):
        raise BadSeed(f"a course seed is an even number of hexadecimal digits, at least "
                      f"{SEED_DIGITS} (sdpa-course init writes 64); got {len(text)} characters")
    return bytes.fromhex(text)


def _derived(seed: str, label: str) -> bytes:
    return hmac.new(checked_seed(seed), label.encode(), hashlib.sha256).digest()


def numbers_key(seed: str) -> str:
    """The public numbers key (64 hexadecimal digits) that the release carries."""
    return _derived(seed, "sdpa-course public numbers key v1").hex()


def inputs_seed(seed: str, assignment: str, student: str) -> int:
    """A 256-bit integer that fixes one student's hidden test inputs (secret)."""
    key = _derived(seed, "sdpa-course secret hidden inputs key v1")
    message = "\x00".join(("sdpa-course hidden inputs v1", assignment, student)).encode("utf-8")
    return int.from_bytes(hmac.new(key, message, hashlib.sha256).digest(), "big")
