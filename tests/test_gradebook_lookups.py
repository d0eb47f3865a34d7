"""The parent's shortcuts around nbgrader's own steps change nothing they write or read.

`shared_gradebook` answers nbgrader's per-cell lookups from what it read once (the release's
cells, a submission's grade and comment rows): each answer is the gradebook's own, also after
a commit, a marker's change in another connection, or the submission's removal.
`one_commit` holds a step's commits back to one, or none on an error. `notebook_json` is
nbformat's own file text, without its deep copy.
"""

from __future__ import annotations

import copy
import importlib

import fake_engine
import nbformat
import pytest
from grade_course_factory import answer_key, released_course, submit
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output
from nbgrader.api import Gradebook, MissingEntry

import sdpa_course.grading.grade as pipeline
from sdpa_course.grading.gradebook import one_commit, shared_gradebook
from sdpa_course.grading.recording import notebook_json

NB, ASSIGNMENT = "attention", "sdpa"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = released_course(tmp_path_factory.mktemp("lookups") / "course")
    submit(course, "ada", answer_key())
    submit(course, "ben", answer_key())
    pipeline.grade_course(course, engine=fake_engine.grade_submission, workers=1)
    return course


def _url(course) -> str:
    return f"sqlite:///{course / 'gradebook.db'}"


def _as_nbgraders_steps_see_it(url: str):
    """What an nbgrader preprocessor gets from `Gradebook(db_url)` inside the block."""
    return importlib.import_module("nbgrader.preprocessors.saveautogrades").Gradebook(url)


def test_every_lookup_answers_as_nbgraders_own(course):
    with Gradebook(_url(course)) as plain, shared_gradebook(_url(course)) as shared:
        reused = _as_nbgraders_steps_see_it(_url(course))
        notebook = plain.find_notebook(NB, ASSIGNMENT)
        for cell in notebook.source_cells:
            found = reused.find_source_cell(cell.name, NB, ASSIGNMENT)
            assert (found.name, found.cell_type, found.locked, found.checksum, found.source) \
                == (cell.name, cell.cell_type, cell.locked, cell.checksum, cell.source)
        for cell in notebook.grade_cells:
            assert reused.find_graded_cell(cell.name, NB, ASSIGNMENT).max_score \
                == cell.max_score
        compared = 0
        for student in ("ada", "ben"):
            for cell in notebook.grade_cells:
                ours = reused.find_grade(cell.name, NB, ASSIGNMENT, student)
                theirs = plain.find_grade(cell.name, NB, ASSIGNMENT, student)
                assert ours is shared.find_grade(cell.name, NB, ASSIGNMENT, student)
                assert (ours.id, ours.score, ours.max_score, ours.needs_manual_grade) == \
                    (theirs.id, theirs.score, theirs.max_score, theirs.needs_manual_grade)
                compared += 1
            for cell in notebook.solution_cells:
                ours = reused.find_comment(cell.name, NB, ASSIGNMENT, student)
                theirs = plain.find_comment(cell.name, NB, ASSIGNMENT, student)
                assert (ours.id, ours.comment) == (theirs.id, theirs.comment)
                compared += 1
        assert compared >= 10
        for lookup in (lambda: reused.find_grade("no_such_cell", NB, ASSIGNMENT, "ada"),
                       lambda: reused.find_comment("no_such_cell", NB, ASSIGNMENT, "ada"),
                       lambda: reused.find_grade("ex2_explain", NB, ASSIGNMENT, "nobody"),
                       lambda: reused.find_source_cell("no_such_cell", NB, ASSIGNMENT),
                       lambda: reused.find_graded_cell("no_such_cell", NB, ASSIGNMENT)):
            with pytest.raises(MissingEntry):
                lookup()


def test_a_lookup_after_a_commit_sees_a_markers_change_and_a_removal(course, tmp_path):
    import shutil

    copy_dir = shutil.copytree(course, tmp_path / "course")
    url = _url(copy_dir)
    with shared_gradebook(url) as shared:
        reused = _as_nbgraders_steps_see_it(url)
        assert reused.find_grade("ex2_explain", NB, ASSIGNMENT, "ada").manual_score is None
        with Gradebook(url) as formgrader:  # a marker, in another connection
            formgrader.find_grade("ex2_explain", NB, ASSIGNMENT, "ada").manual_score = 1.5
            formgrader.find_comment("ex2_explain", NB, ASSIGNMENT, "ada").manual_comment = "ok"
            formgrader.db.commit()
        shared.db.commit()  # as nbgrader's steps do between submissions
        assert reused.find_grade("ex2_explain", NB, ASSIGNMENT, "ada").manual_score == 1.5
        assert reused.find_comment("ex2_explain", NB, ASSIGNMENT, "ada").comment == "ok"
        reused.find_grade("ex2_explain", NB, ASSIGNMENT, "ada")  # read, then removed
        shared.remove_submission(ASSIGNMENT, "ada")
        with pytest.raises(MissingEntry):
            reused.find_grade("ex2_explain", NB, ASSIGNMENT, "ada")
        with pytest.raises(MissingEntry):
            reused.find_comment("ex2_explain", NB, ASSIGNMENT, "ada")


def test_one_commit_writes_once_at_the_end_or_nothing_on_an_error(course, tmp_path):
    import shutil

    url = _url(shutil.copytree(course, tmp_path / "course"))
    with Gradebook(url) as gradebook:
        grade = gradebook.find_grade("ex2_explain", NB, ASSIGNMENT, "ada")
        with pytest.raises(RuntimeError), one_commit(gradebook):
            grade.manual_score = 2.0
            gradebook.db.commit()  # held back
            raise RuntimeError("a step failed")
        with Gradebook(url) as other:
            assert other.find_grade("ex2_explain", NB, ASSIGNMENT, "ada").manual_score is None
        with one_commit(gradebook):
            gradebook.find_grade("ex2_explain", NB, ASSIGNMENT, "ada").manual_score = 1.0
            gradebook.db.commit()
            with Gradebook(url) as other:  # not yet written
                assert other.find_grade("ex2_explain", NB, ASSIGNMENT,
                                        "ada").manual_score is None
        with Gradebook(url) as other:
            assert other.find_grade("ex2_explain", NB, ASSIGNMENT, "ada").manual_score == 1.0
        assert "commit" not in vars(gradebook.db)  # nbgrader's own commit again



def test_a_step_that_fails_in_the_shared_gradebook_is_rolled_back_and_one_that_ends_is_not(
        course, tmp_path):
    """The `with Gradebook(...)` of a step inside `shared_gradebook` rolls back what the
    step left uncommitted when it raises, and nothing when it ends (`if exc_type is not
    None` with a `not` added did the opposite: a failed step's change was written by the
    next commit, and a finished step's lost)."""
    import shutil

    url = _url(shutil.copytree(course, tmp_path / "course"))
    with shared_gradebook(url) as gradebook:
        with pytest.raises(RuntimeError), _as_nbgraders_steps_see_it(url) as step:
            step.find_grade("ex2_explain", NB, ASSIGNMENT, "ada").manual_score = 2.0
            raise RuntimeError("a step failed")
        assert gradebook.find_grade("ex2_explain", NB, ASSIGNMENT, "ada").manual_score is None
        with _as_nbgraders_steps_see_it(url) as step:
            step.find_grade("ex2_explain", NB, ASSIGNMENT, "ben").manual_score = 1.0
        gradebook.db.commit()
    with Gradebook(url) as other:
        assert other.find_grade("ex2_explain", NB, ASSIGNMENT, "ada").manual_score is None
        assert other.find_grade("ex2_explain", NB, ASSIGNMENT, "ben").manual_score == 1.0

def _everything_split_lines_touches():
    nb = answer_key()
    code = new_code_cell("print('a')\nprint('b')\n")
    code.outputs = [
        new_output("stream", name="stdout", text="a\nb\n"),
        new_output("stream", name="stderr", text=["already\n", "split"]),
        new_output("display_data", data={"text/plain": "x\ny", "image/svg+xml": "<svg>\n</svg>",
                                         "image/png": "iVBORw0KGgo=\n",
                                         "application/json": {"a": "b\nc"}}),
        new_output("execute_result", data={"text/html": "<b>\n</b>"}, execution_count=3),
        new_output("error", ename="E", evalue="v\nw", traceback=["t\n1"]),
    ]
    code.metadata["trusted"] = True
    markdown = new_markdown_cell("![x](attachment:x.png)\n", attachments={
        "x.png": {"image/png": "iVBOR\nw0=", "text/plain": "a\nb"}})
    nb.cells += [code, markdown]
    nb.metadata.update(signature="sha256:0", orig_nbformat=3, orig_nbformat_minor=0)
    return nb


def test_the_releases_cells_are_read_once_and_answer_every_lookup(course, monkeypatch):
    """The release's cells come from one read of this notebook's rows; a lookup that had to
    ask nbgrader (a cell read that missed them, e.g. `Notebook.name != notebook`) is a
    query per cell again, which the reuse is there to save."""
    with Gradebook(_url(course)) as plain, shared_gradebook(_url(course)):
        reused = _as_nbgraders_steps_see_it(_url(course))
        for lookup in ("find_source_cell", "find_graded_cell"):
            monkeypatch.setattr(reused._gradebook, lookup, lambda *args: pytest.fail(
                f"{args} was looked up in the gradebook, not among the release's cells"))
        notebook = plain.find_notebook(NB, ASSIGNMENT)
        for cell in notebook.source_cells:
            assert reused.find_source_cell(cell.name, NB, ASSIGNMENT).source == cell.source
        for cell in notebook.grade_cells:
            assert reused.find_graded_cell(cell.name, NB, ASSIGNMENT).max_score \
                == cell.max_score


@pytest.mark.parametrize("make", [answer_key, _everything_split_lines_touches])
def test_notebook_json_is_nbformats_text_and_leaves_the_notebook_as_it_was(make):
    nb = make()
    before = copy.deepcopy(nb)
    assert notebook_json(nb) == nbformat.v4.writes_json(nb)
    assert nb == before
