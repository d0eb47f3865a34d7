"""The class report's pictures: SVG documents that say what the records say, drawn without a
plotting library, with every label escaped."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from sdpa_course.reports import charts, class_report

SVG = "{http://www.w3.org/2000/svg}"


def _record(student: str, ex3: float, codes: list[str]) -> dict:
    return {"student": student, "status": "graded", "score": 9 + ex3, "max_score": 20,
            "exercises": {"ex1": {"score": 3, "max_score": 3, "diagnoses": [], "tests": []},
                          "ex2": {"score": 6, "max_score": 6, "diagnoses": [], "tests": []},
                          "ex3": {"score": ex3, "max_score": 11, "diagnoses": codes,
                                  "tests": []}}}


@pytest.fixture
def records():
    return {"ada": _record("ada", 11, []), "ben": _record("ben", 5.5, ["mask-inverted"]),
            "cy": _record("cy", 5.5, ["mask-inverted", "no-scaling"]),
            "dee": _record("dee", 10.5, [])}


def _bars(svg: str) -> list[tuple[float, float, str]]:
    """(width, height, tooltip) of each bar, in document order."""
    root = ET.fromstring(svg)
    return [(float(r.get("width")), float(r.get("height")), r.find(f"{SVG}title").text)
            for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]


def _texts(svg: str) -> list[str]:
    return [t.text for t in ET.fromstring(svg).iter(f"{SVG}text")]


def test_each_score_given_is_one_bar_as_tall_as_its_students(records):
    svg = charts.score_histograms(class_report.score_counts(records))
    bars = _bars(svg)
    assert [tip for _, _, tip in bars] == [
        "score 3: 4 students", "score 6: 4 students",
        "score 5.5: 2 students", "score 10.5: 1 student", "score 11: 1 student"]
    heights = {tip: height for _, height, tip in bars}
    assert heights["score 5.5: 2 students"] == pytest.approx(2 * heights["score 11: 1 student"])
    assert heights["score 10.5: 1 student"] == heights["score 11: 1 student"]
    assert heights["score 3: 4 students"] == heights["score 6: 4 students"]  # each panel its
    # own scale: the tallest bar of ex1 (4 of 4) and of ex3 (2 of 4) reach the same top tick
    assert heights["score 3: 4 students"] == heights["score 5.5: 2 students"]
    assert {"ex1 (max 3)", "ex2 (max 6)", "ex3 (max 11)"} <= set(_texts(svg))


def test_each_diagnosis_is_one_bar_as_long_as_its_students(records):
    items = class_report.diagnosis_bars(records)
    svg = charts.diagnosis_chart(items, class_report.DIAGNOSES_ALT)
    bars = {tip: width for width, _, tip in _bars(svg)}
    assert set(bars) == {"ex3: mask-inverted: 2 students", "ex3: no-scaling: 1 student"}
    assert bars["ex3: mask-inverted: 2 students"] == pytest.approx(
        2 * bars["ex3: no-scaling: 1 student"])
    assert ET.fromstring(svg).get("aria-label") == class_report.DIAGNOSES_ALT


def test_empty_classes_say_so_in_words():
    assert "no graded submissions" in _texts(charts.score_histograms([]))
    assert any("no diagnoses" in text for text in _texts(charts.diagnosis_chart([], "x")))


def test_labels_are_text_never_markup():
    hostile = '<script>alert(1)</script>&"'
    svg = charts.diagnosis_chart([(hostile, 3)], hostile)
    root = ET.fromstring(svg)  # well-formed XML whatever the label
    assert not [e for e in root.iter() if e.tag.endswith("script")]
    assert hostile in _texts(svg)
    assert hostile in "".join(_texts(charts.score_histograms([(hostile, 4, [[1, 2]])])))


@pytest.mark.parametrize("top, most, ticks", [
    (1, 5, [0, 1]), (4, 5, [0, 1, 2, 3, 4]), (7, 5, [0, 2, 4, 6, 8]),
    (11, 11, list(range(12))), (200, 5, [0, 50, 100, 150, 200]), (0, 5, [0, 1]),
])
def test_axis_ticks_are_round_and_cover_the_data(top, most, ticks):
    assert charts._ticks(top, most) == ticks


def test_the_report_writes_svg_removes_the_old_pictures_and_never_imports_matplotlib(tmp_path):
    (tmp_path / "scores.png").write_bytes(b"\x89PNG old")
    (tmp_path / ".pictures.json").write_text("{}")
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from sdpa_course.reports import class_report\n"
        "record = {'student': 'ada', 'status': 'graded', 'score': 3, 'max_score': 3,\n"
        "          'exercises': {'ex1': {'score': 3, 'max_score': 3, 'diagnoses': [],\n"
        "                                'tests': []}}}\n"
        f"class_report.write_class_report({{'ada': record}}, Path({str(tmp_path)!r}), 'sdpa')\n"
        "print('matplotlib' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"
    for name in ("scores.svg", "diagnoses.svg"):
        ET.fromstring((tmp_path / name).read_text())
    assert not (tmp_path / "scores.png").exists() and not (tmp_path / ".pictures.json").exists()
