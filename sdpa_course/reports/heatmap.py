"""The causal heatmap of a student's feedback page, as inline SVG and a table of its numbers.

Drawn here, on the trusted side, from the weights the student's `attention` returned on the
lesson's example (the engine's report, `heatmap`: `autograder.heatmap`), as the notebook's
picture draws them: row t is query position t, column j key position j, viridis colours from
0 to 1, exact zeros (the masked future) in light grey. No matplotlib, no script, no picture
made by student code: every mark is a number formatted here. The same numbers follow in a
real <table> with a caption, for whoever cannot tell the colours apart or uses a reader.
"""

from __future__ import annotations

from html import escape

# viridis at 0, 0.25, 0.5, 0.75 and 1 (matplotlib's own values), interpolated linearly
VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
ZERO_GREY = "#d9d9d9"  # matplotlib's "0.85", as the notebook greys exact zeros
NOT_A_NUMBER = "#ffffff"
CELL = 32  # px: one weight's square
LEFT, TOP = 64, 40  # px: room for the axis labels and the title
LEGEND = 56  # px: the colour scale on the right
FONT = 'font-family="sans-serif" font-size="12" fill="#222"'
TITLE = "Causal self-attention weights (grey: exactly 0)"


def colour(value: float | None) -> str:
    """The fill of one weight: viridis for 0..1 (clipped), grey for an exact zero."""
    if value is None:
        return NOT_A_NUMBER
    if value == 0.0:
        return ZERO_GREY
    position = min(max(value, 0.0), 1.0) * (len(VIRIDIS) - 1)
    low = min(int(position), len(VIRIDIS) - 2)
    share = position - low
    rgb = (round(a + (b - a) * share) for a, b in zip(VIRIDIS[low], VIRIDIS[low + 1], strict=True))
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _weight(value: float | None) -> str:
    return "not a number" if value is None else f"{value:.2f}"


def _text(x: float, y: float, label: str, extra: str = "") -> str:
    return f'<text x="{x:.0f}" y="{y:.0f}" text-anchor="middle" {FONT}{extra}>{label}</text>'


def heatmap_svg(weights: list[list[float | None]], label_id: str) -> str:
    size = len(weights)
    width, height = LEFT + size * CELL + LEGEND, TOP + size * CELL + 40
    body = [_text(LEFT + size * CELL / 2, 20, escape(TITLE))]
    for t, row in enumerate(weights):
        for j, value in enumerate(row):
            body.append(f'<rect x="{LEFT + j * CELL}" y="{TOP + t * CELL}" width="{CELL}" '
                        f'height="{CELL}" fill="{colour(value)}"/>')
        body.append(_text(LEFT - 10, TOP + t * CELL + CELL / 2 + 4, str(t)))
    for j in range(size):
        body.append(_text(LEFT + j * CELL + CELL / 2, TOP + size * CELL + 16, str(j)))
    body.append(_text(LEFT + size * CELL / 2, TOP + size * CELL + 34, "key position j"))
    body.append(_text(16, TOP + size * CELL / 2, "query position t",
                      f' transform="rotate(-90 16 {TOP + size * CELL / 2:.0f})"'))
    scale_x = LEFT + size * CELL + 16
    for step in range(11):  # the colour scale, 1 at the top
        value = 1.0 - step / 10
        body.append(f'<rect x="{scale_x}" y="{TOP + step * size * CELL / 11:.0f}" width="14" '
                    f'height="{size * CELL / 11 + 1:.0f}" fill="{colour(value or 1e-9)}"/>')
    body.append(_text(scale_x + 28, TOP + 8, "1"))
    body.append(_text(scale_x + 28, TOP + size * CELL, "0"))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="{label_id}">'
            f'<title id="{label_id}">{escape(TITLE)}: your attention on the lesson\'s example, '
            f"the numbers are in the table below</title>{''.join(body)}</svg>")


def heatmap_table(weights: list[list[float | None]]) -> str:
    size = len(weights)
    head = "".join(f'<th scope="col">j = {j}</th>' for j in range(size))
    rows = "".join(
        f'<tr><th scope="row">t = {t}</th>'
        + "".join(f"<td>{_weight(value)}</td>" for value in row) + "</tr>"
        for t, row in enumerate(weights))
    return ('<table class="heatmap-numbers"><caption>The weights drawn above: row t is query '
            "position t, column j key position j; the grey squares are exact zeros"
            f'</caption><tr><th scope="col">query \\ key</th>{head}</tr>{rows}</table>')


def heatmap_html(heatmap: dict) -> str:
    """The figure for the report's `heatmap`, or a line saying why there is none."""
    weights = heatmap.get("weights") if isinstance(heatmap, dict) else None
    intro = ("<p>Your causal attention on the lesson's example (T = 8 random tokens), drawn "
             "from the weights your <code>attention</code> returned when your work was graded."
             "</p>")
    if not isinstance(weights, list) or not weights:
        problem = str((heatmap or {}).get("problem") or "no weights to draw.")
        return f'<div class="heatmap"><p>No picture: {escape(problem)}</p></div>'
    try:
        weights = [[None if v is None else float(v) for v in row] for row in weights]
    except (TypeError, ValueError):
        return '<div class="heatmap"><p>No picture: the weights could not be read.</p></div>'
    return (f'<figure class="heatmap">{intro}{heatmap_svg(weights, "heatmap-title")}'
            f"<figcaption>{escape(TITLE)}.</figcaption>{heatmap_table(weights)}</figure>")
