"""One nbgrader gradebook connection for a whole grading run, and how failures are recorded.

nbgrader's preprocessors each open their own `Gradebook` (a new SQLAlchemy engine, table
inspection and `create_all`), about nine times per submission: two thirds of its no-kernel
autograde time. `shared_gradebook` opens one and hands it to nbgrader's own preprocessors
(same code, same writes), so the parent process stays the only writer and stays fast.
"""

from __future__ import annotations

import importlib
from contextlib import contextmanager

from nbgrader.api import Gradebook, MissingEntry, Student

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


class _Reused:
    """Stands in for `Gradebook(...)`: the shared one, left open when the `with` ends."""

    def __init__(self, gradebook: Gradebook):
        self._gradebook = gradebook

    def __call__(self, *args, **kwargs):
        return self

    def __enter__(self):
        return self._gradebook

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self._gradebook.db.rollback()
        return False

    def __getattr__(self, name):
        return getattr(self._gradebook, name)


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
