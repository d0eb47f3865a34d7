"""`sdpa-course check`: grade one submission and print its report."""

from __future__ import annotations

from pathlib import Path


def check_path(path: Path, *, as_json: bool = False) -> int:
    raise NotImplementedError("the grading engine lands with issue 5")
