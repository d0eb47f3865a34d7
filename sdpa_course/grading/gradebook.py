"""One nbgrader gradebook connection for a whole grading run, and how failures are recorded.

nbgrader's preprocessors each open their own `Gradebook` (a new SQLAlchemy engine, table
inspection and `create_all`), about nine times per submission: two thirds of its no-kernel
autograde time. `shared_gradebook` opens one and hands it to nbgrader's own preprocessors
(same code, same writes), so the parent process stays the only writer and stays fast.

nbgrader's steps also look every cell up with a query of its own, built anew each time (a
join of up to seven tables): about 80 per submission, most of the parent's gradebook time.
The shared one answers those lookups from what it read once: the release's cells (a copy,
read once a run: the release does not change while `grade` holds the course's run lock) and
one submission's grade and comment rows (the gradebook's own objects, read in one query a
submission and used until that submission's rows go away).
"""

from __future__ import annotations

import importlib
from contextlib import contextmanager
from dataclasses import dataclass

from nbgrader.api import (
    Assignment,
    BaseCell,
    Comment,
    Grade,
    Gradebook,
    GradeCell,
    MissingEntry,
    Notebook,
    SourceCell,
    Student,
    SubmittedAssignment,
    SubmittedNotebook,
    TaskCell,
)
from sqlalchemy import inspect
from sqlalchemy.orm import undefer

# nbgrader's schema holds a student id of at most this many characters: PostgreSQL and MySQL
# refuse a longer one, SQLite stores it. The kit fails such a student on every database alike.
MAX_STUDENT_ID_CHARS = Student.__table__.c.id.type.length

# Modules of nbgrader (and of the kit) that open a Gradebook inside a preprocessor.
_GRADEBOOK_USERS = (
    "nbgrader.preprocessors.getgrades",
    "nbgrader.preprocessors.latesubmissions",
    "nbgrader.preprocessors.overwritecells",
    "nbgrader.preprocessors.overwritekernelspec",
    "nbgrader.preprocessors.saveautogrades",
    "sdpa_course.nbgrader_ext.extra_credit",
)


@dataclass(frozen=True)
class ReleasedCell:
    """What nbgrader's steps read of a release cell (`SourceCell`, or a graded cell's
    `GradeCell`/`TaskCell`): a copy, never written."""

    name: str
    cell_type: str
    locked: bool = False
    checksum: str | None = None
    source: str = ""
    max_score: float = 0.0


class _Reused:
    """Stands in for `Gradebook(...)`: the shared one, left open when the `with` ends, that
    answers nbgrader's per-cell lookups from what it has read already (see the module)."""

    def __init__(self, gradebook: Gradebook):
        self._gradebook = gradebook
        self._released: dict[tuple, tuple[dict, dict]] = {}  # (nb, assignment) -> cells
        self._rows_of: tuple | None = None  # (nb, assignment, student) of `_rows`
        self._rows: tuple[dict, dict] = ({}, {})  # cell name -> its Grade, its Comment

    def __call__(self, *args, **kwargs):
        return self

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self._gradebook.db.rollback()
        return False

    def __getattr__(self, name):
        return getattr(self._gradebook, name)

    def _release(self, notebook: str, assignment: str) -> tuple[dict, dict]:
        key = (notebook, assignment)
        if key not in self._released:
            db = self._gradebook.db
            sources = {cell.name: ReleasedCell(cell.name, cell.cell_type, bool(cell.locked),
                                               cell.checksum, cell.source)
                       for cell in db.query(SourceCell)
                       .join(Notebook, Notebook.id == SourceCell.notebook_id)
                       .join(Assignment, Assignment.id == Notebook.assignment_id)
                       .filter(Notebook.name == notebook, Assignment.name == assignment)}
            graded: dict[str, ReleasedCell] = {}
            for kind in (TaskCell, GradeCell):  # a grade cell first, as nbgrader looks
                for cell in (db.query(kind)
                             .join(Notebook, Notebook.id == kind.notebook_id)
                             .join(Assignment, Assignment.id == Notebook.assignment_id)
                             .filter(Notebook.name == notebook, Assignment.name == assignment)):
                    graded[cell.name] = ReleasedCell(cell.name, cell.cell_type,
                                                     max_score=cell.max_score)
            self._released[key] = (sources, graded)
        return self._released[key]

    def find_source_cell(self, name: str, notebook: str, assignment: str):
        found = self._release(notebook, assignment)[0].get(name)
        return found if found is not None else \
            self._gradebook.find_source_cell(name, notebook, assignment)

    def find_graded_cell(self, name: str, notebook: str, assignment: str):
        found = self._release(notebook, assignment)[1].get(name)
        return found if found is not None else \
            self._gradebook.find_graded_cell(name, notebook, assignment)

    def _submission_rows(self, notebook: str, assignment: str, student: str
                         ) -> tuple[dict, dict]:
        """The submission's Grade and Comment rows by cell name, each read in one query (a
        grade or answer cell's row before a task cell's of the same name, as nbgrader)."""
        key = (notebook, assignment, student)
        if self._rows_of != key:
            db = self._gradebook.db
            found = []
            for row in (Grade, Comment):
                query = db.query(row, BaseCell.name, BaseCell.type)
                if row is Grade:  # read by GetGrades for every grade: in the same query
                    query = query.options(undefer(Grade.max_score))
                rows = (query
                        .join(BaseCell, BaseCell.id == row.cell_id)
                        .join(SubmittedNotebook, SubmittedNotebook.id == row.notebook_id)
                        .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
                        .join(SubmittedAssignment,
                              SubmittedAssignment.id == SubmittedNotebook.assignment_id)
                        .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
                        .join(Student, Student.id == SubmittedAssignment.student_id)
                        .filter(Notebook.name == notebook, Assignment.name == assignment,
                                Student.id == student)
                        .all())
                by_name: dict = {}
                for value, name, _kind in sorted(rows, key=lambda r: r[2] != "TaskCell"):
                    by_name[name] = value  # TaskCell's first, then overwritten
                found.append(by_name)
            self._rows_of, self._rows = key, (found[0], found[1])
        return self._rows

    def _row(self, which: int, name: str, notebook: str, assignment: str, student: str):
        row = self._submission_rows(notebook, assignment, student)[which].get(name)
        if row is not None and "cell_id" in inspect(row).expired_attributes:
            # a commit since it was read: all the submission's rows read again at once (the
            # gradebook's objects, refreshed), not each in a query of its own
            self._rows_of = None
            row = self._submission_rows(notebook, assignment, student)[which].get(name)
        if row is None or not inspect(row).persistent:  # new, or deleted since it was read
            self._rows_of = None
            return None
        return row

    def find_grade(self, grade_cell: str, notebook: str, assignment: str, student: str):
        row = self._row(0, grade_cell, notebook, assignment, student)
        return row if row is not None else \
            self._gradebook.find_grade(grade_cell, notebook, assignment, student)

    def find_comment(self, solution_cell: str, notebook: str, assignment: str, student: str):
        row = self._row(1, solution_cell, notebook, assignment, student)
        return row if row is not None else \
            self._gradebook.find_comment(solution_cell, notebook, assignment, student)


@contextmanager
def shared_gradebook(db_url: str, course_id: str = ""):
    """Open the gradebook once; nbgrader's preprocessors use it until the block ends."""
    gradebook = Gradebook(db_url, course_id)
    reused = _Reused(gradebook)
    modules = [importlib.import_module(name) for name in _GRADEBOOK_USERS]
    saved = [module.Gradebook for module in modules]
    for module in modules:
        module.Gradebook = reused
    try:
        yield gradebook
    finally:
        for module, original in zip(modules, saved, strict=True):
            module.Gradebook = original
        gradebook.close()


@contextmanager
def one_commit(gradebook: Gradebook):
    """nbgrader's `db.commit()` calls inside the block held back, and made once at its end:
    for a step that commits after every cell (SaveAutoGrades: about 14 a submission, each a
    flush of one row and every loaded row read again after it). Only for a step that reads no
    score the gradebook computes from rows it wrote (those are read again after the commit).
    An exception rolls the whole block back."""
    db = gradebook.db
    db.commit = _held_back
    try:
        yield
    except BaseException:
        del db.commit
        db.rollback()
        raise
    del db.commit
    db.commit()


def _held_back() -> None:
    """`db.commit` inside `one_commit`."""


def student_id_refused(student: str) -> str:
    """Why nbgrader's gradebook cannot hold `student` as an id, or ""."""
    if len(student) > MAX_STUDENT_ID_CHARS:
        return (f"the student id (the folder's name) is {len(student)} characters long; "
                f"nbgrader's gradebook holds ids of at most {MAX_STUDENT_ID_CHARS}: rename "
                "the folder to the student's id and grade again")
    return ""


def has_submission(gradebook: Gradebook, assignment: str, student: str) -> bool:
    try:
        gradebook.find_submission(assignment, student)
    except MissingEntry:
        return False
    return True


def clear_failed_submission(gradebook: Gradebook, assignment: str, student: str) -> str:
    """Keep a failed student out of the gradebook's scores; say what was done.

    nbgrader leaves a failed submission in the gradebook with score 0, indistinguishable
    from a real zero. Here the submission is removed, unless a grader already marked part of
    it by hand: then those marks stay, the automatic scores are cleared (needing manual
    grading) and the notebook is flagged for review.
    """
    try:
        submission = gradebook.find_submission(assignment, student)
    except MissingEntry:
        return "not in the gradebook"
    grades = [grade for notebook in submission.notebooks for grade in notebook.grades]
    if not any(grade.manual_score is not None for grade in grades):
        gradebook.remove_submission(assignment, student)
        return "removed from the gradebook"
    for notebook in submission.notebooks:
        notebook.flagged = True
        for grade in notebook.grades:
            if grade.manual_score is None:
                grade.auto_score = None
                grade.needs_manual_grade = True
    gradebook.db.commit()
    return "kept for its hand-given marks, automatic scores cleared and flagged"
