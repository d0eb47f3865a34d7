"""The class report's pictures are drawn again only when what they show changed: a rerun after
hand grading keeps them and never imports matplotlib."""

from __future__ import annotations

import pytest

from sdpa_course.reports import class_report


def _record(student: str, ex3: float, codes: list[str]) -> dict:
    return {"student": student, "status": "graded", "score": 9 + ex3, "max_score": 20,
            "exercises": {"ex1": {"score": 3, "max_score": 3, "diagnoses": [], "tests": []},
                          "ex2": {"score": 6, "max_score": 6, "diagnoses": [], "tests": []},
                          "ex3": {"score": ex3, "max_score": 11, "diagnoses": codes,
                                  "tests": []}}}


@pytest.fixture
def records():
    return {"ada": _record("ada", 11, []), "ben": _record("ben", 5.5, ["mask-inverted"])}


def _no_drawing(*_args, **_kwargs):
    raise AssertionError("drew a picture whose data had not changed")


def test_pictures_are_drawn_once_then_kept_while_their_data_stays(records, tmp_path,
                                                                   monkeypatch):
    paths = class_report.write_class_report(records, tmp_path, "sdpa")
    pictures = [paths["score histograms"], paths["diagnosis chart"]]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in pictures)
    stamps = [p.stat().st_mtime_ns for p in pictures]
    monkeypatch.setattr(class_report, "_figure", _no_drawing)
    class_report.write_class_report(records, tmp_path, "sdpa", marks={"ada": {
        "written": {"ex2_explain": {"score": 2.0, "max_score": 2.0, "comment": ""}}}})
    assert [p.stat().st_mtime_ns for p in pictures] == stamps


def test_a_picture_is_drawn_again_when_its_data_or_file_changed(records, tmp_path,
                                                                monkeypatch):
    paths = class_report.write_class_report(records, tmp_path, "sdpa")
    drawn = []
    draw_scores = class_report._plot_scores
    monkeypatch.setattr(class_report, "_plot_scores",
                        lambda data, path: drawn.append(path.name) or draw_scores(data, path))
    records["ben"]["exercises"]["ex3"]["score"] = 7.5  # a regrade: the histogram changes
    class_report.write_class_report(records, tmp_path, "sdpa")
    assert drawn == ["scores.png"]
    paths["score histograms"].unlink()  # deleted by hand
    (tmp_path / class_report.PICTURES_NOTE).write_text("[not what was written")
    class_report.write_class_report(records, tmp_path, "sdpa")
    assert drawn == ["scores.png", "scores.png"]
    assert paths["score histograms"].read_bytes().startswith(b"\x89PNG")
