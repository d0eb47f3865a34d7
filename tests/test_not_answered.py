"""Not answered is its own outcome, everywhere: a blank reads as a blank, never as a crash.

An answer left as the release has it (`name = ...`, a function whose body only raises
NotImplementedError) is `not-answered`: in `check` (its table and --json), the feedback page,
`grade`'s table and --json, scores.csv, grades.csv, `nbgrader export`'s reason and the class
report, whose pass rates count the students who answered. A real attempt is never taken for a
blank. Also: a diagnosis's hint is given once per exercise, the later tests it explains say so.
"""

from __future__ import annotations

import copy
import csv
import html
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from grade_course_factory import answer_key, released_course, submit, variant_of

from autograder.corpus import case as corpus_case
from autograder.diagnoses import unanswered
from autograder.diagnoses.explanations import explanation_text
from autograder.engine import grade_content, grade_submission
from autograder.report import render_text
from autograder.submission import SubmittedCell
from autograder.variants import DEFAULT
from sdpa_course.grading import grade as pipeline

REQUIRED = ("ex1", "ex2", "ex3")
# What a blank must never read as, on any page or in any file.
NOT_A_BLANK = ("missing-name", "crashed", "is not defined", "did not run to the end",
               "NotImplementedError: Exercise")


def _cells(*sources: str) -> list[SubmittedCell]:
    return [SubmittedCell(source=s, label=f"cell {i}") for i, s in enumerate(sources, 1)]


def _page_text(path: Path, *, folded: bool = True) -> str:
    """A page's text; without `folded`, without the code folded away (the kit's own
    self-checks, whose source words what they say of a name never defined)."""
    page = path.read_text()
    if not folded:
        page = re.sub(r"<details>.*?</details>", " ", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


# -- what is a blank: the release's stubs, read from the cell's text -------------------------

STUB = ('def attention(Q, K, V, mask=None):\n    """Docstring."""\n    # YOUR CODE HERE\n'
        '    raise NotImplementedError("Exercise 3: write attention() here")\n')


def test_the_releases_stubs_are_blanks_and_comments_or_a_docstring_do_not_count():
    found = unanswered.stubs(_cells(
        "ex1_scores = ...  # YOUR ANSWER HERE (Exercise 1)\n# thinking...\n",
        STUB, "def softmax(z):\n\n    raise NotImplementedError\n"))
    assert found == {"ex1_scores": ("cell 1", None), "attention": ("cell 2", 4),
                     "softmax": ("cell 3", 3)}


@pytest.mark.parametrize("attempt", [
    "def attention(Q, K, V, mask=None):\n    if mask is not None:\n"
    "        raise NotImplementedError('masks later')\n    return Q, K\n",
    "if True:\n    def attention(Q, K, V, mask=None):\n        return Q, K\n",
    "def attention(Q, K, V, mask=None):\n    raise NotImplementedError(str(Q))\n",
    "attention = lambda Q, K, V, mask=None: (Q, K)\n",
    "from somewhere import attention\n",
], ids=["one-branch", "inside-if", "computed-message", "lambda", "import"])
def test_any_code_after_the_stub_is_an_attempt(attempt):
    assert "attention" not in unanswered.stubs(_cells(STUB, attempt))


def test_a_cell_that_does_not_parse_is_an_attempt_at_every_answer_it_names():
    broken = "def attention(Q, K, V, mask=None):\n    return Q @ K.T +\n"
    assert unanswered.stubs(_cells(STUB, broken)) == {}


def test_the_last_definition_decides_and_a_locked_cell_is_the_kits():
    written = "def attention(Q, K, V, mask=None):\n    return Q, K\n"
    assert "attention" in unanswered.stubs(_cells(written, STUB))
    locked = SubmittedCell(source=STUB, label="cell 9", locked=True)
    assert unanswered.stubs([locked]) == {}


# -- one submission: the blank release, and attempts that are not blanks ---------------------

@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    return released_course(tmp_path_factory.mktemp("blank") / "course")


@pytest.fixture(scope="module")
def release(course) -> Path:
    return course / "release" / "sdpa" / "attention.ipynb"


@pytest.fixture(scope="module")
def blank_report(release) -> dict:
    return grade_submission(release)


def test_the_blank_release_is_not_answered_in_every_exercise(blank_report):
    for key in REQUIRED:
        result = blank_report["exercises"][key]
        assert result["diagnoses"] == ["not-answered"], key
        assert result["score"] == 0
        for test in result["tests"]:
            assert test["answered"] is False and not test["passed"], (key, test)
            assert " is not answered yet: " in test["message"], (key, test)
    ex4 = blank_report["exercises"]["ex4"]
    assert ex4["attempted"] is False and ex4["diagnoses"] == []
    assert blank_report["cells"] == []  # no cell of the release failed
    text = render_text(blank_report)
    assert "diagnosis not-answered" in text
    for said in NOT_A_BLANK:
        assert said not in text and said not in json.dumps(blank_report), said


def test_a_function_that_raises_on_one_branch_is_an_attempt_graded_as_one(release):
    notebook = nbformat.read(str(release), as_version=4)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "ex3_attention":
            cell.source = cell.source.replace(
                "    # YOUR CODE HERE\n",
                "    if mask is None:\n        scores = Q @ K.T\n").replace(
                "raise NotImplementedError", "    raise NotImplementedError")
    report = grade_content(notebook, name="partial.ipynb")
    ex3 = report["exercises"]["ex3"]
    # attention is graded and diagnosed as written; the three functions left alone are blanks
    assert "not-answered" in ex3["diagnoses"] and len(ex3["diagnoses"]) >= 2, ex3["diagnoses"]
    by_name = {t["name"]: t for t in ex3["tests"]}
    for name, test in by_name.items():
        if name.startswith("attention_"):
            assert test["answered"] is True and "not answered" not in test["message"], test
    assert by_name["causal_mask_hides_strictly_the_future"]["answered"] is False


def test_the_corpus_stub_left_is_not_answered_and_costs_what_it_did():
    stub_left = corpus_case("ex3-stub-left")
    report = grade_content(stub_left.source, name="stub.py")
    assert report["exercises"]["ex3"]["diagnoses"] == ["not-answered"]
    assert report["exercises"]["ex3"]["score"] == stub_left.scores["ex3"]


def test_check_says_not_answered_in_its_table_and_its_json(release, tmp_path):
    check = [str(Path(sys.executable).parent / "sdpa-course"), "check", str(release)]
    table = subprocess.run(check, capture_output=True, text=True, timeout=300)
    as_json = subprocess.run(check + ["--json"], capture_output=True, text=True, timeout=300)
    assert table.returncode == as_json.returncode == 0, table.stderr + as_json.stderr
    report = json.loads(as_json.stdout)
    assert {key: report["exercises"][key]["diagnoses"] for key in REQUIRED} == {
        key: ["not-answered"] for key in REQUIRED}
    assert table.stdout.count("diagnosis not-answered") == 3
    for said in NOT_A_BLANK:
        assert said not in table.stdout, said


# -- a class with one blank student: every artefact ------------------------------------------

def _without_ex4(notebook, release_notebook):
    """The answer key with Exercise 4's cell as released: nobody in the class tries it."""
    notebook = copy.deepcopy(notebook)
    stub = next(c for c in release_notebook.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "ex4_attention_blockwise")
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "ex4_attention_blockwise":
            cell.source = stub.source
    return notebook


@pytest.fixture(scope="module")
def graded_class(course, release, tmp_path_factory):
    release_notebook = nbformat.read(str(release), as_version=4)
    submit(course, "ada", _without_ex4(answer_key(), release_notebook))
    submit(course, "bob", release_notebook)  # handed in as handed out
    result = pipeline.grade_course(course, workers=1)
    assert {s: r["status"] for s, r in result.records.items()} == {"ada": "graded",
                                                                   "bob": "graded"}
    return course, result


def test_grades_table_and_json_say_not_answered(graded_class):
    _, result = graded_class
    table = io.StringIO()
    pipeline._print_summary(result, table)
    bob = next(line for line in table.getvalue().splitlines() if line.startswith("bob"))
    assert all(f"{key}: not-answered" in bob for key in REQUIRED), bob
    said = json.dumps(result.as_json()["students"]["bob"])
    assert "not-answered" in said
    for text in (bob, said):
        for wrong in NOT_A_BLANK:
            assert wrong not in text, wrong


def test_the_csv_files_and_nbgrader_export_say_not_answered(graded_class, tmp_path):
    course, _ = graded_class
    report = course / "reports" / "sdpa"
    scores = {r["student"]: r for r in csv.DictReader((report / "scores.csv").open())}
    assert [scores["bob"][f"{key} diagnoses"] for key in REQUIRED] == ["not-answered"] * 3
    grades = {r["student_id"]: r for r in csv.DictReader((report / "grades.csv").open())}
    assert grades["bob"]["reason"].startswith("not answered: ex1, ex2, ex3; ")
    assert "not answered" not in grades["ada"]["reason"]
    out = tmp_path / "export.csv"
    done = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "export", "--to",
                           str(out)], cwd=course, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    exported = {r["student_id"]: r for r in csv.DictReader(out.open())}
    assert exported["bob"]["reason"] == "not answered: ex1, ex2, ex3"
    for row in (*scores.values(), *grades.values(), *exported.values()):
        for wrong in NOT_A_BLANK:
            assert wrong not in " ".join(row.values()), (wrong, row)


def test_the_feedback_page_reads_not_answered(graded_class):
    course, _ = graded_class
    page = _page_text(course / "feedback" / "bob" / "sdpa" / "attention.html", folded=False)
    assert "not answered" in page and "not-answered" in page
    for key, heading in (("ex1", "Exercise 1"), ("ex2", "Exercise 2"), ("ex3", "Exercise 3")):
        results = page[page.index(f"Results of {heading}"):]
        noticed = results[:results.index("What the grader noticed") + 200]
        assert "not-answered" in noticed and " is not answered yet: " in noticed, key
    for wrong in NOT_A_BLANK:
        assert wrong not in page, wrong


def test_the_class_report_counts_the_students_who_answered(graded_class):
    course, _ = graded_class
    page = _page_text(course / "reports" / "sdpa" / "class_report.html")
    # every test of exercises 1 to 3: ada passed it, bob left it as released
    rows = re.findall(r"(\w+) (\d+) / (\d+) (\d+%|not attempted) (\d+)", page)
    assert rows and all(row[1:] == ("1", "1", "100%", "1") for row in rows), rows
    assert page.count("Not answered (left as the notebook was handed out) by 1: bob") == 3
    ex4 = page[page.index("Exercise 4"):]
    assert "Not attempted: none of the 2 graded students answered this exercise" in ex4
    assert "without full marks" not in page
    for wrong in NOT_A_BLANK:
        assert wrong not in page, wrong


# -- a hint once per exercise ------------------------------------------------------------------

def test_a_diagnosis_hint_is_given_once_per_exercise_and_the_other_tests_point_to_it():
    mistake = corpus_case("ex3-no-scaling")
    report = grade_content(mistake.source, name="no-scaling.py")
    hint = explanation_text("ex3", "no-scaling", DEFAULT)
    failed = [t for t in report["exercises"]["ex3"]["tests"] if not t["passed"]]
    assert len(failed) >= 2
    assert sum(hint in t["message"] for t in failed) == 1
    first = next(t["name"] for t in failed if hint in t["message"])
    for test in failed:
        if hint not in test["message"]:
            assert f"the same cause as {first}, explained above" in test["message"], test
    assert render_text(report).count(hint) == 1


def test_numbers_that_are_not_yours_are_said_once_per_exercise(course):
    ada = variant_of(course, "ada")
    lesson = corpus_case("lesson-style")  # right for the lesson's numbers, not ada's
    report = grade_content(lesson.source, name="lesson.py", variant=ada)
    for key in ("ex1", "ex2"):
        result = report["exercises"][key]
        assert result["diagnoses"] == ["other-variant"]
        messages = [t["message"] for t in result["tests"] if not t["passed"]]
        assert sum("numbers that are not yours" in m for m in messages) == 1, messages


def test_full_marks_are_not_parsed_for_stubs_and_a_failure_is(monkeypatch):
    """Parsing every cell for its stubs costs milliseconds per submission: only a failed test
    can be not-answered, so only then are they parsed."""
    from autograder.runner import TestResult

    parsed = []
    monkeypatch.setattr(unanswered, "stubs", lambda cells: parsed.append(cells) or {})
    passed = [TestResult("ex1", "scores", 1.0, passed=True)]
    assert unanswered.mark(passed, ["the cells"]) == passed and parsed == []
    failed = [*passed, TestResult("ex1", "weights", 1.0, passed=False)]
    assert unanswered.mark(failed, ["the cells"]) == failed and parsed == [["the cells"]]


def test_only_a_cell_error_worded_as_a_stubs_has_the_cells_parsed():
    def outcome(error):
        return type("Outcome", (), {"error": error})()

    stub = "NotImplementedError: Exercise 3: write attention() here (line 4)"
    assert unanswered.stub_raised([outcome(""), outcome(stub)])
    assert not unanswered.stub_raised([outcome(""), outcome(None), outcome("ValueError: " + stub)])
