"""The kit's grading engine as seen from the nbgrader side: load it, call it, check its report.

The engine (`autograder.engine.grade_submission`) grades one submission in its sandbox and
returns the report of CONTRACT section 2. Anything else it does (raising, an error status, a
report without exercises) is turned into `GradingFailed` with a reason an instructor can read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from sdpa_course.errors import GradingFailed

DEFAULT_ENGINE = "autograder.engine:grade_submission"


def load_engine(spec: str = DEFAULT_ENGINE) -> Callable[..., dict]:
    """Import `module:function`."""
    module_name, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module_name), attr or "grade_submission")


def make_pool(spec: str = DEFAULT_ENGINE):
    """A sandbox pool to reuse across submissions, or None when the engine has none."""
    if spec != DEFAULT_ENGINE:
        module = importlib.import_module(spec.partition(":")[0])
        factory = getattr(module, "SandboxPool", None)
    else:
        try:
            factory = importlib.import_module("autograder.sandbox").SandboxPool
        except (ImportError, AttributeError):
            factory = None
    return factory() if factory is not None else None


def close_pool(pool) -> None:
    for name in ("close", "shutdown"):
        method = getattr(pool, name, None)
        if callable(method):
            method()
            return


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


def load_content_engine(spec: str = DEFAULT_ENGINE) -> Callable[..., dict]:
    """The engine's `grade_content(content, *, name, pool=None)`, next to its path function:
    what remote workers call, since they share no filesystem with the instructor."""
    module_name = spec.partition(":")[0]
    function = getattr(importlib.import_module(module_name), "grade_content", None)
    if not callable(function):
        raise AttributeError(f"{module_name} has no grade_content(content, *, name), which "
                             f"grading on remote workers needs")
    return function


def grade_path(engine: Callable[..., dict], path: Path, pool=None) -> dict:
    """Grade one notebook with the engine; GradingFailed when it cannot be graded."""
    return _graded(lambda **kw: engine(path, **kw), pool)


def grade_bytes(content_engine: Callable[..., dict], content: bytes, name: str,
                pool=None) -> dict:
    """`grade_path` for a notebook's contents; `name` is reported as the submission."""
    return _graded(lambda **kw: content_engine(content, name=name, **kw), pool)


def _graded(call: Callable[..., object], pool) -> dict:
    try:
        raw = call(pool=pool) if pool is not None else call()
    except GradingFailed:
        raise
    except Exception as err:
        message = str(err).strip() or type(err).__name__
        if type(err).__name__ == "SubmissionError":  # the engine refuses the file, and says why
            raise GradingFailed(message) from err
        raise GradingFailed(f"the grading engine failed: {type(err).__name__}: {message}",
                            retry=True) from err
    return checked_report(raw)
