"""What a grading process must share with the instructor for its scores to mean the same.

Three parts: the kit's version, the exercises (the hidden suites, the exercise catalogue and
the reference `sdpa_ref`, hashed from their source) and the rest of the grader (engine,
diagnoses, report, sandbox; not the example corpus). A remote worker compares its own with
the instructor's before grading and refuses a mismatch, naming the part that differs.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import autograder
import sdpa_course
import sdpa_ref

AUTOGRADER = Path(autograder.__file__).parent
REFERENCE = Path(sdpa_ref.__file__).parent
EXERCISE_SOURCES = (AUTOGRADER / "suites", AUTOGRADER / "exercises.py", REFERENCE)


def _python_files(root: Path) -> list[Path]:
    return [root] if root.is_file() else sorted(root.rglob("*.py"))


def _digest(files: list[Path], base: Path) -> str:
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(base)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@lru_cache(maxsize=1)
def kit_fingerprint() -> dict[str, str]:
    """{"kit": version, "exercises": hash, "grader": hash} of the kit installed here."""
    base = AUTOGRADER.parent
    exercises = [f for root in EXERCISE_SOURCES for f in _python_files(root)]
    grader = [f for f in _python_files(AUTOGRADER)
              if f not in set(exercises) and "corpus" not in f.relative_to(AUTOGRADER).parts]
    return {
        "kit": sdpa_course.__version__,
        "exercises": _digest(exercises, base),
        "grader": _digest(grader, base),
    }


def version_mismatch(expected: dict[str, str], actual: dict[str, str]) -> str | None:
    """Why a process with `actual` must not grade for an instructor with `expected`, or None."""
    names = {"kit": "sdpa-course version", "exercises": "exercises (hidden tests, reference)",
             "grader": "grader source"}
    differ = [f"{names[part]} {actual.get(part)!r} here, {expected.get(part)!r} at the instructor"
              for part in names if expected.get(part) != actual.get(part)]
    if not differ:
        return None
    return ("it runs a different sdpa-course from the instructor's: " + "; ".join(differ)
            + ". Install the same sdpa-course on the workers as on the instructor's machine "
              "(pip install 'sdpa-course[dask]==<version>') and restart them")
