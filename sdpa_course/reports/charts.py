"""The class report's two pictures as SVG, written directly: no plotting library, no raster.

A bar chart is a few rectangles and labels. Written here they cost microseconds where
matplotlib's import and drawing cost about 0.4 s of every `sdpa-course grade`; the text stays
sharp at any zoom and can be read and copied. Every label is escaped for XML, and a chart
carries no script, style sheet or link: the report's Content-Security-Policy shows it as an
image.

Plain data in (what `class_report.score_counts` and `class_report.diagnosis_bars` return),
one SVG document out.
"""

from __future__ import annotations

import math
from html import escape

BAR_BLUE = "#4c72b0"
BAR_ORANGE = "#dd8452"
GRID = "#dddddd"
FONT = 'font-family="sans-serif" font-size="12" fill="#222"'
CHAR_WIDTH = 7.0  # px: a generous mean width of one character at 12 px, to leave room for labels
PANEL = (320, 240)  # px: one exercise's histogram
MARGIN = {"left": 46, "right": 14, "top": 30, "bottom": 42}  # px around a histogram's plot
ROW = 24  # px: one diagnosis bar and the gap under it


def _number(value: float) -> str:
    return f"{value:g}"


def _step(top: float, most: int) -> float:
    """The smallest round step (1, 2 or 5 times a power of ten, at least 1) that covers 0..top
    in at most `most` steps."""
    magnitude = 1.0
    while True:
        for factor in (1, 2, 5):
            step = factor * magnitude
            if math.ceil(top / step) <= most:
                return step
        magnitude *= 10


def _ticks(top: float, most: int) -> list[float]:
    """Tick values from 0 up to the first tick at or above `top`."""
    step = _step(max(top, 1.0), most)
    return [i * step for i in range(math.ceil(max(top, 1.0) / step) + 1)]


def _students(count: int) -> str:
    return f"{count} student{'' if count == 1 else 's'}"


def _text(x: float, y: float, label: str, anchor: str = "middle", extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {FONT}{extra}>'
            f"{escape(label)}</text>")


def _document(width: float, height: float, label: str, body: list[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{escape(label)}">'
            f"<title>{escape(label)}</title>"
            f'<rect width="100%" height="100%" fill="white"/>{"".join(body)}</svg>\n')


def _histogram(left: float, exercise: str, top: float, counts: list) -> list[str]:
    """One exercise's panel: a bar per score given, its height the students who got it."""
    width, height = PANEL
    x0, x1 = left + MARGIN["left"], left + width - MARGIN["right"]
    y0, y1 = height - MARGIN["bottom"], MARGIN["top"]  # the plot's bottom and top, in px
    y_ticks = _ticks(max((n for _, n in counts), default=1), 5)
    x_ticks = [t for t in _ticks(top, 11) if t <= top]

    def x(score: float) -> float:  # scores from -0.5 to top + 0.5 across the plot
        return x0 + (score + 0.5) / (top + 1.0) * (x1 - x0)

    def y(students: float) -> float:
        return y0 - students / y_ticks[-1] * (y0 - y1)

    parts = [_text((x0 + x1) / 2, 18, f"{exercise} (max {_number(top)})")]
    for tick in y_ticks:
        parts.append(f'<line x1="{x0:.1f}" x2="{x1:.1f}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
                     f'stroke="{GRID}"/>')
        parts.append(_text(x0 - 6, y(tick) + 4, _number(tick), "end"))
    for tick in x_ticks:
        parts.append(_text(x(tick), y0 + 16, _number(tick)))
    bar = 0.4 / (top + 1.0) * (x1 - x0)  # px: 0.4 points wide, so half points stay apart
    for score, students in counts:
        parts.append(f'<rect x="{x(score) - bar / 2:.1f}" y="{y(students):.1f}" '
                     f'width="{bar:.1f}" height="{y0 - y(students):.1f}" fill="{BAR_BLUE}">'
                     f"<title>{escape(f'score {_number(score)}: {_students(students)}')}</title>"
                     "</rect>")
    parts.append(f'<line x1="{x0:.1f}" x2="{x1:.1f}" y1="{y0:.1f}" y2="{y0:.1f}" stroke="#222"/>')
    parts.append(_text((x0 + x1) / 2, height - 8, "score"))
    parts.append(_text(0, 0, "students", extra=f' transform="translate({left + 14:.0f} '
                                                 f'{(y0 + y1) / 2:.0f}) rotate(-90)"'))
    return parts


def score_histograms(histograms: list) -> str:
    """Side by side, one histogram per (exercise, max score, [[score, students], ...])."""
    label = "Histograms: how many students got each score, one per exercise"
    if not histograms:
        return _document(PANEL[0], 60, label, [_text(PANEL[0] / 2, 34, "no graded submissions")])
    parts = [part for i, (exercise, top, counts) in enumerate(histograms)
             for part in _histogram(i * PANEL[0], str(exercise), float(top) or 1.0, counts)]
    return _document(PANEL[0] * len(histograms), PANEL[1], label, parts)


def diagnosis_chart(items: list[tuple[str, int]], label: str) -> str:
    """One horizontal bar per ("exercise: code", students), in the order given."""
    title = "Diagnoses per exercise"
    if not items:
        return _document(420, 60, label, [
            _text(210, 20, title), _text(210, 44, "no diagnoses: every graded exercise was "
                                                  "correct")])
    left = 12 + CHAR_WIDTH * max(len(name) for name, _ in items)  # px: room for the labels
    plot = 360.0  # px: the longest bar's room
    ticks = _ticks(max(n for _, n in items), 6)
    height = 40 + ROW * len(items) + 34

    def x(students: float) -> float:
        return left + students / ticks[-1] * plot

    parts = [_text(left + plot / 2, 18, title)]
    bottom = 30 + ROW * len(items)
    for tick in ticks:
        parts.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="30" y2="{bottom}" '
                     f'stroke="{GRID}"/>')
        parts.append(_text(x(tick), bottom + 16, _number(tick)))
    for row, (name, students) in enumerate(items):
        top = 30 + ROW * row + 4
        parts.append(_text(left - 6, top + 12, name, "end"))
        parts.append(f'<rect x="{left:.1f}" y="{top}" width="{x(students) - left:.1f}" '
                     f'height="{ROW - 8}" fill="{BAR_ORANGE}">'
                     f"<title>{escape(f'{name}: {_students(students)}')}</title></rect>")
    parts.append(_text(left + plot / 2, height - 6, "students"))
    return _document(left + plot + 20, height, label, parts)
