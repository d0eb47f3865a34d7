"""The progress bar of `sdpa-course grade`: count and ETA on a terminal, plain lines otherwise."""

from __future__ import annotations

import io

from sdpa_course.grading.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_gets_a_redrawn_bar_with_count_and_eta():
    stream = Terminal()
    with Progress(4, stream=stream) as progress:
        progress.advance()
        assert "1/4" in stream.getvalue() and "ETA" in stream.getvalue()
        assert stream.getvalue().startswith("\r")
        for _ in range(3):
            progress.advance()
    assert "4/4" in stream.getvalue() and stream.getvalue().endswith("\n")


def test_plain_stream_gets_whole_lines_not_carriage_returns():
    stream = io.StringIO()
    with Progress(3, stream=stream, line_interval=3600) as progress:
        for _ in range(3):
            progress.advance()
    lines = stream.getvalue().splitlines()
    assert lines == [line for line in lines if "\r" not in line]
    assert lines[0].startswith("grading: 1/3 done") and lines[-1].startswith("grading: 3/3 done")
    assert len(lines) == 2  # the first, then nothing until the interval or the end


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_elapsed_counts_from_the_start_of_the_run(monkeypatch):
    clock = Clock()
    monkeypatch.setattr("sdpa_course.grading.progress.time.monotonic", clock)
    stream = io.StringIO()
    started = clock.now
    clock.now += 22  # workers starting, the gradebook opening: part of the run
    with Progress(2, stream=stream, started=started) as progress:
        clock.now += 7
        progress.advance()
        clock.now += 7
        progress.advance()
    assert stream.getvalue().splitlines()[-1] == "grading: 2/2 done, 0:36 elapsed"


def test_the_eta_is_steady_and_ignores_instant_failures(monkeypatch):
    clock = Clock()
    monkeypatch.setattr("sdpa_course.grading.progress.time.monotonic", clock)
    progress = Progress(20, stream=io.StringIO(), started=clock.now)
    progress.advance(timed=False)  # a broken notebook, failed before grading: no time taken
    estimates = []
    # two workers: submissions finish in pairs, 4 s apart
    for _ in range(9):
        clock.now += 4
        progress.advance()
        estimates.append(progress.eta(clock.now))
        progress.advance()
        estimates.append(progress.eta(clock.now))
    truth = [2.0 * (20 - done) for done in range(2, 20)]  # 2 s per submission left
    for got, want in zip(estimates[2:], truth[2:], strict=True):
        assert abs(got - want) <= 0.35 * want + 2, (estimates, truth)
    jumps = [b - a for a, b in zip(estimates, estimates[1:], strict=False)]
    assert max(jumps) <= 2, estimates  # it only ever counts down, never jumps up
