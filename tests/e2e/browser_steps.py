"""Named steps of a browser test, each ending in a screenshot.

A step that fails leaves `NN-<step>-FAILED.png` and raises an error that names the step and
the screenshot, so a broken page can be looked at rather than guessed from a traceback.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page

# Playwright's call logs can run to pages; the head says what was waited for.
MAX_CAUSE_CHARS = 2_000


class StepFailed(AssertionError):
    """A browser-test step failed; the message names the step and its screenshot."""


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60]


class Steps:
    def __init__(self, page: Page, folder: Path, *, context: Callable[[], str] | None = None):
        self.page = page
        self.folder = folder
        self.context = context  # extra text for a failure message, e.g. the server's log
        self.taken: list[Path] = []
        self.timings: list[tuple[str, float]] = []
        self._number = 0

    def screenshot(self, name: str) -> Path:
        path = self.folder / f"{name}.png"
        self.page.screenshot(path=str(path))
        self.taken.append(path)
        return path

    @contextmanager
    def step(self, title: str) -> Iterator[None]:
        self._number += 1
        name = f"{self._number:02d}-{_slug(title)}"
        started = time.monotonic()
        try:
            yield
        except Exception as err:
            try:
                shot = f"screenshot: {self.screenshot(f'{name}-FAILED')}"
            except Exception as shot_err:  # the page itself may be gone
                shot = f"no screenshot ({type(shot_err).__name__}: {shot_err})"
            # Playwright appends an accessibility dump of the whole page: the screenshot is
            # the better picture of it.
            detail = str(err).split("\nAria snapshot:")[0]
            cause = f"{type(err).__name__}: {detail}"[:MAX_CAUSE_CHARS]
            extra = f"\n{self.context()}" if self.context else ""
            message = f"step {self._number} failed: {title}\n{shot}\n{cause}{extra}"
            raise StepFailed(message) from err
        self.timings.append((title, time.monotonic() - started))
        self.screenshot(name)
