"""`sdpa-course grade`: grade a whole class into nbgrader's gradebook.

The pipeline, in order (each step its own module):

1. find the submissions (`submissions`) and skip those already recorded (`records`),
   unless `--force`;
2. per submission, in this process: nbgrader's sanitising pass (`recording.prepare`);
3. in a worker process: the engine grades the sanitised notebook (`workers`);
4. back in this process, the only gradebook writer: nbgrader's autograding pass with the
   engine's scores, the gradebook, the feedback (`recording.record`), then the record;
5. the class report (`class_report`) and the summary or `--json` on stdout.

A student the kit cannot grade is `failed` with a reason: kept out of the gradebook's scores,
listed in the report and in `--json`, and the exit status is 1.
"""

from __future__ import annotations

import json
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from traitlets import Float
from traitlets.config import Configurable

from sdpa_course import records
from sdpa_course.coursedir import Course
from sdpa_course.engine import GradingFailed


class ClassGrading(Configurable):
    """Settings of `sdpa-course grade` (set them in the course's nbgrader_config.py)."""

    submission_deadline = Float(
        300.0,
        help="Seconds a worker may spend on one submission before it is stopped and the "
             "submission reported as failed (the engine's own limits apply per call).",
    ).tag(config=True)


@dataclass
class ClassResult:
    """What a grading run ends with: every student's record, and where the report is."""

    assignment: str
    records: dict[str, dict]
    graded_now: list[str] = field(default_factory=list)
    reports: dict[str, Path] = field(default_factory=dict)

    @property
    def failed(self) -> list[str]:
        return [s for s, r in self.records.items() if r["status"] == records.FAILED]

    def as_json(self) -> dict:
        """CONTRACT section 4."""
        keys = ("status", "score", "max_score", "exercises", "error")
        return {
            "assignment": self.assignment,
            "students": {
                student: {key: record.get(key) for key in keys}
                | {"warnings": record.get("warnings", [])}
                for student, record in sorted(self.records.items())
            },
        }


def _quiet_known_warnings() -> None:
    """Noise nbgrader itself produces on every submission, stock autograde included."""
    warnings.filterwarnings("ignore", message=".*not in session.*")  # nbgrader + SQLAlchemy 2
    warnings.filterwarnings("ignore", message=".*missing an id field.*")  # nbformat 4.4 files


def _engine_spec(course: Course) -> str:
    from sdpa_course.nbgrader_ext.autograde import EngineGrades

    return EngineGrades(config=course.config).engine


def _is_done(record: dict | None, submission, recorder) -> bool:
    """Recorded, for this very submission, and nothing of it missing since."""
    if record is None or record.get("fingerprint") != submission.fingerprint():
        return False
    if record["status"] == records.FAILED:
        return not record.get("retry")
    from sdpa_course.gradebook import has_submission

    feedback = recorder.course.folder("feedback", submission.student)
    return (
        has_submission(recorder.gradebook, recorder.course.assignment, submission.student)
        and recorder.autograded_notebook(submission.student).is_file()
        and (feedback / f"{recorder.course.notebook}.html").is_file()
    )


def grade_course(course_dir: Path, *, workers: int | None = None, force: bool = False,
                 progress_stream=None) -> ClassResult:
    """Grade every submission of the course; the plain function behind `sdpa-course grade`."""
    from sdpa_course.cli import KitError
    from sdpa_course.gradebook import shared_gradebook
    from sdpa_course.progress import Progress
    from sdpa_course.recording import SubmissionRecorder
    from sdpa_course.submissions import find_submissions
    from sdpa_course.workers import WorkerPool

    course = Course.open(course_dir)
    submitted = course.root / course.coursedir.submitted_directory
    submissions = find_submissions(submitted, course.assignment, course.notebook)
    if not submissions:
        raise KitError(f"no submissions: nothing under {submitted}/<student>/{course.assignment}/")
    known = records.load_records(course.reports_dir)
    result = ClassResult(course.assignment, {})
    settings = ClassGrading(config=course.config)

    with warnings.catch_warnings(), shared_gradebook(course.db_url, course.course_id) as gradebook:
        _quiet_known_warnings()
        try:
            gradebook.find_notebook(course.notebook, course.assignment)
        except Exception:
            raise KitError(f"the gradebook has no notebook {course.notebook} in assignment "
                           f"{course.assignment}: run `sdpa-course release` first") from None
        recorder = SubmissionRecorder(course, gradebook)
        todo = []
        for submission in submissions:
            record = known.get(submission.student)
            if not force and _is_done(record, submission, recorder):
                result.records[submission.student] = record
            else:
                todo.append(submission)
        by_student = {s.student: s for s in todo}
        notes_by_student: dict[str, list[str]] = {}

        def finish(record: dict) -> None:
            student = record["student"]
            if record["status"] == records.FAILED:
                note = recorder.forget(student)
                record["warnings"] = [*record["warnings"], f"gradebook: {note}"]
            records.save_record(course.reports_dir, record)
            result.records[student] = record
            result.graded_now.append(student)
            progress.advance()

        def take(outcome) -> None:
            submission = by_student[outcome.key]
            fingerprint = submission.fingerprint()
            notes = notes_by_student.get(outcome.key, [])
            if outcome.report is None:
                finish(records.failed_record(outcome.key, outcome.error, fingerprint,
                                             retry=outcome.retry, warnings=notes))
                return
            try:
                recorder.record(submission, outcome.report)
            except GradingFailed as err:
                gradebook.db.rollback()
                finish(records.failed_record(outcome.key, str(err), fingerprint, warnings=notes))
            except Exception as err:
                gradebook.db.rollback()
                finish(records.failed_record(
                    outcome.key, f"recording in nbgrader failed: {type(err).__name__}: {err}",
                    fingerprint, retry=True, warnings=notes))
            else:
                finish(records.graded_record(outcome.key, outcome.report, fingerprint, notes))

        with Progress(len(todo), stream=progress_stream) as progress, \
                WorkerPool(workers, _engine_spec(course),
                           deadline=settings.submission_deadline) as pool:
            for submission in todo:
                records.forget_record(course.reports_dir, submission.student)
                try:
                    path, notes_by_student[submission.student] = recorder.prepare(submission)
                except GradingFailed as err:
                    finish(records.failed_record(submission.student, str(err),
                                                 submission.fingerprint()))
                    continue
                pool.submit(submission.student, path)
                for outcome in pool.poll(0):
                    take(outcome)
            while pool.busy:
                for outcome in pool.poll(0.5):
                    take(outcome)

    from sdpa_course.class_report import write_class_report

    result.records = dict(sorted(result.records.items()))
    result.reports = write_class_report(result.records, course.reports_dir, course.assignment)
    return result


def _print_summary(result: ClassResult, stream) -> None:
    width = max([len(s) for s in result.records] + [7])
    print(f"{'student':<{width}}  {'status':<7}  {'score':>11}  notes", file=stream)
    for student, record in result.records.items():
        if record["status"] == records.GRADED:
            score = f"{record['score']:g} / {record['max_score']:g}"
            notes = ", ".join(sorted({code for ex in record["exercises"].values()
                                      for code in ex.get("diagnoses") or []}))
        else:
            score, notes = "-", record["error"]
        print(f"{student:<{width}}  {record['status']:<7}  {score:>11}  {notes}", file=stream)
    graded = len(result.records) - len(result.failed)
    print(f"\n{graded} graded, {len(result.failed)} failed "
          f"({len(result.graded_now)} graded in this run, the rest already recorded).",
          file=stream)
    for name, path in result.reports.items():
        print(f"{name}: {path}", file=stream)


def grade_class(
    course_dir: Path, *, workers: int | None = None, force: bool = False, as_json: bool = False
) -> int:
    """`sdpa-course grade`: exit status 0 when every student is graded, 1 when any failed."""
    result = grade_course(Path(course_dir), workers=workers, force=force)
    if as_json:
        json.dump(result.as_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_summary(result, sys.stdout)
    return 1 if result.failed else 0
