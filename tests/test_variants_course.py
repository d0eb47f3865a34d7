"""Variants in a course: the seed `init` writes, the key `release` embeds, a class graded by
the real engine on each student's own numbers (in nbgrader's gradebook, exports and
formgrader as before), the instructor's `variant` command and `check --student`."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from grade_course_factory import answer_key, released_course, submit, variant_of
from nbgrader.api import Gradebook

from autograder.corpus import case
from autograder.variants import numbers_key
from sdpa_course.assignment import NUMBERS_CELL
from sdpa_course.cli import main
from sdpa_course.course.create import existing_seed, init_course
from sdpa_course.course.directory import CONFIG_FILE, Course
from sdpa_course.course.release import release_assignment
from sdpa_course.course.variants import answer_key_for
from sdpa_course.demo import notebook_from_source
from sdpa_course.errors import KitError
from sdpa_course.grading.grade import grade_course
from sdpa_course.nbgrader_ext.variants import embedded_key

REPO = Path(__file__).resolve().parents[1]


def _numbers_cell(notebook) -> str:
    return next(c.source for c in notebook.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == NUMBERS_CELL)


# -- init and release --------------------------------------------------------------------------

def test_init_writes_a_fresh_seed_into_the_course_and_force_keeps_it(tmp_path):
    first, second = init_course(tmp_path / "a"), init_course(tmp_path / "b")
    seed = existing_seed(first / CONFIG_FILE)
    assert seed and len(seed) == 64 and seed != existing_seed(second / CONFIG_FILE)
    init_course(first, force=True)
    assert existing_seed(first / CONFIG_FILE) == seed
    assert Course.open(first).variants.has_seed


def test_the_kit_holds_no_seed_and_its_repository_course_grades_the_lessons_numbers():
    assert existing_seed(REPO / CONFIG_FILE) is None
    assert not Course.open(REPO).variants.has_seed
    for path in [*REPO.glob("*/**/*.py"), *REPO.glob("*/**/*.ipynb")]:
        if ".venv" not in path.parts and "tests" not in path.parts:
            text = path.read_text(errors="replace")
            assert not re.search(r"CourseVariants\.seed = .[0-9a-fA-F]{32}", text), path


def test_release_carries_the_public_numbers_key_never_the_seed(tmp_path):
    # init_course + release_assignment, made once a session (tests/grade_course_factory.py)
    course = released_course(tmp_path / "course")
    seed = existing_seed(course / CONFIG_FILE)
    release = course / "release" / "sdpa"
    text = (release / "attention.ipynb").read_text()
    assert seed not in text
    notebook = nbformat.read(str(release / "attention.ipynb"), as_version=4)
    assert embedded_key(_numbers_cell(notebook)) == numbers_key(seed)
    # the gradebook keeps the keyed cell, which autograde puts back if a student edits it
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        cell = gradebook.find_source_cell(NUMBERS_CELL, "attention", "sdpa")
        assert embedded_key(cell.source) == numbers_key(seed)


def test_a_course_without_a_seed_releases_no_key_and_says_how_to_add_one(tmp_path, capsys):
    course = init_course(tmp_path / "course")
    config = course / CONFIG_FILE
    config.write_text(re.sub(r"^c\.CourseVariants\.seed.*$", "", config.read_text(), flags=re.M))
    release = release_assignment(course)
    notebook = nbformat.read(str(release / "attention.ipynb"), as_version=4)
    assert embedded_key(_numbers_cell(notebook)) == ""
    assert main(["variant", "ann", "--course-dir", str(course)]) == 0
    out = capsys.readouterr().out
    assert "the lesson's numbers (no seed)" in out and "c.CourseVariants.seed = \"" in out
    assert "q = (1, 0), k1 = (1, 0), k2 = (0, 1)" in out


def test_a_malformed_seed_stops_release_and_grading_and_says_where(tmp_path):
    course = init_course(tmp_path / "course")
    with (course / CONFIG_FILE).open("a") as fh:
        fh.write('\nc.CourseVariants.seed = "not-a-seed"\n')
    with pytest.raises(KitError, match="CourseVariants.seed"):
        Course.open(course).variants.variant("ann")


# -- grading a class on its variants -----------------------------------------------------------

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """ada: the kit's answer key. ben: the typical no-scaling mistake, with his own numbers.
    cy: ada's notebook with ada's id typed in it. hal: ada's literal numbers (a .py case)."""
    course = released_course(tmp_path_factory.mktemp("variants") / "course")
    key = answer_key()
    submit(course, "ada", key)
    submit(course, "ben", notebook_from_source(
        key, case("ex3-no-scaling", variant_of(course, "ben")).source))
    ada_with_id = answer_key_for(Course.open(course), "ada")
    submit(course, "cy", ada_with_id)
    submit(course, "hal", notebook_from_source(
        key, case("lesson-style", variant_of(course, "ada")).source))
    result = grade_course(course, workers=2, progress_stream=open("/dev/null", "w"))
    return course, result


def test_every_student_is_graded_with_their_own_variant(graded):
    course, result = graded
    for student, record in result.records.items():
        assert record["status"] == "graded", record.get("error")
        assert record["variant"]["label"] == variant_of(course, student).label
        assert record["variant"]["student"] == student
        assert "inputs_seed" not in record["variant"]
    assert len({r["variant"]["label"] for r in result.records.values()}) == 4


def test_the_answer_key_earns_every_point_as_any_student(graded):
    _, result = graded
    assert result.records["ada"]["score"] == 20.0


def test_a_mistake_written_with_ones_own_numbers_costs_only_what_it_breaks(graded):
    _, result = graded
    ben = result.records["ben"]
    assert (ben["exercises"]["ex1"]["score"], ben["exercises"]["ex2"]["score"]) == (3.0, 6.0)
    assert ben["exercises"]["ex3"]["diagnoses"] == ["no-scaling"]


def test_a_notebook_showing_a_classmates_numbers_is_graded_on_its_owners(graded):
    """cy handed in ada's notebook (ada's id typed in it): graded as cy, her exercises 1 and 2
    lose their numbers' points, and her feedback says which variant was graded and that the
    notebook showed another."""
    course, result = graded
    cy = result.records["cy"]
    assert cy["exercises"]["ex1"]["score"] == 0.0
    assert cy["exercises"]["ex1"]["diagnoses"] == ["other-variant"]
    assert cy["exercises"]["ex3"]["score"] == 11.0
    assert cy["variant"]["shown"] == variant_of(course, "ada").label
    page = (course / "feedback" / "cy" / "sdpa" / "attention.html").read_text()
    assert f"Graded as variant {variant_of(course, 'cy').label}" in page
    assert f"showed the numbers of variant {variant_of(course, 'ada').label}" in page


def test_a_student_who_copies_a_classmates_numbers_loses_those_points(graded):
    """hal (gap 7, d_k = 64) copied ada's numbers (gap 7, d_k = 32): only the unscaled
    numbers, which depend on the gap alone and are right for both, and her own code (softmax,
    exercise 3) keep their points."""
    course, result = graded
    assert (variant_of(course, "hal").ex2.gap, variant_of(course, "ada").ex2.gap) == (7, 7)
    hal = result.records["hal"]
    assert hal["exercises"]["ex1"]["score"] == 0.0
    failed = {t["name"] for t in hal["exercises"]["ex2"]["tests"] if not t["passed"]}
    assert failed == {"p_scaled_is_the_weight_on_the_larger_key",
                      "grad_scaled_is_the_smaller_keys_own_derivative"}
    assert hal["exercises"]["ex3"]["score"] == 11.0


def test_gradebook_export_and_formgrader_see_the_variant_grades(graded):
    """nbgrader's own gradebook, `nbgrader export` and formgrader's API read the scores."""
    from nbgrader.apps import NbGraderAPI

    course, result = graded
    # nbgrader's score: the kit's with exercise 4's extra credit on top
    in_nbgrader = {s: r["score"] + (r.get("extra_credit") or 0.0)
                   for s, r in result.records.items()}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in result.records:
            assert gradebook.find_submission("sdpa", student).score == in_nbgrader[student]
    exported = course / "grades.csv"
    done = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "export",
                           f"--to={exported}"], cwd=course, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = {row["student_id"]: float(row["score"]) for row in csv.DictReader(exported.open())}
    assert rows == in_nbgrader
    api = NbGraderAPI(config=Course.open(course).config)
    submissions = {s["student"]: s for s in api.get_submissions("sdpa")}
    assert submissions["cy"]["score"] == in_nbgrader["cy"]


def test_the_class_report_names_each_students_variant(graded):
    course, result = graded
    rows = {r["student"]: r for r in csv.DictReader(
        (course / "reports" / "sdpa" / "scores.csv").open())}
    assert {s: r["variant"] for s, r in rows.items()} == {
        s: r["variant"]["label"] for s, r in result.records.items()}
    assert "4 variants" in (course / "reports" / "sdpa" / "class_report.html").read_text()


def test_grading_refuses_when_the_seed_changed_after_the_release(graded, tmp_path):
    course, _ = graded
    import shutil

    copy = shutil.copytree(course, tmp_path / "copy")
    config = copy / CONFIG_FILE
    config.write_text(re.sub(r'seed = "[0-9a-f]+"', 'seed = "' + "ab" * 32 + '"',
                             config.read_text()))
    with pytest.raises(KitError, match="seed was added or changed after"):
        grade_course(copy, workers=1, force=True)


# -- the instructor's tools --------------------------------------------------------------------

def test_variant_command_prints_a_students_numbers_and_answers(graded, capsys):
    course, _ = graded
    assert main(["variant", "ben", "--course-dir", str(course), "--json"]) == 0
    sheet = json.loads(capsys.readouterr().out)
    ben = variant_of(course, "ben")
    assert sheet["variant"] == ben.label and sheet["student"] == "ben"
    assert sheet["ex1"]["numbers"]["q"] == list(ben.ex1.q)
    assert sheet["ex2"]["expected"]["p_scaled"] == pytest.approx(ben.ex2.expected()["p_scaled"])
    assert "inputs_seed" not in json.dumps(sheet)
    assert main(["variant", "ben", "--course-dir", str(course)]) == 0
    text = capsys.readouterr().out
    assert f"variant {ben.label}" in text and "p_unscaled" in text and "ex1_weights" in text
    # the ratio the mark scheme of 2(c) compares, for this student's numbers
    ratio = ben.ex2.expected()["grad_scaled"] / ben.ex2.expected()["grad_unscaled"]
    assert f"the scaled slope is {ratio:.0f} times the unscaled one" in text


def test_variant_command_shows_escape_codes_in_an_id_and_never_sends_them(graded, capsys):
    course, _ = graded
    student = "eve\x1b[2J\x1b]0;title\x07\u202e"  # pasted from a folder's name
    assert main(["variant", student, "--course-dir", str(course)]) == 0
    text = capsys.readouterr().out
    assert "Student eve\\x1b[2J\\x1b]0;title\\x07\\u202e of course" in text
    assert not any(char in text for char in "\x1b\x07\u202e")
    # a folder's name that is not UTF-8, as the shell passes it: named as grade names it
    assert main(["variant", "bad\udcffname", "--course-dir", str(course), "--json"]) == 0
    sheet = json.loads(capsys.readouterr().out)
    assert sheet["student"] == "bad\\xffname"
    assert sheet["variant"] == variant_of(course, "bad\\xffname").label


def test_a_students_answer_key_earns_every_point_checked_as_them(graded, tmp_path):
    course, _ = graded
    key = tmp_path / "ben.ipynb"
    assert main(["variant", "ben", "--course-dir", str(course), "--answer-key", str(key)]) == 0
    done = subprocess.run(
        [sys.executable, "-m", "sdpa_course.cli", "check", str(key), "--json",
         "--course", str(course), "--student", "ben"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["score"] == 20.0 and report["variant"]["label"] == variant_of(course, "ben").label
    assert report["variant"]["shown"] == report["variant"]["label"]


def test_check_as_another_student_grades_on_their_numbers(graded, tmp_path, capsys):
    course, _ = graded
    key = tmp_path / "ben.ipynb"
    nbformat.write(answer_key_for(Course.open(course), "ben"), str(key))
    assert main(["check", str(key), "--course", str(course), "--student", "cy"]) == 0
    text = capsys.readouterr().out
    assert f"Graded as variant {variant_of(course, 'cy').label} (student cy)" in text
    assert "other-variant" in text and "the notebook shows the numbers of variant" in text


def test_check_with_a_course_but_no_student_says_what_is_missing(tmp_path, capsys):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    assert main(["check", str(path), "--course", str(tmp_path)]) == 2
    assert "--course needs --student" in capsys.readouterr().err


# -- the released notebook in a real kernel ----------------------------------------------------

def _run_in_kernel(notebook, cwd: Path, monkeypatch):
    from nbclient import NotebookClient

    # the kernel spec's python is this venv's
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}"
                               f"{os.environ.get('PATH', '')}")
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return {cell.metadata.get("nbgrader", {}).get("grade_id", cell.id): "".join(
        out.get("text", "") for out in cell.outputs if out.output_type == "stream")
        for cell in notebook.cells if cell.cell_type == "code"}


@pytest.mark.slow
def test_on_jupyterhub_the_release_shows_the_logged_in_students_numbers(graded, tmp_path,
                                                                       monkeypatch):
    course, _ = graded
    monkeypatch.setenv("JUPYTERHUB_USER", "ben")
    monkeypatch.delenv("SDPA_STUDENT_ID", raising=False)
    release = nbformat.read(str(course / "release" / "sdpa" / "attention.ipynb"), as_version=4)
    said = _run_in_kernel(release, tmp_path, monkeypatch)
    ben = variant_of(course, "ben")
    assert (f"Your numbers, variant {ben.label}, for student id 'ben' (your JupyterHub login)"
            in said[NUMBERS_CELL])
    assert f"q = ({', '.join(map(str, ben.ex1.q))})" in said["ex1_given"]
    assert f"raw scores ({ben.ex2.gap}, 0), d_k = {ben.ex2.d_k}" in said["ex2_given"]


@pytest.mark.slow
def test_a_students_answer_key_passes_every_self_check_in_a_kernel(graded, tmp_path,
                                                                   monkeypatch):
    course, _ = graded
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    said = _run_in_kernel(answer_key_for(Course.open(course), "cy"), tmp_path, monkeypatch)
    assert f"variant {variant_of(course, 'cy').label}" in said[NUMBERS_CELL]
    for grade_id, text in said.items():
        if "selfcheck" in grade_id:
            assert "these quick checks pass" in text, (grade_id, text)


def test_a_student_checks_their_own_numbers_with_the_notebooks_key(graded, tmp_path, capsys):
    """No course directory: the numbers come from the key the released notebook carries,
    the hidden inputs are the lesson's (the secret ones need the seed)."""
    course, _ = graded
    mine = tmp_path / "attention.ipynb"
    nbformat.write(answer_key_for(Course.open(course), "ben"), str(mine))
    assert main(["check", str(mine), "--student", "ben", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["score"] == 20.0
    assert report["variant"]["label"] == variant_of(course, "ben").label
    assert main(["check", str(REPO / "solutions" / "sdpa" / "attention.ipynb"),
                 "--student", "ben"]) == 2
    assert "carries no course key" in capsys.readouterr().err


def test_a_students_notebook_checked_without_an_id_says_how_to_check_their_own_numbers(
        graded, tmp_path, capsys):
    """Without --student the lesson's numbers are graded, so a notebook showing a student's
    own loses exercises 1 and 2: the report must say that it was no id, and how to name one."""
    course, _ = graded
    mine = tmp_path / "attention.ipynb"
    nbformat.write(answer_key_for(Course.open(course), "ben"), str(mine))
    assert main(["check", str(mine), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["variant"]["label"] == "default"
    assert report["exercises"]["ex1"]["diagnoses"] == ["other-variant"]
    assert any(f"`sdpa-course check {mine} --student YOUR_ID`" in warning
               for warning in report["warnings"]), report["warnings"]
    # named, nothing to add; the lesson's own numbers shown, nothing to add either
    assert main(["check", str(mine), "--student", "ben", "--json"]) == 0
    assert not any("--student" in w for w in json.loads(capsys.readouterr().out)["warnings"])
    assert main(["check", str(REPO / "solutions" / "sdpa" / "attention.ipynb"), "--json"]) == 0
    assert not any("--student" in w for w in json.loads(capsys.readouterr().out)["warnings"])


def test_variant_and_check_as_a_student_refuse_what_they_cannot_do_and_say_why(tmp_path,
                                                                                capsys):
    course = init_course(tmp_path / "course")
    # an empty id would be the lesson's numbers, printed as if they were a student's
    assert main(["variant", " ", "--course-dir", str(course)]) == 2
    assert "a student id is needed" in capsys.readouterr().err
    # a folder given as the answer key's file: said, not a traceback
    assert main(["variant", "ann", "--course-dir", str(course), "--answer-key",
                 str(tmp_path)]) == 2
    assert f"cannot write the answer key to {tmp_path}" in capsys.readouterr().err
    # a missing file is missing, not a notebook without a course key
    missing = tmp_path / "attention.ipynb"
    assert main(["check", str(missing), "--student", "ann"]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "course key" not in err
    # an empty --student is no student: said, never graded as the lesson's numbers
    for blank in ("", " "):
        assert main(["check", str(missing), "--student", blank, "--course", str(course)]) == 2
        assert "--student needs the student's id" in capsys.readouterr().err
