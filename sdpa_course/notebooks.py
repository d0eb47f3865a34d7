"""Build the generated notebooks from their jupytext text sources."""

from __future__ import annotations

from pathlib import Path


def build_notebooks(root: Path) -> list[Path]:
    raise NotImplementedError("the notebook build lands with issue 4")
