"""nbgrader's metadata check inside a grading run (`schema_checked_once`): the same verdicts
as nbgrader's own, also for metadata seen before in another form."""

from __future__ import annotations

import copy

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from nbgrader.nbgraderformat import MetadataValidator, ValidationError

from sdpa_course.grading.nbgrader_speedups import schema_checked_once


def graded(points=2.0, **changes) -> dict:
    meta = {"grade": True, "grade_id": "ex1_autograded", "locked": True, "points": points,
            "schema_version": 3, "solution": False, "task": False}
    return {**meta, **changes}


def notebook(*metas):
    cells = [new_code_cell("x = 1", metadata={"nbgrader": meta}) for meta in metas]
    cells.append(new_markdown_cell("text"))
    return new_notebook(cells=cells)


def verdict(nb) -> str:
    try:
        MetadataValidator().validate_nb(nb)
    except (ValidationError, Exception) as err:  # noqa: BLE001 - the verdict is the type
        return type(err).__name__
    return "valid"


BROKEN = [
    graded(points="2"),  # a string where a number goes
    graded(points=True),  # a boolean is no number to jsonschema
    graded(locked=1),  # nor a number a boolean
    graded(grade_id=["ex1_autograded"]),
    graded(points=None),
    {**graded(), "cell_type": 3},
]


@pytest.mark.parametrize("meta", BROKEN, ids=repr)
def test_metadata_is_refused_after_a_valid_look_alike_was_accepted(meta):
    with schema_checked_once():
        assert verdict(notebook(graded())) == "valid"
        assert verdict(notebook(graded())) == "valid"  # remembered
        ours = verdict(notebook(copy.deepcopy(meta)))
    assert ours == verdict(notebook(copy.deepcopy(meta))) != "valid"  # nbgrader's own verdict


def test_metadata_is_refused_every_time():
    with schema_checked_once():
        for _ in range(3):
            assert verdict(notebook(graded(points="2"))) != "valid"


def test_a_valid_notebook_stays_valid_and_edits_are_seen():
    nb = notebook(graded(), graded(grade_id="ex2_autograded", points=6.0))
    with schema_checked_once():
        assert verdict(nb) == "valid"
        nb.cells[1].metadata.nbgrader.points = "6"  # changed in place since it was checked
        assert verdict(nb) != "valid"
    assert isinstance(nb, nbformat.NotebookNode)
