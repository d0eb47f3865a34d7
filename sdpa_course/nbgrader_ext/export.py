"""`KitCsvExport`: `nbgrader export` that lists every student, the failed ones included.

nbgrader's own CSV export knows only the gradebook, and a student the kit could not grade
has no score there (keeping a 0 would be a lie): stock `nbgrader export` either gives them a
silent 0.0 or leaves them out. This plugin (the course's `ExportApp.plugin_class`) writes the
same columns as nbgrader's, in the same order, plus `status` and `reason`:

- a graded student: nbgrader's own numbers (hand marks and late penalties included), and
  as the reason what to check by hand (a submission time the kit could not read) and each
  exercise whose code hung or crashed (`ex2: timeout`: it may have cost nothing) and those
  left as released (`not answered: ex3`);
- a student the kit recorded as failed: empty scores, `failed` and the reason;
- a student nbgrader knows who submitted nothing: empty scores, `missing`.

It writes with the csv module (nbgrader's joins with commas unquoted) and no cell of text can
start a formula (`reports.safe_text.for_spreadsheet`). Headless, like nbgrader's export.
"""

from __future__ import annotations

import csv
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import CsvExportPlugin

from sdpa_course.assignment import REPORTS_DIRECTORY
from sdpa_course.reports.records import (
    FAILED,
    GRADED,
    load_records,
    not_answered,
    stopped_runs,
    to_check,
)
from sdpa_course.reports.safe_text import for_spreadsheet

COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name",
           "email", "raw_score", "late_submission_penalty", "score", "max_score", "status",
           "reason"]


def _number(value) -> str:
    return "" if value is None else f"{float(value):g}"


class KitCsvExport(CsvExportPlugin):
    """nbgrader's CSV export, with failed and missing students listed, never a silent 0."""

    def _course_root(self) -> Path:
        coursedir = getattr(self.parent, "coursedir", None)
        return Path(coursedir.root if coursedir is not None else ".")

    def rows(self, gradebook: Gradebook) -> list[dict]:
        students = {s.id: s for s in gradebook.students}
        rows = []
        for assignment in gradebook.assignments:
            if self.assignment and assignment.name not in map(str, self.assignment):
                continue
            kit = load_records(self._course_root() / REPORTS_DIRECTORY / assignment.name)
            for student_id in sorted(set(students) | set(kit)):
                if self.student and student_id not in map(str, self.student):
                    continue
                student = students.get(student_id)
                row = {"assignment": assignment.name, "duedate": assignment.duedate or "",
                       "student_id": student_id,
                       "last_name": getattr(student, "last_name", "") or "",
                       "first_name": getattr(student, "first_name", "") or "",
                       "email": getattr(student, "email", "") or "",
                       "max_score": _number(assignment.max_score), "timestamp": "",
                       "raw_score": "", "late_submission_penalty": "", "score": "",
                       "status": "missing", "reason": "no submission"}
                record = kit.get(student_id)
                if record is not None and record.get("status") == FAILED:
                    row.update(status=FAILED, reason=record.get("error") or "could not be graded")
                else:
                    try:
                        submission = gradebook.find_submission(assignment.name, student_id)
                    except MissingEntry:
                        pass
                    else:
                        penalty = submission.late_submission_penalty or 0.0
                        row.update(
                            status=GRADED, timestamp=submission.timestamp or "",
                            reason="; ".join(
                                [f"CHECK BY HAND: {item}" for item in to_check(record or {})]
                                + [f"did not run to the end: {item}"
                                   for item in stopped_runs(record or {})]
                                + [f"not answered: {', '.join(blank)}"
                                   for blank in [not_answered(record or {})] if blank]),
                            raw_score=_number(submission.score),
                            late_submission_penalty=_number(penalty),
                            score=_number(max(0.0, submission.score - penalty)))
                rows.append(row)
        return rows

    def export(self, gradebook: Gradebook) -> None:
        dest = self.to or "grades.csv"
        self.log.info("Exporting grades to %s (every student: graded, failed, missing)", dest)
        with open(dest, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(COLUMNS)
            for row in self.rows(gradebook):
                writer.writerow([for_spreadsheet(row[key]) for key in COLUMNS])
