"""ExerciseClearSolutions: release stubs that say which exercise they belong to."""

from __future__ import annotations

import nbformat
import pytest

from autograder.exercises import exercise_key, exercise_label
from sdpa_course.nbgrader_ext.clear_solutions import ExerciseClearSolutions


def answer_cell(source: str, grade_id: str, cell_type: str = "code"):
    make = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
    cell = make(source)
    cell.metadata["nbgrader"] = {"grade": False, "grade_id": grade_id, "locked": False,
                                 "schema_version": 3, "solution": True, "task": False}
    return cell


def released(*cells, **build_note) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                 "display_name": "Python 3"}
    nb.metadata.update(build_note)
    nb.cells = list(cells)
    nb, _ = ExerciseClearSolutions().preprocess(nb, {})
    return nb


@pytest.mark.parametrize("grade_id, label", [
    ("ex1_answer", "Exercise 1"), ("ex3_causal_mask", "Exercise 3"), ("ex12_x", "Exercise 12"),
    ("setup", None), ("hex1_x", None), (None, None),
])
def test_exercise_label_comes_from_the_grade_id_prefix(grade_id, label):
    key = exercise_key(grade_id)
    assert (exercise_label(key) if key else None) == label


def test_a_function_body_becomes_a_not_implemented_error_naming_exercise_and_function():
    source = ('def attention(Q, K, V, mask=None):\n    """Doc."""\n    ### BEGIN SOLUTION\n'
              '    return Q, K\n    ### END SOLUTION')
    [cell] = released(answer_cell(source, "ex3_attention")).cells
    assert cell.source == ('def attention(Q, K, V, mask=None):\n    """Doc."""\n'
                           '    # YOUR CODE HERE\n'
                           '    raise NotImplementedError("Exercise 3: write attention() here")')


def test_top_level_answers_become_one_ellipsis_per_name():
    source = "### BEGIN SOLUTION\np = 0.5\nq: float = p * 2\np = 0.25\n### END SOLUTION"
    [cell] = released(answer_cell(source, "ex2_numbers")).cells
    assert cell.source == ("p = ...  # YOUR ANSWER HERE (Exercise 2)\n"
                           "q = ...  # YOUR ANSWER HERE (Exercise 2)")


def test_other_top_level_code_gets_the_generic_stub_with_its_exercise():
    source = "### BEGIN SOLUTION\nfor i in range(3):\n    print(i)\n### END SOLUTION"
    [cell] = released(answer_cell(source, "ex1_loop")).cells
    assert cell.source == ('# YOUR CODE HERE\n'
                           'raise NotImplementedError("Exercise 1: your code goes here")')


def test_cells_outside_the_exercises_keep_nbgraders_stub():
    [cell] = released(answer_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "warmup")).cells
    assert cell.source == "# YOUR CODE HERE\nraise NotImplementedError()"


def test_markdown_answers_keep_nbgraders_text_stub():
    source = "### BEGIN SOLUTION\n**Model answer.** Saturation.\n### END SOLUTION"
    [cell] = released(answer_cell(source, "ex2_explain", cell_type="markdown")).cells
    assert cell.source == "YOUR ANSWER HERE"


def test_configured_stub_is_restored_after_each_cell():
    step = ExerciseClearSolutions()
    before = dict(step.code_stub)
    nb = nbformat.v4.new_notebook()
    nb.cells = [answer_cell("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION",
                            "ex3_f")]
    step.preprocess(nb, {})
    assert step.code_stub == before


def test_the_build_note_of_the_source_is_not_released():
    nb = released(answer_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "ex1_answer"),
                  sdpa_course={"generated": True})
    assert "sdpa_course" not in nb.metadata
