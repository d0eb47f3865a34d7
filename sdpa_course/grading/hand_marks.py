"""What the gradebook holds beside the engine's scores: hand marks, comments, lateness.

Read once per student when the class report and the exports are written, and to tell which
feedback pages are stale: `marks_fingerprint` changes whenever a grader gives or changes a
hand mark or a comment in formgrader (or the late penalty changes), so a plain rerun of
`sdpa-course grade` (or `sdpa-course feedback`) regenerates exactly those pages.
"""

from __future__ import annotations

import hashlib
import json

from nbgrader.api import (
    Assignment,
    Comment,
    Grade,
    Gradebook,
    Notebook,
    SubmittedAssignment,
    SubmittedNotebook,
)
from sqlalchemy.orm import joinedload, selectinload


def _submitted_notebooks(gradebook: Gradebook, assignment: str, notebook: str,
                         student: str | None = None) -> list[SubmittedNotebook]:
    """The submitted notebooks (all students', or one's) with everything `notebook_marks` reads
    loaded in four queries, not twenty per student (nbgrader loads each grade's cell, each
    comment's cell and the deferred scores one at a time)."""
    query = (gradebook.db.query(SubmittedNotebook)
             .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
             .join(SubmittedAssignment,
                   SubmittedAssignment.id == SubmittedNotebook.assignment_id)
             .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
             .filter(Notebook.name == notebook, Assignment.name == assignment)
             .options(joinedload(SubmittedNotebook.assignment)
                      .joinedload(SubmittedAssignment.assignment),
                      joinedload(SubmittedNotebook.assignment)
                      .undefer(SubmittedAssignment.late_submission_penalty),
                      selectinload(SubmittedNotebook.grades).joinedload(Grade.cell),
                      selectinload(SubmittedNotebook.grades).undefer(Grade.max_score),
                      selectinload(SubmittedNotebook.comments).joinedload(Comment.cell)))
    if student is not None:
        query = query.filter(SubmittedAssignment.student_id == student)
    return query.all()


def notebook_marks(nb: SubmittedNotebook) -> dict:
    """The marks of one submitted notebook, however it was read (`student_marks`)."""
    submission = nb.assignment
    comments = {c.name: c.manual_comment or "" for c in nb.comments}
    written, state = {}, []
    for grade in sorted(nb.grades, key=lambda g: g.name):
        state.append([grade.name, grade.auto_score, grade.manual_score, grade.extra_credit])
        if grade.cell.cell_type == "markdown":  # the course's hand-graded written answers
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
    found = _submitted_notebooks(gradebook, assignment, notebook, student)
    return notebook_marks(found[0]) if found else None


def class_marks(gradebook: Gradebook, assignment: str, notebook: str,
                students) -> dict[str, dict]:
    """`student_marks` for each student that has a gradebook entry, read all at once."""
    wanted = set(students)
    return {nb.assignment.student_id: notebook_marks(nb)
            for nb in _submitted_notebooks(gradebook, assignment, notebook)
            if nb.assignment.student_id in wanted}


def gradebook_students(gradebook: Gradebook) -> list[str]:
    """Every student nbgrader knows (`nbgrader db student add`, or graded once)."""
    return sorted(student.id for student in gradebook.students)
