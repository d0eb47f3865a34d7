"""Small factories for the class-grading tests: a released course and submissions to put in it.

The course is made once per test session with the kit's own `init_course` and
`release_assignment`, then copied per test. The grading tests pass `tests/fake_engine.py` to
`grade_course(..., engine=...)` so the pipeline can be tested on scores it chooses.
"""

from __future__ import annotations

import atexit
import copy
import shutil
import tempfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

REPO = Path(__file__).resolve().parent.parent
ANSWER_KEY = REPO / "solutions" / "sdpa" / "attention.ipynb"
TIMESTAMP = "2026-11-20 09:30:00.000000 UTC"


_RELEASED: list[Path] = []  # one released course per test session, copied for each use


def released_course(path: Path) -> Path:
    """A fresh course at `path`, made by `init_course` + `release_assignment` (once a session)."""
    from sdpa_course.course.create import init_course
    from sdpa_course.course.release import release_assignment

    if not _RELEASED:
        master = Path(tempfile.mkdtemp(prefix="sdpa-released-")) / "course"
        init_course(master)
        release_assignment(master)
        atexit.register(shutil.rmtree, master.parent, ignore_errors=True)
        _RELEASED.append(master)
    shutil.copytree(_RELEASED[0], path)
    return path


def with_deadline(course: Path, deadline: float) -> None:
    """Set the course's per-submission deadline (`ClassGrading.submission_deadline`)."""
    with (course / "nbgrader_config.py").open("a") as fh:
        fh.write(f"\nc.ClassGrading.submission_deadline = {deadline}\n")


def copy_course(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest)
    return dest


def answer_key():
    return nbformat.read(str(ANSWER_KEY), as_version=4)


def with_code(nb, source: str):
    """The notebook with one more code cell of the student's (e.g. a fake-engine marker)."""
    nb = copy.deepcopy(nb)
    nb.cells.append(new_code_cell(source))
    return nb


def without_cell(nb, grade_id: str):
    nb = copy.deepcopy(nb)
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != grade_id]
    return nb


def with_cell_source(nb, grade_id: str, source: str):
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            cell.source = source
    return nb


def other_assignment_notebook():
    nb = new_notebook()
    cell = new_code_cell("answer = 42")
    cell.metadata["nbgrader"] = {"grade": False, "grade_id": "hw9_answer", "locked": False,
                                 "schema_version": 3, "solution": True, "task": False}
    nb.cells.append(cell)
    return nb


def submit(course: Path, student: str, notebook=None, *, text: str | None = None,
           timestamp: str = TIMESTAMP) -> Path:
    """Put a submission at submitted/<student>/sdpa/attention.ipynb (a notebook or raw text)."""
    folder = course / "submitted" / student / "sdpa"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "attention.ipynb"
    if text is not None:
        path.write_text(text)
    else:
        nbformat.write(notebook if notebook is not None else answer_key(), str(path))
    (folder / "timestamp.txt").write_text(timestamp)
    # what `nbgrader submit` leaves for release_feedback / fetch_feedback to pair them
    (folder / "submission_secret.txt").write_text(f"secret-of-{student}")
    return path
