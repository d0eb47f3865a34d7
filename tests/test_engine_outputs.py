"""What the engine keeps of each cell for the feedback: its text, its figures (checked PNGs),
and a hang or crash in any cell named on the exercise whose cell it was."""

from __future__ import annotations

import base64
import struct
import zlib

import nbformat
import pytest

from autograder.engine import grade_content
from autograder.sandbox import Limits
from autograder.sandbox.images import (
    MAX_PNG_BYTES,
    PNG_SIGNATURE,
    SUBMISSION_PNG_BYTES,
    SUBMISSION_PNGS,
    FigureBudget,
    png_size,
    read_pngs,
)

QUICK = Limits(cell_seconds=2.0, call_seconds=1.0)
ANSWER_KEY = "solutions/sdpa/attention.ipynb"


def tiny_png(width: int = 2, height: int = 2) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body)))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\0" + b"\x80" * width for _ in range(height))
    return PNG_SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + \
        chunk(b"IEND", b"")


def key_with(grade_id: str, extra: str):
    nb = nbformat.read(ANSWER_KEY, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            cell.source += "\n" + extra
    return nbformat.writes(nb)


@pytest.fixture(scope="module")
def key_report():
    with open(ANSWER_KEY) as fh:
        return grade_content(fh.read(), name="attention.ipynb", limits=QUICK)


OWN_FIGURE = """import matplotlib.pyplot as plt
_figure, _axes = plt.subplots(figsize=(5, 4))
_axes.imshow(np.eye(8))
plt.show()
print("my own picture")
"""


def test_a_student_s_own_figure_comes_back_as_a_png_of_its_cell():
    report = grade_content(key_with("ex3_future_is_zero", OWN_FIGURE), name="attention.ipynb",
                           limits=QUICK)
    own = [o for o in report["outputs"] if "ex3_future_is_zero" in o["cell"]]
    assert len(own) == 1 and len(own[0]["images"]) == 1
    png = base64.b64decode(own[0]["images"][0])
    width, height = png_size(png)
    assert 200 <= width <= 600 and 150 <= height <= 500
    assert "my own picture" in own[0]["text"]  # and what it printed beside it
    nb = nbformat.read(ANSWER_KEY, as_version=4)
    assert nb.cells[own[0]["index"]].metadata["nbgrader"]["grade_id"] == "ex3_future_is_zero"


def test_the_lesson_s_heatmap_is_not_drawn_but_its_weights_are_read(key_report):
    assert not [o for o in key_report["outputs"] if "ex3_heatmap" in o["cell"]]
    assert len(key_report["heatmap"]["weights"]) == 8 and not key_report["heatmap"]["problem"]


def test_a_student_s_own_printed_output_is_kept_per_cell():
    report = grade_content(key_with("ex1_answer", "print('my numbers', ex1_scores)"),
                           name="attention.ipynb", limits=QUICK)
    texts = {o["cell"]: o["text"] for o in report["outputs"]}
    assert "my numbers" in next(t for c, t in texts.items() if "ex1_answer" in c)
    assert not [c for c in texts if "selfcheck" in c]  # left out: none printed


def test_a_cell_that_hangs_after_its_answers_is_named_on_its_exercise():
    report = grade_content(key_with("ex2_numbers", "while True:\n    pass"),
                           name="attention.ipynb", limits=QUICK)
    ex2 = report["exercises"]["ex2"]
    assert ex2["score"] == ex2["max_score"]  # the names were defined before the loop
    assert ex2["diagnoses"] == ["timeout"]
    assert report["exercises"]["ex1"]["diagnoses"] == []
    hung = [c for c in report["cells"] if c["status"] == "timeout"]
    assert hung and hung[0]["exercises"] == ["ex2"]


def test_pngs_are_checked_before_they_are_kept():
    good = tiny_png()
    blob = good + b"<script>alert(1)</script>" + tiny_png(5000, 2)
    spans = [[0, len(good)], [len(good), 25], [len(good) + 25, len(blob) - len(good) - 25],
             [len(blob) - 3, 10], ["0", 5], [-1, 3], "junk"]
    assert read_pngs(spans, blob) == [good]
    assert read_pngs({"not": "a list"}, blob) == []
    huge = good + b"\0" * MAX_PNG_BYTES
    assert read_pngs([[0, len(huge)]], huge) == []
    assert read_pngs([[0, len(good)]] * 10, good) == [good] * 4


def test_a_submission_keeps_a_bounded_number_and_size_of_figures():
    budget = FigureBudget()
    small, big = tiny_png(), tiny_png() + b"\0" * (SUBMISSION_PNG_BYTES // 2)
    assert budget.keep([big, big, small]) == ([big, small], 1)  # the second big one: too large
    kept, dropped = budget.keep([small] * (SUBMISSION_PNGS + 3))
    assert len(kept) == SUBMISSION_PNGS - 2 and dropped == 5


NOISE_CELL = """import numpy as np, matplotlib.pyplot as plt
for _ in range(4):  # four figures of noise, about 180 KB of PNG each, left open
    _figure = plt.figure(figsize=(225 / 72, 225 / 72), dpi=72)
    _figure.figimage(np.random.default_rng(0).integers(0, 256, (225, 225, 3), dtype=np.uint8))
"""


def test_many_cells_of_figures_do_not_make_megabytes_of_report():
    """150 such cells made a 285 MB autograded notebook and a 143 MB feedback page."""
    nb = nbformat.reads(key_with("ex3_future_is_zero", OWN_FIGURE), as_version=4)
    nb.cells += [nbformat.v4.new_code_cell(NOISE_CELL) for _ in range(12)]
    report = grade_content(nbformat.writes(nb), name="attention.ipynb", limits=QUICK)
    assert report["score"] == report["max_score"]
    images = [base64.b64decode(png) for o in report["outputs"] for png in o["images"]]
    assert len(images) <= SUBMISSION_PNGS and sum(map(len, images)) <= SUBMISSION_PNG_BYTES
    assert any(len(png) > 100_000 for png in images)  # noise compresses badly: the test bites
    own = next(o for o in report["outputs"] if "ex3_future_is_zero" in o["cell"])
    assert len(own["images"]) == 1  # drawn before the noise: kept
    notes = [o["text"] for o in report["outputs"] if "more figures not shown" in o["text"]]
    assert notes and "a submission keeps" in notes[-1]
