"""What the gradebook holds beside the engine's scores: hand marks, comments, lateness.

Read once per student when the class report and the exports are written, and to tell which
feedback pages are stale: `marks_fingerprint` changes whenever a grader gives or changes a
hand mark or a comment in formgrader (or the late penalty changes), so a plain rerun of
`sdpa-course grade` (or `sdpa-course feedback`) regenerates exactly those pages.
"""

from __future__ import annotations

import hashlib
import json

from nbgrader.api import Gradebook, MissingEntry


def student_marks(gradebook: Gradebook, assignment: str, notebook: str, student: str
                  ) -> dict | None:
    """The student's hand-graded answers and lateness, or None without a gradebook entry.

    {"written": {grade_id: {"score": float | None (pending), "max_score": float,
    "comment": str}}, "late_penalty": float, "seconds_late": float, "timestamp": str,
    "fingerprint": str}
    """
    try:
        submission = gradebook.find_submission(assignment, student)
        nb = gradebook.find_submission_notebook(notebook, assignment, student)
    except MissingEntry:
        return None
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


def class_marks(gradebook: Gradebook, assignment: str, notebook: str,
                students) -> dict[str, dict]:
    """`student_marks` for each student that has a gradebook entry."""
    marks = {}
    for student in students:
        found = student_marks(gradebook, assignment, notebook, student)
        if found is not None:
            marks[student] = found
    return marks


def gradebook_students(gradebook: Gradebook) -> list[str]:
    """Every student nbgrader knows (`nbgrader db student add`, or graded once)."""
    return sorted(student.id for student in gradebook.students)
