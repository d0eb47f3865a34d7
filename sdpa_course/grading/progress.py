"""A progress bar with count and ETA on a terminal; plain periodic lines otherwise."""

from __future__ import annotations

import sys
import time


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """`advance()` once per finished item; `close()` at the end (or use it as a context)."""

    def __init__(self, total: int, *, label: str = "grading", stream=None,
                 line_interval: float = 5.0, width: int = 30):
        self.total = total
        self.done = 0
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.line_interval = line_interval
        self.width = width
        self.started = time.monotonic()
        self._last_draw: float | None = None  # the first advance always draws

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        count = f"{self.done}/{self.total}"
        if self.done and self.done < self.total:
            eta = f"ETA {_clock(elapsed / self.done * (self.total - self.done))}"
        else:
            eta = f"{_clock(elapsed)} elapsed"
        if not self.tty:
            return f"{self.label}: {count} done, {eta}"
        filled = int(self.width * self.done / self.total) if self.total else self.width
        bar = "#" * filled + "-" * (self.width - filled)
        return f"{self.label} [{bar}] {count} {eta}"

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        interval = 0.1 if self.tty else self.line_interval
        if (self._last_draw is None or now - self._last_draw >= interval
                or self.done >= self.total):
            self._draw()
            self._last_draw = now

    def _draw(self) -> None:
        if self.tty:
            self.stream.write("\r" + self.line() + "\x1b[K")
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.total:
            self.stream.write("\n")
            self.stream.flush()
