"""One name for one thing: the exercises of `autograder.exercises.EXERCISES` and the codes of
`autograder.diagnoses.codes` are the ones the notebook, the release, the feedback, the pytest
markers and the reports use."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from autograder.exercises import EXERCISES, exercise_key, exercise_label
from sdpa_course.assignment import ASSIGNMENT, NOTEBOOK, NUMBERS_CELL
from sdpa_course.reports.feedback_text import exercise_text, summary_view

ROOT = Path(__file__).resolve().parent.parent
TEXT_SOURCE = ROOT / "source" / ASSIGNMENT / f"{NOTEBOOK}.py"
SOURCE_NOTEBOOK = ROOT / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"


def grade_cells() -> dict[str, dict]:
    nb = nbformat.read(str(SOURCE_NOTEBOOK), as_version=4)
    return {cell.metadata["nbgrader"]["grade_id"]: cell.metadata["nbgrader"]
            for cell in nb.cells if "nbgrader" in cell.metadata}


@pytest.mark.parametrize("key", EXERCISES)
def test_the_notebook_heads_each_exercise_with_its_catalogue_heading(key):
    headings = re.findall(r"^# ## (Exercise \d+: [^(\n]+?) \(", TEXT_SOURCE.read_text(), re.M)
    assert EXERCISES[key].heading in headings


def test_every_cell_of_an_exercise_is_named_by_its_key():
    # besides the exercises' cells: the notebook's setup, the student's own numbers and the
    # lesson's demonstrations that belong to no exercise (tagged "demo", named `demo_...`)
    nb = nbformat.read(str(SOURCE_NOTEBOOK), as_version=4)
    demos = {cell.metadata["nbgrader"]["grade_id"] for cell in nb.cells
             if "nbgrader" in cell.metadata and "demo" in cell.metadata.get("tags", [])}
    for grade_id in grade_cells():
        if grade_id in demos and grade_id.startswith("demo_"):
            continue
        assert grade_id in ("setup", NUMBERS_CELL) or exercise_key(grade_id) in EXERCISES, grade_id


@pytest.mark.parametrize("key", EXERCISES)
def test_each_exercise_has_one_graded_cell_worth_its_points(key):
    graded = {gid: cell for gid, cell in grade_cells().items()
              if gid.endswith("_autograded")}
    assert set(graded) == {exercise.graded_cell_id for exercise in EXERCISES.values()}
    points = float(graded[EXERCISES[key].graded_cell_id]["points"])
    # An extra-credit exercise's cell is worth 0: its score is recorded as extra credit.
    assert points == (0.0 if EXERCISES[key].extra_credit else EXERCISES[key].max_score)


@pytest.mark.parametrize("key", EXERCISES)
def test_each_exercise_is_a_pytest_marker_and_a_hidden_suite(key):
    pyproject = (ROOT / "pyproject.toml").read_text()
    number = exercise_label(key).split()[-1]
    assert f'"{key}: exercise {number}, {EXERCISES[key].title}"' in pyproject
    assert (ROOT / "autograder" / "suites" / f"test_{key}.py").is_file()


def test_the_feedback_names_exercises_by_their_headings():
    result = {"score": 1.0, "max_score": 3.0, "diagnoses": ["no-scaling"], "tests": []}
    text = exercise_text("ex1", result)
    assert text.startswith(f"{EXERCISES['ex1'].heading}: 1 / 3 points")
    summary = summary_view({"score": 1.0, "max_score": 3.0, "exercises": {"ex1": result}}, [])
    assert summary["rows"][0]["what"] == EXERCISES["ex1"].heading
