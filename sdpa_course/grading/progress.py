"""A progress bar with count and ETA on a terminal; plain periodic lines otherwise.

Elapsed time runs from `started` (the start of the whole run, the workers' start-up
included), so the last line says how long the run took. The ETA divides the work left by the
rate of the items that took time (a submission that fails before grading, `advance(timed=
False)`, counts as done but not into the rate), and is smoothed against the previous estimate
counted down, so it does not jump with each burst of finished workers.
"""

from __future__ import annotations

import sys
import time


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """`advance()` once per finished item; `close()` at the end (or use it as a context)."""

    def __init__(self, total: int, *, label: str = "grading", stream=None,
                 line_interval: float = 5.0, width: int = 30, started: float | None = None):
        self.total = total
        self.done = 0
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.line_interval = line_interval
        self.width = width
        self.started = time.monotonic() if started is None else started
        self.timed = 0  # items done that took time (the rate is theirs)
        self._eta: tuple[float, float] | None = None  # (seconds left, when estimated)
        self._last_draw: float | None = None  # the first advance always draws

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def eta(self, now: float) -> float | None:
        """Seconds left, or None before any timed item is done."""
        left = self.total - self.done
        if not self.timed or left <= 0:
            return None
        estimate = (now - self.started) / self.timed * left
        if self._eta is not None:
            previous, when = self._eta
            counted_down = max(previous - (now - when), 0.0)
            estimate = 0.5 * estimate + 0.5 * counted_down
        self._eta = (estimate, now)
        return estimate

    def line(self, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        count = f"{self.done}/{self.total}"
        seconds_left = self.eta(now) if self.done < self.total else None
        if seconds_left is not None:
            eta = f"ETA {_clock(seconds_left)}"
        else:
            eta = f"{_clock(now - self.started)} elapsed"
        if not self.tty:
            return f"{self.label}: {count} done, {eta}"
        filled = int(self.width * self.done / self.total) if self.total else self.width
        bar = "#" * filled + "-" * (self.width - filled)
        return f"{self.label} [{bar}] {count} {eta}"

    def advance(self, n: int = 1, *, timed: bool = True) -> None:
        self.done += n
        self.timed += n if timed else 0
        now = time.monotonic()
        interval = 0.1 if self.tty else self.line_interval
        if (self._last_draw is None or now - self._last_draw >= interval
                or self.done >= self.total):
            self._draw(now)
            self._last_draw = now

    def _draw(self, now: float) -> None:
        if self.tty:
            self.stream.write("\r" + self.line(now) + "\x1b[K")
        else:
            self.stream.write(self.line(now) + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.total:
            self.stream.write("\n")
            self.stream.flush()
