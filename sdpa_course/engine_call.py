"""Calling the grading engine for one submission, and checking what it returns.

The engine (`autograder.engine`) grades one submission in its sandbox and returns the report
of CONTRACT section 2. Here, anything else it does (raising, an error status, a report
without numeric scores) becomes `GradingFailed` with a reason an instructor can read. Its
callers: `EngineGrades` in a plain `nbgrader autograde`, the local worker processes
(`grade_path`, on a file) and the Dask workers (`grade_bytes`, on a file's contents).

`grade_path` takes the engine as a parameter, `autograder.engine.grade_submission` unless a
test passes a stand-in (tests/fake_engine.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from autograder.engine import grade_content, grade_submission
from autograder.sandbox import SandboxPool
from autograder.submission import SubmissionError
from sdpa_course.errors import GradingFailed

# `engine(path, *, pool=...)` -> the report of CONTRACT section 2
Engine = Callable[..., dict]


def sandbox_pool() -> SandboxPool | None:
    """A sandbox pool to reuse across submissions (it starts its zygote when first used)."""
    try:
        return SandboxPool()
    except Exception:  # no fork-server here: the engine starts a sandbox per submission
        return None


def checked_report(raw: object) -> dict:
    """The engine's report if it is a graded one; GradingFailed with its reason otherwise."""
    if not isinstance(raw, dict):
        raise GradingFailed(f"the grading engine returned {type(raw).__name__}, not a report")
    status = raw.get("status")
    if status not in (None, "ok", "graded") or not isinstance(raw.get("exercises"), dict):
        reason = raw.get("error") or raw.get("message") or f"status {status!r}"
        raise GradingFailed(str(reason))
    for name, exercise in raw["exercises"].items():
        for key in ("score", "max_score"):
            if not isinstance(exercise.get(key), (int, float)):
                raise GradingFailed(f"the engine's report for {name} has no numeric {key}")
    return raw


def grade_path(path: Path, *, engine: Engine = grade_submission,
               pool: SandboxPool | None = None) -> dict:
    """Grade one notebook with the engine; GradingFailed when it cannot be graded."""
    return _graded(lambda **kw: engine(path, **kw), pool)


def grade_bytes(content: bytes, name: str, *, pool: SandboxPool | None = None) -> dict:
    """`grade_path` for a notebook's contents; `name` is reported as the submission."""
    return _graded(lambda **kw: grade_content(content, name=name, **kw), pool)


def _graded(call: Callable[..., object], pool: SandboxPool | None) -> dict:
    try:
        raw = call(pool=pool) if pool is not None else call()
    except GradingFailed:
        raise
    except SubmissionError as err:  # the engine refuses the file, and says why
        raise GradingFailed(str(err).strip() or type(err).__name__) from err
    except Exception as err:
        message = str(err).strip() or type(err).__name__
        raise GradingFailed(f"the grading engine failed: {type(err).__name__}: {message}",
                            retry=True) from err
    return checked_report(raw)
