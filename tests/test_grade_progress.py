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
