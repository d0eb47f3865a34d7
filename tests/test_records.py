"""Each student's record (`sdpa_course.reports.records`): what a rerun resumes from.

A graded record keeps the engine's scores as numbers and the submission's fingerprint; a
failed one has no score at all (never 0) and says why; saving is atomic and loading survives
a damaged file (that student is simply graded again).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdpa_course.reports import records
from sdpa_course.reports.class_report import write_class_report

REPORT = {
    "score": 14.5, "max_score": 20,
    "exercises": {"ex3": {"score": 5.5, "max_score": 11, "diagnoses": ["mask-inverted"],
                          "tests": []}},
}


def test_a_graded_record_keeps_the_scores_as_floats_and_the_fingerprint():
    record = records.graded_record("ada", REPORT, "f1", ["edited"])
    assert record["student"] == "ada" and record["status"] == records.GRADED == "graded"
    assert record["score"] == 14.5 and isinstance(record["max_score"], float)
    assert record["max_score"] == 20.0
    assert record["exercises"] == REPORT["exercises"]
    assert record["error"] is None and record["retry"] is False
    assert record["warnings"] == ["edited"] and record["fingerprint"] == "f1"


def test_a_graded_record_keeps_extra_credit_the_variant_and_how_its_code_ran():
    report = {**REPORT, "extra_credit": 3, "variant": {"label": "v-7"}, "isolation": "unsafe-none"}
    record = records.graded_record("ada", report, "f1", [])
    assert record["extra_credit"] == 3.0 and isinstance(record["extra_credit"], float)
    assert record["variant"] == {"label": "v-7"} and record["isolation"] == "unsafe-none"
    plain = records.graded_record("ada", REPORT, "f1", [])  # no exercise 4 attempted
    assert plain["extra_credit"] == 0.0 and plain["variant"] is None


@pytest.mark.parametrize("retry", [False, True])
def test_a_failed_record_has_no_score_and_a_reason(retry):
    record = records.failed_record("cy", "not a readable notebook", "f2", retry=retry)
    assert record["status"] == records.FAILED == "failed"
    assert record["score"] is None and record["max_score"] is None
    assert record["extra_credit"] is None and record["variant"] is None  # never a plain 0
    assert record["exercises"] == {}
    assert record["error"] == "not a readable notebook" and record["retry"] is retry
    assert record["warnings"] == [] and record["fingerprint"] == "f2"


def test_a_failed_record_keeps_its_warnings():
    record = records.failed_record("cy", "why", "f", warnings=["edited"])
    assert record["warnings"] == ["edited"] and record["retry"] is False


def test_records_are_saved_one_file_each_and_loaded_back(tmp_path):
    ada = records.graded_record("ada", REPORT, "f1", [])
    cy = records.failed_record("cy", "why", "f2")
    for record in (ada, cy):
        records.save_record(tmp_path, record)
    folder = records.results_dir(tmp_path)
    assert folder == tmp_path / "results"
    assert sorted(p.name for p in folder.iterdir()) == ["ada.json", "cy.json"]  # no .tmp
    assert records.load_records(tmp_path) == {"ada": ada, "cy": cy}
    again = records.graded_record("ada", {**REPORT, "score": 20.0}, "f3", [])
    records.save_record(tmp_path, again)  # a regrade replaces the record
    assert records.load_records(tmp_path)["ada"]["score"] == 20.0


def test_loading_skips_a_damaged_record_and_names_a_record_by_its_student(tmp_path):
    records.save_record(tmp_path, records.graded_record("ada", REPORT, "f1", []))
    folder = records.results_dir(tmp_path)
    (folder / "ben.json").write_text('{"student": "ben", "status": ')  # cut short
    (folder / "dee.json").write_text(json.dumps({"status": "graded", "score": 3.0}))
    loaded = records.load_records(tmp_path)
    assert set(loaded) == {"ada", "dee"}  # ben is graded again; dee's file names her
    assert loaded["dee"]["score"] == 3.0


def test_loading_skips_a_record_that_cannot_be_read(tmp_path):
    records.save_record(tmp_path, records.graded_record("ada", REPORT, "f1", []))
    (records.results_dir(tmp_path) / "ben.json").mkdir()  # not a file: reading it fails
    assert set(records.load_records(tmp_path)) == {"ada"}


def test_no_results_folder_means_no_records(tmp_path):
    assert records.load_records(tmp_path) == {}


def test_forgetting_a_record_removes_only_that_student(tmp_path):
    for student in ("ada", "ben"):
        records.save_record(tmp_path, records.failed_record(student, "why", "f"))
    records.forget_record(tmp_path, "ada")
    records.forget_record(tmp_path, "zed")  # nobody: nothing to do, no error
    assert set(records.load_records(tmp_path)) == {"ben"}


@pytest.mark.parametrize("student", [
    "a" * 247,  # `.json.tmp` after it: 256 bytes, one more than NAME_MAX
    "a" * 255,
    "é" * 120,  # 240 bytes in UTF-8
    "😀" * 63 + "x",  # cut inside a character would not be text
    ".hidden", "..", "-rf",
    "x~" + "0" * 32,  # looks like a digested name: digested too, so never another's
])
def test_any_student_id_gets_a_record_file_of_its_own_and_is_loaded_back(tmp_path, student):
    record = records.failed_record(student, "why", "f")
    records.save_record(tmp_path, record)
    path = records.record_path(tmp_path, student)
    assert path.parent == records.results_dir(tmp_path) and path.is_file()
    assert len(path.name.encode()) + len(".tmp") <= 255 and not path.name.startswith(".")
    assert records.load_records(tmp_path) == {student: record}  # the id is the JSON's
    records.forget_record(tmp_path, student)
    assert records.load_records(tmp_path) == {}


def test_short_ids_keep_their_plain_record_names_and_long_ones_a_readable_prefix(tmp_path):
    assert records.record_path(tmp_path, "ada").name == "ada.json"  # as older runs wrote
    assert records.record_path(tmp_path, "a" * 246).name == "a" * 246 + ".json"
    long = records.record_path(tmp_path, "b" * 247).name
    assert long.startswith("b" * 64 + "~") and long.endswith(".json")
    assert records.record_path(tmp_path, "b" * 248) != records.record_path(tmp_path, "b" * 247)
    lookalike = "x~" + "0" * 32
    assert records.record_path(tmp_path, lookalike).name != f"{lookalike}.json"


def test_a_record_names_length_is_the_file_system_of_its_own_folder(tmp_path, monkeypatch):
    """The name limit is asked of the folder the records go in once it exists (it may be
    another file system than the reports' folder: eCryptfs allows 143 bytes), of the
    reports' folder before. Here the records' folder says 143 bytes, the rest 255."""
    folder = records.results_dir(tmp_path)
    monkeypatch.setattr(records.os, "pathconf", lambda path, name: 143 if Path(path) == folder
                        else 255)
    student = "c" * 140  # fits 255 with ".json.tmp", not 143
    assert records.record_path(tmp_path, student).name == f"{student}.json"  # no folder yet
    folder.mkdir(parents=True)
    digested = records.record_path(tmp_path, student).name
    assert digested.startswith("c" * 64 + "~") and len(digested) + len(".tmp") <= 143


def test_what_to_check_by_hand_is_read_from_records_old_and_new():
    from sdpa_course.reports.records import failed_record, graded_record, to_check

    report = {"score": 1, "max_score": 2, "exercises": {}}
    said = "timestamp.txt holds no submission time nbgrader can read: graded without a time"
    new = graded_record("kim", report, "f", [said], [said])
    assert to_check(new) == [said]
    assert to_check(graded_record("kim", report, "f", [said])) == []
    old = dict(new, warnings=["timestamp.txt is not a plain file (a link, a FIFO or a "
                              "device): graded without a submission time", "other"])
    del old["check_by_hand"]  # written before the key existed
    assert to_check(old) == [old["warnings"][0]]
    assert to_check(failed_record("kim", "broken", "f", warnings=[said])) == []


def test_stopped_cells_name_three_cells_outside_the_exercises_then_count_the_rest():
    """A cell that did not run to the end shows beside the score when it is no exercise's
    and no exercise's diagnosis already says so: the first three by name, then a count."""
    stopped = [{"cell": f"cell {n}", "status": "timeout"} for n in range(1, 6)]
    ok = "".join(["o", "k"])  # as read from JSON: not the very object of the literal "ok"
    others = [{"cell": "cell 8", "status": ok},  # ran to the end
              {"cell": "cell 9", "status": "crashed", "exercises": ["ex2"]}]  # an exercise's
    report = {"exercises": {"ex1": {"diagnoses": ["no-scaling"]}}, "cells": others + stopped}
    assert records.stopped_cells(report) == [
        "cell 1 (timeout)", "cell 2 (timeout)", "cell 3 (timeout)", "2 more cells"]
    report["cells"] = others + stopped[:3]
    assert records.stopped_cells(report) == [
        "cell 1 (timeout)", "cell 2 (timeout)", "cell 3 (timeout)"]
    report["cells"] = others + stopped[:4]
    assert records.stopped_cells(report)[3] == "1 more cell"
    report["exercises"]["ex1"]["diagnoses"] = ["timeout"]  # the exercise's diagnosis says it
    assert records.stopped_cells(report) == []


def test_a_record_says_when_its_pages_fold_cells_and_a_class_report_lists_it(tmp_path):
    folded = records.graded_record("max", REPORT, "f1", [], folded={"cells": 99_772,
                                                                    "chars": 1_188_890})
    assert folded["folded_cells"] == {"cells": 99_772, "chars": 1_188_890}
    assert "pages fold 99,772 cells (1,188,890 characters)" in folded["warnings"][-1]
    plain = records.graded_record("ada", REPORT, "f1", [])
    assert plain["folded_cells"] is None and plain["warnings"] == []
    for odd in ({"cells": "99"}, {"cells": 0, "chars": 0}, [], None, {"cells": 5}):
        assert records.folded_note(odd) == ""
    assert records.folded_note({"cells": -1, "chars": 3}) == ""
    paths = write_class_report({"max": folded, "ada": plain}, tmp_path, "sdpa")
    page = paths["class report"].read_text()
    assert "Submissions too long for a page: 1" in page and "<td>99,772</td>" in page


def test_stopped_runs_name_a_graded_students_stopped_exercises_then_cells_and_a_failed_none():
    record = {"status": records.GRADED, "stopped_cells": ["cell 49 (timeout)"],
              "exercises": {"ex2": {"diagnoses": ["timeout"]},
                            "ex1": {"diagnoses": ["no-scaling", "crashed"]}}}
    # as read back from its file: the status is an equal string, not GRADED itself
    # (`!= GRADED` -> `is not GRADED` passed a record built here, and said nothing of one read)
    record = json.loads(json.dumps(record))
    assert records.stopped_runs(record) == ["ex1: crashed", "ex2: timeout", "cell 49 (timeout)"]
    assert records.stopped_runs({**record, "status": records.FAILED}) == []


def test_not_answered_names_only_the_exercises_diagnosed_so_and_a_failed_record_none():
    """records.not_answered: an exercise with other diagnoses, or none, is answered (`and` ->
    `or` called every exercise with a list of diagnoses not answered)."""
    record = {"status": records.GRADED,
              "exercises": {"ex3": {"diagnoses": ["not-answered", "crashed"]},
                            "ex1": {"diagnoses": []}, "ex2": {"diagnoses": ["no-scaling"]},
                            "ex4": {"diagnoses": ["not-answered"]}, "ex5": "not-answered"}}
    record = json.loads(json.dumps(record))  # as read back from its file, as above
    assert records.not_answered(record) == ["ex3", "ex4"]
    assert records.not_answered({**record, "status": records.FAILED}) == []


def test_a_record_file_is_the_same_text_whatever_order_its_record_was_built_in(tmp_path):
    """save_record sorts the keys (`sort_keys=True` -> `False` wrote them as built: the same
    record, built in another order, gave a file of another text)."""
    ada = records.graded_record("ada", REPORT, "f1", [])
    path = records.results_dir(tmp_path) / "ada.json"
    records.save_record(tmp_path, ada)
    first = path.read_text()
    records.save_record(tmp_path, dict(reversed(list(ada.items()))))
    assert path.read_text() == first
    keys = list(json.loads(first))
    assert keys == sorted(keys)
