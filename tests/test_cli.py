"""The installed `sdpa-course` command, run as a user runs it: every command and flag of
CONTRACT section 4 in a subprocess (no browser), checked on what it prints, writes and exits
with (`demo` in tests/test_demo.py).

`grade` runs the kit's real engine on a small class: the answer key, a typical Exercise 3
mistake from the engine's corpus and a broken notebook; the scores asserted are the
corpus's own expectations, not whatever the command printed before.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from grade_course_factory import answer_key, submit, variant_of

from autograder.corpus import case
from autograder.exercises import EXERCISES, EXTRA_CREDIT, MAX_SCORE
from sdpa_course.cli import build_parser, main
from sdpa_course.demo import notebook_from_source

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent
SDPA_COURSE = BIN / "sdpa-course"
MISTAKE = "ex3-mask-inverted"  # a corpus case: partial credit on ex3 and one diagnosis
REPORT_KEYS = {"submission", "score", "max_score", "exercises"}
EXERCISE_KEYS = {"score", "max_score", "diagnoses", "tests"}
TEST_KEYS = {"name", "score", "max_score", "passed", "message"}


def sdpa_course(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """The console script `pip install` made, with this venv's bin/ first on PATH (nbgrader
    shells out to `alembic` from there), as `. .venv/bin/activate` would."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([str(SDPA_COURSE), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def not_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


def contract_commands() -> list[tuple[str, list[str]]]:
    """(command, its flags) of each row of section 4 of docs/CONTRACT.md and its additions."""
    rows = []
    for document in ("CONTRACT.md", "CONTRACT-ADDITIONS.md"):
        text = (ROOT / "docs" / document).read_text()
        section = text.split("\n## 4. The command line", 1)[1].split("\n## ", 1)[0]
        for line in section.splitlines():
            if line.startswith("| `sdpa-course "):
                usage = line.split("|")[1]
                rows.append((usage.split()[1].strip("`"), re.findall(r"--[a-z][a-z-]*", usage)))
    return rows


def test_every_contract_command_and_flag_is_in_the_command_line():
    commands = build_parser()._subparsers._group_actions[0].choices
    rows = contract_commands()
    assert {"demo", "init", "release", "grade", "check", "feedback", "variant"} <= {
        command for command, _ in rows}  # the tables were read
    for command, flags in rows:
        assert command in commands, f"`sdpa-course {command}` is in the contract, not the CLI"
        options = {option for action in commands[command]._actions
                   for option in action.option_strings}
        assert set(flags) <= options, (command, sorted(set(flags) - options))


def test_the_console_script_is_installed_and_answers_help(tmp_path):
    done = sdpa_course("--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for command in ("demo", "init", "release", "grade", "check"):
        assert command in done.stdout


def test_no_command_and_an_unknown_flag_are_refused(tmp_path):
    assert sdpa_course(cwd=tmp_path).returncode == 2
    refused = sdpa_course("check", "x.py", "--jsn", cwd=tmp_path)
    assert refused.returncode == 2 and "--jsn" in refused.stderr
    for workers in ("0", "-3", "two"):  # 0 meant every core and -3 one, without a word
        refused = sdpa_course("grade", "--workers", workers, cwd=tmp_path)
        assert refused.returncode == 2 and "1 or more" in refused.stderr, refused.stderr


def _required_arguments(command: str) -> list[str]:
    """What `command` cannot go without: its positional arguments, filled in."""
    return {"init": ["a-folder"], "check": ["x.py"], "variant": ["ann"],
            "autograder": ["gradescope"]}.get(command, [])


def test_each_subcommands_unknown_option_prints_that_subcommands_usage(tmp_path, capsys):
    commands = build_parser()._subparsers._group_actions[0].choices
    for command in commands:
        assert main([command, *_required_arguments(command), "--bogus"]) == 2, command
        err = capsys.readouterr().err
        assert err.startswith(f"usage: sdpa-course {command} "), err
        assert f"sdpa-course {command}: error: unrecognized arguments: --bogus" in err
    # the console script says the same
    done = sdpa_course("grade", "--bogus", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("usage: sdpa-course grade ")
    assert not list(tmp_path.iterdir())


# Bad input, the subcommand's usage expected with the message (`{tmp}`: a fresh folder that
# holds a file `course/nbgrader_config.py`, so `course` passes for a course directory).
BAD_INPUT = [
    (["release"], "not a course directory"),
    (["grade", "--course-dir", "{tmp}/missing/course"], "not a course directory"),
    (["feedback", "--course-dir", "{tmp}"], "not a course directory"),
    (["variant", "ann", "--course-dir", "{tmp}/missing"], "not a course directory"),
    (["variant", " ", "--course-dir", "{tmp}/course"], "a student id is needed"),
    (["variant", "ann", "--course-dir", "{tmp}/course", "--answer-key",
      "{tmp}/missing/dir/ann.ipynb"], "{tmp}/missing/dir does not exist"),
    (["check", "{tmp}/missing/x.ipynb"], "no such file"),
    (["check", "{tmp}/course/nbgrader_config.py", "--student", ""], "--student needs"),
    (["check", "{tmp}/course/nbgrader_config.py", "--course", "{tmp}/course"],
     "--course needs --student"),
    (["check", "{tmp}/course/nbgrader_config.py", "--student", "ann", "--course",
      "{tmp}/missing"], "not a course directory"),
    (["build", "--root", "{tmp}/missing"], "no notebook text source"),
    (["grade", "--workers", "0"], "1 or more"),
    (["grade", "--bogus"], "unrecognized arguments"),
]


def test_bad_input_is_answered_with_the_usage_before_nbgrader_is_imported(tmp_path):
    """Every argument error and a folder that is not a course come at once: decided before
    the command imports nbgrader (most of a second), numpy or nbformat, which the run counts
    instead of timing it (a timed test fails on a loaded machine). Nothing is created for the
    paths given: the only folder in tmp_path is still `course`."""
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "nbgrader_config.py").write_text("")
    script = """
import contextlib, io, json, sys
from sdpa_course.cli import main
results = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exit:
            status = exit.code
    heavy = [m for m in ("nbgrader", "nbformat", "numpy", "jupytext") if m in sys.modules]
    results.append((status, err.getvalue(), heavy))
print(json.dumps(results))
"""
    cases = [([arg.format(tmp=tmp_path) for arg in argv], says.format(tmp=tmp_path))
             for argv, says in BAD_INPUT]
    done = subprocess.run([sys.executable, "-c", script, json.dumps([a for a, _ in cases])],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for (argv, says), (status, err, heavy) in zip(cases, json.loads(done.stdout), strict=True):
        assert status == 2, (argv, err)
        assert err.startswith(f"usage: sdpa-course {argv[0]} "), (argv, err)
        assert says in err, (argv, err)
        assert heavy == [], f"{argv} imported {heavy} before saying: {err}"
    assert [p.name for p in tmp_path.iterdir()] == ["course"]
    assert [p.name for p in (tmp_path / "course").iterdir()] == ["nbgrader_config.py"]


def test_variant_answer_key_into_a_missing_folder_creates_nothing(tmp_path):
    """The console script, and the function behind it, refuse an answer key whose folder
    does not exist: a mistyped path made its folders before."""
    from sdpa_course.course.create import init_course
    from sdpa_course.course.variants import show_variant
    from sdpa_course.errors import KitError

    course = init_course(tmp_path / "course")
    wanted = tmp_path / "missing" / "dir" / "ann.ipynb"
    done = sdpa_course("variant", "ann", "--answer-key", str(wanted), cwd=course)
    assert done.returncode == 2 and "does not exist" in done.stderr, done.stderr
    with pytest.raises(KitError, match="does not exist"):
        show_variant(course, "ann", answer_key=wanted)
    assert not (tmp_path / "missing").exists()


# --- check PATH [--json] ------------------------------------------------------------------

def _assert_contract_report(report: dict, submission: str) -> None:
    assert REPORT_KEYS <= set(report)
    assert report["submission"] == submission
    assert set(report["exercises"]) == set(EXERCISES)
    for exercise in report["exercises"].values():
        assert EXERCISE_KEYS <= set(exercise)
        for test in exercise["tests"]:
            assert TEST_KEYS <= set(test)
    assert report["max_score"] == MAX_SCORE


def test_check_json_prints_the_contract_report_of_a_py_file(tmp_path):
    mistake = case(MISTAKE)
    mistake.write(tmp_path)
    done = sdpa_course("check", f"{MISTAKE}.py", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    _assert_contract_report(report, f"{MISTAKE}.py")
    assert report["score"] == mistake.expected_score < MAX_SCORE
    got = {key: (ex["score"], ex["diagnoses"]) for key, ex in report["exercises"].items()}
    assert got == {key: (mistake.scores[key], mistake.expected_diagnoses[key])
                   for key in EXERCISES}
    failed = [t for ex in report["exercises"].values() for t in ex["tests"] if not t["passed"]]
    assert failed and all(t["message"] for t in failed)


def test_check_json_of_the_answer_key_notebook_has_every_point(tmp_path):
    notebook = tmp_path / "attention.ipynb"
    shutil.copyfile(Path(__file__).resolve().parents[1] / "solutions" / "sdpa" /
                    "attention.ipynb", notebook)
    done = sdpa_course("check", str(notebook), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    _assert_contract_report(report, str(notebook))
    assert report["score"] == MAX_SCORE
    assert all(ex["diagnoses"] == [] and ex["score"] == ex["max_score"]
               for ex in report["exercises"].values())


def test_check_without_json_prints_the_table_with_the_same_score(tmp_path):
    mistake = case(MISTAKE)
    mistake.write(tmp_path)
    done = sdpa_course("check", f"{MISTAKE}.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not_json(done.stdout)
    assert f"Grade report for {MISTAKE}.py" in done.stdout
    total = next(line for line in done.stdout.splitlines() if line.strip().startswith("total"))
    assert total.split()[1:] == [f"{mistake.expected_score:.1f}", "/", f"{MAX_SCORE:.1f}"]
    for code in mistake.expected_diagnoses["ex3"]:
        assert f"diagnosis {code}" in done.stdout


@pytest.mark.parametrize("name, content, says", [
    ("missing.ipynb", None, "missing.ipynb"),
    ("broken.ipynb", '{"cells": [ this is not json', "broken.ipynb"),
    ("empty.py", "", "empty.py"),
    ("deep.ipynb", '{"nbformat": 4, "cells": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "nested too deeply"),
    ("bigint.ipynb", '{"nbformat": 4, "cells": [], "n": ' + "9" * 5000 + "}",
     "4300 digits"),
])
def test_check_exits_2_when_it_cannot_grade_the_file(tmp_path, name, content, says):
    if content is not None:
        (tmp_path / name).write_text(content)
    for flags in ((), ("--json",)):
        done = sdpa_course("check", name, *flags, cwd=tmp_path)
        assert done.returncode == 2, (flags, done.stdout, done.stderr)
        assert done.stdout == ""  # nothing a script could take for a report
        # a missing file is bad input, said with the usage before anything is imported
        first = "usage: sdpa-course check " if content is None else "sdpa-course check:"
        assert done.stderr.startswith(first) and says in done.stderr


@pytest.mark.parametrize("name, content", [
    ("deep.ipynb", '{"nbformat": 4, "cells": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ("bigint.ipynb", '{"nbformat": 4, "cells": [], "n": ' + "9" * 5000 + "}"),
])
def test_check_as_a_student_of_a_notebook_json_cannot_read_says_it_carries_no_key(
        tmp_path, name, content):
    (tmp_path / name).write_text(content)
    done = sdpa_course("check", name, "--student", "ada", cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "carries no course key" in done.stderr and "Traceback" not in done.stderr


ESCAPES = "\x1b[2J\x1b[H\x1b]0;title\x07\u202e"  # clear, home, window title, bidi override


def test_check_shows_escape_codes_of_a_hostile_notebook_and_file_name_never_sends_them(
        tmp_path):
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "a", "execution_count": None, "outputs": [],
         "metadata": {"nbgrader": {"grade_id": f"cell{ESCAPES}20 / 20"}}, "source": "x = 1"}]}
    (tmp_path / "other.ipynb").write_text(json.dumps(notebook))
    (tmp_path / f"bob{ESCAPES}.ipynb").write_text("{}")
    for args in (["other.ipynb"], [f"bob{ESCAPES}.ipynb", "--student", "ada"]):
        done = sdpa_course("check", *args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "\\x1b[2J" in done.stderr and "\\u202e" in done.stderr, done.stderr
        assert not any(char in done.stderr for char in "\x1b\x07\u202e"), done.stderr


# --- init DIR [--force], release [--course-dir] ---------------------------------------------

def test_init_creates_a_course_and_refuses_a_non_empty_folder_without_force(tmp_path):
    done = sdpa_course("init", "course", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    course = tmp_path / "course"
    assert (course / "nbgrader_config.py").is_file()
    assert (course / "source" / "sdpa" / "attention.ipynb").is_file()
    assert str(course) in done.stdout
    again = sdpa_course("init", "course", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr
    assert "Traceback" not in again.stderr
    (course / "notes.txt").write_text("mine")
    forced = sdpa_course("init", "course", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert (course / "notes.txt").read_text() == "mine"
    # a place no folder can be made (under a file: refused to root as well)
    (tmp_path / "a-file").write_text("")
    nowhere = sdpa_course("init", "a-file/course", cwd=tmp_path)
    assert nowhere.returncode == 2 and "Traceback" not in nowhere.stderr
    assert "cannot create the course at a-file/course" in nowhere.stderr


def test_release_in_the_course_and_with_course_dir(tmp_path):
    assert sdpa_course("init", "course", cwd=tmp_path).returncode == 0
    course = tmp_path / "course"
    here = sdpa_course("release", cwd=course)
    assert here.returncode == 0, here.stderr
    released = course / "release" / "sdpa" / "attention.ipynb"
    text = released.read_text()
    assert "BEGIN SOLUTION" not in text and "NotImplementedError" in text
    released.unlink()
    there = sdpa_course("release", "--course-dir", str(course), cwd=tmp_path)
    assert there.returncode == 0, there.stderr
    assert released.read_text() == text


def test_release_outside_a_course_says_so(tmp_path):
    done = sdpa_course("release", cwd=tmp_path)
    assert done.returncode == 2 and "not a course directory" in done.stderr


# --- grade [--workers N] [--json] [--force] [--scheduler ADDRESS] --------------------------

def bens_mistake(course: Path):
    """MISTAKE written with ben's own numbers: `init` gave the course a seed."""
    return case(MISTAKE, variant_of(course, "ben"))


@pytest.fixture(scope="module")
def course_with_class(tmp_path_factory) -> Path:
    """A released course (made with the command itself) with three submissions."""
    root = tmp_path_factory.mktemp("cli")
    assert sdpa_course("init", "course", cwd=root).returncode == 0
    course = root / "course"
    assert sdpa_course("release", cwd=course).returncode == 0
    key = answer_key()
    submit(course, "ada", key)
    submit(course, "ben", notebook_from_source(key, bens_mistake(course).source))
    submit(course, "cy", text='{"cells": [ this is not json')
    return course


@pytest.fixture(scope="module")
def graded_json(course_with_class, tmp_path_factory):
    course = tmp_path_factory.mktemp("graded") / "course"
    shutil.copytree(course_with_class, course)
    done = sdpa_course("grade", "--workers", "1", "--json", cwd=course)
    return course, done


def test_grade_json_prints_the_class_result_with_absolute_scores(graded_json):
    _, done = graded_json
    assert done.returncode == 1, done.stderr  # cy could not be graded
    out = json.loads(done.stdout)
    assert set(out) == {"assignment", "students", "isolation", "missing"}  # as documented
    assert out["assignment"] == "sdpa" and set(out["students"]) == {"ada", "ben", "cy"}
    assert (out["isolation"], out["missing"]) == ("namespaces", [])
    ada, ben, cy = (out["students"][s] for s in ("ada", "ben", "cy"))
    assert set(ada) == {"status", "score", "max_score", "extra_credit", "exercises", "variant",
                        "error", "warnings", "check_by_hand", "hand_graded"}
    assert ada["status"] == "graded" and ada["score"] == MAX_SCORE == ada["max_score"]
    assert ada["error"] is None and ada["extra_credit"] == EXTRA_CREDIT
    mistake = bens_mistake(graded_json[0])
    assert ben["status"] == "graded" and ben["score"] == mistake.expected_score < MAX_SCORE
    assert {k: ex["diagnoses"] for k, ex in ben["exercises"].items()} == \
        mistake.expected_diagnoses
    for exercise in ben["exercises"].values():
        assert EXERCISE_KEYS <= set(exercise)
    assert cy["status"] == "failed" and cy["score"] is None
    assert "not a readable notebook" in cy["error"]


def test_grade_records_in_the_gradebook_and_writes_feedback(graded_json):
    from nbgrader.api import Gradebook

    course, _ = graded_json
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {s.student.id: s.score for s in gradebook.assignment_submissions("sdpa")}
    mistake = bens_mistake(course)  # nbgrader's score: with exercise 4's extra credit on top
    assert scores == {"ada": MAX_SCORE + EXTRA_CREDIT,
                      "ben": mistake.expected_score + mistake.expected_extra_credit}
    for student in ("ada", "ben"):
        assert (course / "feedback" / student / "sdpa" / "attention.html").is_file()


def test_grade_reruns_skip_the_recorded_and_force_regrades_everyone(graded_json, tmp_path):
    course = tmp_path / "course"
    shutil.copytree(graded_json[0], course)
    again = sdpa_course("grade", "--workers", "1", cwd=course)
    assert again.returncode == 1  # cy still failed
    assert not_json(again.stdout)
    assert "This run: 0 graded, 0 failed; 3 already recorded." in again.stdout
    summary = {line.split()[0]: line.split()[1:] for line in again.stdout.splitlines()
               if line.split() and line.split()[0] in ("ada", "ben", "cy")}
    assert summary["ada"][:4] == ["graded", f"{MAX_SCORE:g}", "/", f"{MAX_SCORE:g}"]
    assert summary["cy"][0] == "failed"
    forced = sdpa_course("grade", "--workers", "2", "--force", "--json", cwd=course)
    assert forced.returncode == 1
    out = json.loads(forced.stdout)
    assert out["students"]["ben"]["score"] == bens_mistake(course).expected_score
    records = course / "reports" / "sdpa" / "results"
    before = {p.name: p.stat().st_mtime_ns for p in (graded_json[0] / "reports" / "sdpa" /
                                                      "results").glob("*.json")}
    after = {p.name: p.stat().st_mtime_ns for p in records.glob("*.json")}
    assert set(after) == set(before) == {"ada.json", "ben.json", "cy.json"}
    assert all(after[name] != before[name] for name in after)  # every record written again


def test_grade_outside_a_course_or_without_submissions_says_so(tmp_path, course_with_class):
    outside = sdpa_course("grade", cwd=tmp_path)
    assert outside.returncode == 2 and outside.stderr.startswith("usage: sdpa-course grade ")
    assert "sdpa-course grade: error: " in outside.stderr
    empty = tmp_path / "empty"
    shutil.copytree(course_with_class, empty, ignore=shutil.ignore_patterns("submitted"))
    none = sdpa_course("grade", "--json", cwd=empty)
    assert none.returncode == 2 and "no submissions" in none.stderr and none.stdout == ""


@pytest.mark.dask
@pytest.mark.slow
def test_grade_with_scheduler_grades_on_dask_workers(course_with_class, tmp_path):
    from dask_cluster import start_cluster

    course = tmp_path / "course"
    shutil.copytree(course_with_class, course)
    from distributed import Client

    from sdpa_course.grading.dask_executor import PLUGIN_NAME

    cluster = start_cluster(tmp_path / "cluster", workers=1)
    try:
        done = sdpa_course("grade", "--scheduler", cluster.address, "--json", cwd=course)
        with Client(cluster.address, set_as_default=False) as client:
            # the kit's grading plugin is set up on a worker only when the kit grades there
            plugins = client.run(lambda dask_worker: sorted(dask_worker.plugins))
    finally:
        cluster.stop()
    assert done.returncode == 1, done.stderr
    assert [PLUGIN_NAME in names for names in plugins.values()] == [True], plugins
    students = json.loads(done.stdout)["students"]
    assert students["ada"]["score"] == MAX_SCORE
    assert students["ben"]["score"] == bens_mistake(course).expected_score
    assert students["cy"]["status"] == "failed"


# --- feedback: regenerates pages after hand grading ------------------------------------

def test_feedback_is_a_subcommand_that_says_when_nothing_is_graded(tmp_path):
    from grade_course_factory import released_course

    commands = build_parser()._subparsers._group_actions[0].choices
    assert "feedback" in commands
    course = released_course(tmp_path / "course")
    done = subprocess.run(
        [sys.executable, "-m", "sdpa_course.cli", "feedback", "--course-dir", str(course)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 2
    assert "no student graded yet" in done.stderr and "sdpa-course grade" in done.stderr


def test_feedback_regenerates_the_pages_whose_hand_marks_changed_and_all_with_force(
        graded_json, tmp_path):
    from nbgrader.api import Gradebook

    course = tmp_path / "course"
    shutil.copytree(graded_json[0], course)
    pages = {s: course / "feedback" / s / "sdpa" / "attention.html" for s in ("ada", "ben")}
    nothing = sdpa_course("feedback", cwd=course)
    assert nothing.returncode == 0, nothing.stderr
    assert "Feedback regenerated for 0 students: none" in nothing.stdout
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        grade = gradebook.find_grade("ex2_explain", "attention", "sdpa", "ada")
        grade.manual_score = 1.5
        gradebook.db.commit()
    before = {s: page.stat().st_mtime_ns for s, page in pages.items()}
    marked = sdpa_course("feedback", cwd=course)
    assert marked.returncode == 0, marked.stderr
    assert "Feedback regenerated for 1 students: ada" in marked.stdout
    assert pages["ada"].stat().st_mtime_ns != before["ada"]
    assert pages["ben"].stat().st_mtime_ns == before["ben"]
    forced = sdpa_course("feedback", "--force", cwd=course)
    assert forced.returncode == 0, forced.stderr
    assert "Feedback regenerated for 2 students: ada, ben" in forced.stdout
    assert pages["ben"].stat().st_mtime_ns != before["ben"]

# --- demo [--dir DIR] [--workers N]: tests/test_demo.py runs it through this command ---------
