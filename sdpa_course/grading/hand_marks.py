"""What the gradebook holds beside the engine's scores: hand marks, comments, lateness.

Read once per student when the class report and the exports are written, and to tell which
feedback pages are stale: `marks_fingerprint` changes whenever a grader gives or changes a
hand mark or a comment in formgrader (or the late penalty changes), so a plain rerun of
`sdpa-course grade` (or `sdpa-course feedback`) regenerates exactly those pages.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from nbgrader.api import (
    Assignment,
    BaseCell,
    Comment,
    Grade,
    Gradebook,
    Notebook,
    SubmittedAssignment,
    SubmittedNotebook,
)
from sqlalchemy.orm import joinedload, undefer


def _joined(query, assignment: str, notebook: str, student: str | None):
    """`query` (from the submitted notebook) narrowed to `notebook` of `assignment`, and to
    one student's when `student` is given."""
    query = (query
             .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
             .join(SubmittedAssignment, SubmittedAssignment.id == SubmittedNotebook.assignment_id)
             .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
             .filter(Notebook.name == notebook, Assignment.name == assignment))
    if student is not None:
        query = query.filter(SubmittedAssignment.student_id == student)
    return query


def _read_marks(gradebook: Gradebook, assignment: str, notebook: str,
                student: str | None = None) -> dict[str, dict]:
    """student -> `notebook_marks` of their submitted notebook (all students', or one's), read
    in three queries: the submissions (nbgrader's objects, for their lateness), and the
    grades' and comments' values as plain rows (building nbgrader's objects for each grade,
    its cell and comment cost more than the queries)."""
    db = gradebook.db
    submissions = (_joined(db.query(SubmittedAssignment).select_from(SubmittedNotebook),
                           assignment, notebook, student)
                   .options(joinedload(SubmittedAssignment.assignment),
                            undefer(SubmittedAssignment.late_submission_penalty))
                   .all())
    grades: dict[str, list] = {}
    for row in _joined(db.query(SubmittedAssignment.student_id, BaseCell.name,
                                Grade.auto_score, Grade.manual_score, Grade.extra_credit,
                                Grade.score, Grade.max_score, Grade.cell_type)
                       .select_from(Grade)
                       .join(BaseCell, BaseCell.id == Grade.cell_id)
                       .join(SubmittedNotebook, SubmittedNotebook.id == Grade.notebook_id),
                       assignment, notebook, student):
        grades.setdefault(row.student_id, []).append(row)
    comments: dict[str, list] = {}
    for row in _joined(db.query(SubmittedAssignment.student_id, BaseCell.name,
                                Comment.manual_comment)
                       .select_from(Comment)
                       .join(BaseCell, BaseCell.id == Comment.cell_id)
                       .join(SubmittedNotebook, SubmittedNotebook.id == Comment.notebook_id),
                       assignment, notebook, student):
        comments.setdefault(row.student_id, []).append(row)
    return {sub.student_id: _marks(grades.get(sub.student_id, []),
                                   comments.get(sub.student_id, []), sub)
            for sub in submissions}


def notebook_marks(nb: SubmittedNotebook) -> dict:
    """The marks of one submitted notebook, from nbgrader's own objects (what `student_marks`
    and `class_marks` read in fewer queries)."""
    return _marks([_GradeRow(g.name, g.auto_score, g.manual_score, g.extra_credit, g.score,
                             g.max_score, g.cell.cell_type) for g in nb.grades],
                  nb.comments, nb.assignment)


@dataclass(frozen=True)
class _GradeRow:
    name: str
    auto_score: float | None
    manual_score: float | None
    extra_credit: float | None
    score: float
    max_score: float
    cell_type: str


def _marks(grades, comments, submission: SubmittedAssignment) -> dict:
    """The marks of one submitted notebook: its grades and comments (each with the fields
    `_read_marks` selects), and the submission they belong to."""
    comments = {c.name: c.manual_comment or "" for c in comments}
    written, state = {}, []
    for grade in sorted(grades, key=lambda g: g.name):
        state.append([grade.name, grade.auto_score, grade.manual_score, grade.extra_credit])
        if grade.cell_type == "markdown":  # the course's hand-graded written answers
            marked = grade.manual_score is not None or grade.auto_score is not None
            written[grade.name] = {"score": float(grade.score) if marked else None,
                                   "max_score": float(grade.max_score),
                                   "comment": comments.get(grade.name, "")}
    state.append(sorted(comments.items()))
    penalty = float(submission.late_submission_penalty or 0.0)
    state.append(penalty)
    return {
        "written": written,
        "late_penalty": penalty,
        "seconds_late": float(submission.total_seconds_late or 0.0),
        "timestamp": str(submission.timestamp or ""),
        "fingerprint": hashlib.sha256(json.dumps(state, default=str).encode()).hexdigest(),
    }


def student_marks(gradebook: Gradebook, assignment: str, notebook: str, student: str
                  ) -> dict | None:
    """The student's hand-graded answers and lateness, or None without a gradebook entry.

    {"written": {grade_id: {"score": float | None (pending), "max_score": float,
    "comment": str}}, "late_penalty": float, "seconds_late": float, "timestamp": str,
    "fingerprint": str}
    """
    return _read_marks(gradebook, assignment, notebook, student).get(student)


def class_marks(gradebook: Gradebook, assignment: str, notebook: str,
                students) -> dict[str, dict]:
    """`student_marks` for each student that has a gradebook entry, read all at once."""
    wanted = set(students)
    return {student: marks
            for student, marks in _read_marks(gradebook, assignment, notebook).items()
            if student in wanted}


def gradebook_students(gradebook: Gradebook) -> list[str]:
    """Every student nbgrader knows (`nbgrader db student add`, or graded once)."""
    return sorted(student.id for student in gradebook.students)
