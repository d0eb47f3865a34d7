"""Grading runs what decides the grade (issue 30): the lesson's demonstrations and self-checks,
known by grade_id and the release's exact text, are left out; a left-out cell never changes a
grade; the feedback's heatmap is drawn from the weights read through the sandbox."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograder import heatmap, skipping
from autograder.corpus import cases
from autograder.engine import grade_cells
from autograder.exercises import NAME_TO_EXERCISE
from autograder.lesson_cells import SKIPPABLE
from autograder.sandbox import Limits
from autograder.submission import notebook_cells, python_cells
from autograder.variants import shown
from sdpa_course.course.notebooks import answer_key_path
from sdpa_course.demo import notebook_from_source
from sdpa_course.reports.heatmap import heatmap_html
from tests.graded_ahead import GradedAhead

REPO = Path(__file__).resolve().parents[1]
QUICK = Limits(cell_seconds=2.0, call_seconds=1.0)
TAGGED = {"ex1_selfcheck", "demo_score_spread", "ex2_selfcheck_softmax", "ex2_selfcheck_numbers",
          "ex3_selfcheck_attention", "ex3_selfcheck_causal_mask", "ex3_selfcheck_checks",
          "ex3_verify", "ex3_heatmap", "demo_attention_memory", "ex4_selfcheck"}


@pytest.fixture(scope="module")
def key_json() -> dict:
    return json.loads(answer_key_path(REPO).read_text())


def _cell(nb: dict, grade_id: str) -> dict:
    return next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {})
                .get("grade_id") == grade_id)


def _source(cell: dict) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def _kept(sources: list[str], tagged: int = 0) -> dict[int, str]:
    return skipping.kept_anyway({tagged: skipping.cell_names(sources[tagged]).defines}, sources)


# --- which cells: the kit's knowledge of the release, never the notebook's metadata -----------

def test_the_lesson_s_tagged_cells_can_all_be_skipped(key_json):
    code = [c for c in key_json["cells"] if c["cell_type"] == "code"]
    tags = [next((t for t in c.get("metadata", {}).get("tags", [])
                  if t in (skipping.DEMO, skipping.SELF_CHECK)), None) for c in code]
    lesson = [(c["metadata"].get("nbgrader", {}).get("grade_id"), _source(c), tag)
              for c, tag in zip(code, tags, strict=True)]
    assert skipping.lesson_problems(lesson) == []
    assert set(SKIPPABLE) == TAGGED


def test_the_answer_key_s_tagged_cells_are_known_and_nothing_else(key_json):
    cells = notebook_cells(key_json)
    tagged = {c.grade_id: c.lesson_tag for c in cells if c.lesson_tag}
    assert set(tagged) == TAGGED
    assert {tag for gid, tag in tagged.items() if "selfcheck" in gid} == {"self-check"}
    run, left_out = skipping.split(cells)
    assert {c.grade_id for c in left_out} == TAGGED and len(run) + len(left_out) == len(cells)


def test_an_edited_copy_of_a_locked_cell_runs_as_the_student_s_code(key_json):
    nb = copy.deepcopy(key_json)
    cell = _cell(nb, "ex3_heatmap")
    cell["source"] = _source(cell) + "\nprint('mine')\n"
    by_id = {c.grade_id: c for c in notebook_cells(nb)}
    assert by_id["ex3_heatmap"].lesson_tag is None
    assert by_id["ex1_selfcheck"].lesson_tag == "self-check"


def test_metadata_a_student_can_edit_decides_nothing(key_json):
    nb = copy.deepcopy(key_json)
    answer = _cell(nb, "ex3_attention")
    answer["metadata"]["tags"] = ["demo"]  # a student's own cell, tagged and locked by hand
    answer["metadata"]["nbgrader"]["locked"] = True
    _cell(nb, "ex1_selfcheck")["metadata"].pop("tags")  # a released self-check, untagged
    by_id = {c.grade_id: c for c in notebook_cells(nb)}
    assert by_id["ex3_attention"].lesson_tag is None
    assert by_id["ex1_selfcheck"].lesson_tag == "self-check"


def test_a_python_file_runs_every_statement(key_json):
    text = "\n\n".join(_source(c) for c in key_json["cells"] if c["cell_type"] == "code")
    assert not [c for c in python_cells(text) if c.lesson_tag]


def test_a_tagged_cell_whose_names_code_that_runs_reads_is_run(key_json):
    """A student's cell that calls a self-check's helper keeps that self-check running."""
    cells = notebook_cells(key_json)
    answer = next(i for i, c in enumerate(cells) if c.grade_id == "ex1_answer")
    cells[answer] = dataclasses.replace(cells[answer],
                                        source=cells[answer].source + "\n_ex1_problems()\n")
    run, left_out = skipping.split(cells)
    assert "ex1_selfcheck" in {c.grade_id for c in run}
    assert "ex1_selfcheck" not in {c.grade_id for c in left_out}


@pytest.mark.parametrize("student_code", [
    "x = globals()[name]", "exec(code)", "y = eval('EX1')", "import __main__",
    "import sys\nf = sys.modules['__main__']", "g = f.__globals__", "ns = vars()",
    "get_ipython().user_ns",
])
def test_code_that_reaches_names_dynamically_keeps_every_tagged_cell(student_code):
    assert 0 in _kept(["def _helper(): pass", student_code])


@pytest.mark.parametrize("student_code", [
    "x = globals().get('STUDENT_ID')", "ok = 'EX1' in globals()", "y = globals()['EX1']",
    "print(np.sum([1, 2]))", "def attention(Q, K, V, mask=None):\n    return Q, K\n",
    "def f(:\n    _helper()",  # never compiles, so never runs
])
def test_code_that_reads_names_at_constant_keys_skips_what_it_does_not_read(student_code):
    assert _kept(["def _helper(): pass\n_x = 1", student_code]) == {}


def test_reads_anywhere_in_code_that_runs_count_earlier_cells_and_function_bodies_too():
    sources = ["def attention(Q, K, V, mask=None):\n    return _scale(Q), K",  # runs: reads it
               "def _scale(x):\n    return x"]  # tagged: defines it
    assert 1 in _kept(sources, tagged=1)


def test_a_tagged_cell_defining_a_name_the_grader_reads_is_run():
    assert 0 in _kept(["def softmax(z):\n    return z", "x = 1"])
    assert 0 in _kept(["EX1 = {}", "x = 1"])


def test_the_grader_s_reads_are_the_exercises_and_the_shown_numbers():
    assert skipping.GRADER_READS == (set(NAME_TO_EXERCISE)
                                     | {shown.LABEL_NAME, shown.EX1_NAME, shown.EX2_NAME})


def test_a_function_s_locals_are_not_bindings_but_its_globals_are():
    names = skipping.cell_names("def f():\n    local = 1\n    global shared\n    shared = 2\n"
                                "[i for i in range(3)]\nimport os.path as p, numpy\n")
    assert names.defines == {"f", "shared", "p", "numpy"}


# --- the heatmap: the lesson's example, read through the sandbox, drawn as SVG and a table ----

def test_the_heatmap_s_example_is_the_notebook_s(key_json):
    seen = {}

    def attention(Q, K, V, mask=None):  # the notebook's cell calls it; keep what it passed
        seen.update(Q=Q, K=K, V=V)
        return V, np.tril(np.ones((len(Q), len(Q)))) / np.arange(1, len(Q) + 1)[:, None]

    import matplotlib

    matplotlib.use("Agg")
    namespace = {"np": np, "attention": attention,
                 "causal_mask": lambda T: np.triu(np.ones((T, T), dtype=bool), k=1)}
    exec(_source(_cell(key_json, heatmap.HEATMAP_CELL)), namespace)  # noqa: S102 - the lesson's
    for got, want in zip((seen["Q"], seen["K"], seen["V"]), heatmap.lesson_example(),
                         strict=True):
        np.testing.assert_array_equal(got, want)


def test_the_heatmap_page_is_svg_with_a_title_and_its_numbers_in_a_table():
    weights = [[1.0, 0.0], [0.25, 0.75]]
    page = heatmap_html({"size": 2, "weights": weights, "problem": ""})
    assert re.search(r'<svg [^>]*role="img" aria-labelledby="heatmap-title"', page)
    assert '<title id="heatmap-title">' in page and "<caption>" in page
    assert [float(x) for x in re.findall(r"<td>([0-9.]+)</td>", page)] == [1.0, 0.0, 0.25, 0.75]
    assert "#d9d9d9" in page  # the exact zero in grey, as the notebook draws it
    assert "<img" not in page and "<script" not in page.lower()


def test_no_picture_says_why_escaped():
    page = heatmap_html({"size": 8, "weights": None,
                         "problem": "your code failed: ValueError: <script>x</script>"})
    assert "No picture" in page and "<script>" not in page and "&lt;script&gt;" in page


# --- grading: same grades with and without the lesson's cells -------------------------------

def _notebook(source: str) -> dict:
    key = nbformat.read(answer_key_path(REPO), as_version=4)
    return json.loads(nbformat.writes(notebook_from_source(key, source)))


def _graded(key: tuple[str, bool]) -> dict:
    name, skip = key
    case = CASES[name]
    return grade_cells(notebook_cells(_notebook(case.source)), submission=f"{name}.ipynb",
                       limits=QUICK, skip_lesson=skip)


CASES = {case.name: case for case in cases()}


@pytest.fixture(scope="module")
def corpus_reports():
    keys = [(name, skip) for name in CASES for skip in (True, False)]
    return GradedAhead(_graded, keys)


def _grade(report: dict) -> dict:
    return {"score": report["score"], "extra_credit": report["extra_credit"],
            **{key: (ex["score"], ex["diagnoses"], [t["passed"] for t in ex["tests"]])
               for key, ex in report["exercises"].items()}}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_every_corpus_case_grades_the_same_with_and_without_the_lesson_s_cells(
        corpus_reports, name):
    skipped, ran = corpus_reports[(name, True)], corpus_reports[(name, False)]
    assert _grade(skipped) == _grade(ran)
    assert ran["skipped"] == []  # (a notebook with a cell that does not parse skips nothing)


def test_the_answer_key_leaves_out_the_lesson_s_cells_and_reads_the_heatmap(key_json):
    report = grade_cells(notebook_cells(key_json), submission="key.ipynb", limits=QUICK)
    assert report["score"] == report["max_score"]
    assert {c["grade_id"] for c in report["skipped"]} == TAGGED
    assert not any(c["index"] in {s["index"] for s in report["skipped"]}
                   for c in report["outputs"])
    weights = np.array(report["heatmap"]["weights"])  # (8, 8)
    assert weights.shape == (8, 8) and np.allclose(weights.sum(axis=1), 1.0)
    assert np.all(np.triu(weights, k=1) == 0.0)


@pytest.mark.parametrize("source", [
    "x = globals()[name]", "x = globals().get('STUDENT_ID')", "import __main__",
    "def f(:\n    _helper()", "def f():\n    global g\n    g = h.attr\n    del k\n",
    "y = getattr(obj, 'named')\nz = sys.modules['__main__']",
])
def test_what_split_reads_of_a_cell_is_what_cell_names_reads(source, key_json):
    """`split` reads a running cell's names without what it binds (half the time): the same
    reads and dynamic access as `cell_names`, for the lesson's cells and code like students'."""
    for text in [source] + [c.source for c in notebook_cells(key_json)]:
        names = skipping.cell_names(text)
        assert skipping._cached_reads(text) == (names.reads, names.dynamic)
