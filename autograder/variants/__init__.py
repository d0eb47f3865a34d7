"""Per-student variants: every student of a course gets their own numbers and hidden inputs.

A student's variant is a deterministic function of the course seed, the assignment and the
student id (HMAC-SHA256 with domain separation, `keys`). It fixes

- exercise 1's query, keys, values and d_k, and exercise 2's score gap and d_k (`numbers`,
  pure standard library, copied verbatim into the notebook, which works them out from the
  course's public numbers key and the student's id);
- the hidden test inputs of exercises 2 and 3 (`Variant.rng`, from the secret inputs key:
  they never leave the instructor).

Without a seed, or without a student, the variant is `DEFAULT`: the lesson's own numbers and
the fixed hidden inputs, today's exercise. The engine grades against the variant it is given
(`autograder.engine.grade_submission(..., variant=...)`); the class pipeline derives it from
the folder's student id, never from what a notebook claims.
"""

from autograder.variants.keys import BadSeed, new_seed, numbers_key
from autograder.variants.variant import (
    DEFAULT,
    Ex1Numbers,
    Ex2Numbers,
    Variant,
    public_variant,
    root_text,
    variant_for,
)

__all__ = ["DEFAULT", "BadSeed", "Ex1Numbers", "Ex2Numbers", "Variant", "new_seed",
           "numbers_key", "public_variant", "root_text", "variant_for"]
