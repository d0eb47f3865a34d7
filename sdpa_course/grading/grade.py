"""`sdpa-course grade`: grade a whole class into nbgrader's gradebook.

The pipeline, in order (each step its own module):

1. find the submissions (`grading.submissions`) and skip those already recorded
   (`reports.records`), unless `--force`;
2. per submission, in this process: nbgrader's sanitising pass (`grading.recording.prepare`);
3. in a worker process: the engine grades the sanitised notebook (`grading.workers`, or
   `grading.dask_executor` on a Dask cluster), through `engine_call`;
4. back in this process, the only gradebook writer: nbgrader's autograding pass with the
   engine's scores, the gradebook, the feedback page (`grading.recording.record`), then the
   record;
5. the class report (`reports.class_report`) and the summary or `--json` on stdout.

A student the kit cannot grade is `failed` with a reason: kept out of the gradebook's scores,
listed in the report and in `--json`, and the exit status is 1.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import Gradebook
from traitlets import Float
from traitlets.config import Configurable

from autograder.engine import grade_submission
from sdpa_course.course.directory import Course
from sdpa_course.engine_call import Engine
from sdpa_course.errors import GradingFailed, KitError
from sdpa_course.grading.gradebook import has_submission, shared_gradebook
from sdpa_course.grading.nbgrader_speedups import quick_sqlite_commits, schema_checked_once
from sdpa_course.grading.progress import Progress
from sdpa_course.grading.recording import SubmissionRecorder
from sdpa_course.grading.submissions import find_submissions
from sdpa_course.grading.workers import WorkerPool
from sdpa_course.reports import records
from sdpa_course.reports.class_report import write_class_report


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


def _recorded(course: Course, submissions: list, force: bool) -> tuple[list, dict[str, dict]]:
    """(to grade, already recorded): recorded means for this very submission, nothing missing."""
    known = records.load_records(course.reports_dir)
    todo, done = [], {}
    with Gradebook(course.db_url, course.course_id) as gradebook:
        try:
            gradebook.find_notebook(course.notebook, course.assignment)
        except Exception:
            raise KitError(f"the gradebook has no notebook {course.notebook} in assignment "
                           f"{course.assignment}: run `sdpa-course release` first") from None
        for submission in submissions:
            record = known.get(submission.student)
            if force or record is None or record.get("fingerprint") != submission.fingerprint():
                todo.append(submission)
            elif record["status"] == records.FAILED and record.get("retry"):
                todo.append(submission)  # the kit failed, not the submission: try again
            elif record["status"] == records.FAILED:
                done[submission.student] = record
            elif (has_submission(gradebook, course.assignment, submission.student)
                  and (course.folder("autograded", submission.student)
                       / f"{course.notebook}.ipynb").is_file()
                  and (course.folder("feedback", submission.student)
                       / f"{course.notebook}.html").is_file()):
                done[submission.student] = record
            else:
                todo.append(submission)
    return todo, done


class _GradingRun:
    """One pass over the submissions to grade: the parent's side of the pipeline."""

    def __init__(self, course: Course, recorder, pool, progress, result: ClassResult):
        self.course, self.recorder, self.pool = course, recorder, pool
        self.progress, self.result = progress, result
        self.submissions: dict[str, object] = {}
        self.notes: dict[str, list[str]] = {}

    def grade(self, todo: list) -> None:
        for submission in todo:
            self.submissions[submission.student] = submission
            records.forget_record(self.course.reports_dir, submission.student)
            try:
                path, self.notes[submission.student] = self.recorder.prepare(submission)
            except GradingFailed as err:
                self.finish(records.failed_record(submission.student, str(err),
                                                  submission.fingerprint()))
                continue
            self.pool.submit(submission.student, path)
            for outcome in self.pool.poll(0):
                self.take(outcome)
        while self.pool.busy:
            for outcome in self.pool.poll(0.5):
                self.take(outcome)

    def take(self, outcome) -> None:
        """A worker's outcome, recorded in nbgrader (or as failed); a repeat is ignored."""
        if outcome.key in self.result.records:  # an executor that retried may answer twice
            return
        submission = self.submissions[outcome.key]
        fingerprint = submission.fingerprint()
        notes = self.notes.get(outcome.key, [])
        if outcome.report is None:
            self.finish(records.failed_record(outcome.key, outcome.error, fingerprint,
                                              retry=outcome.retry, warnings=notes))
            return
        try:
            self.recorder.record(submission, outcome.report)
        except GradingFailed as err:
            self.recorder.gradebook.db.rollback()
            self.finish(records.failed_record(outcome.key, str(err), fingerprint,
                                              warnings=notes))
        except Exception as err:
            self.recorder.gradebook.db.rollback()
            self.finish(records.failed_record(
                outcome.key, f"recording in nbgrader failed: {type(err).__name__}: {err}",
                fingerprint, retry=True, warnings=notes))
        else:
            self.finish(records.graded_record(outcome.key, outcome.report, fingerprint, notes))

    def finish(self, record: dict) -> None:
        student = record["student"]
        if record["status"] == records.FAILED:
            note = self.recorder.forget(student)
            record["warnings"] = [*record["warnings"], f"gradebook: {note}"]
        records.save_record(self.course.reports_dir, record)  # last: the student is done
        self.result.records[student] = record
        self.result.graded_now.append(student)
        self.progress.advance()


def grade_course(course_dir: Path, *, workers: int | None = None, force: bool = False,
                 progress_stream=None, scheduler: str | None = None,
                 engine: Engine = grade_submission) -> ClassResult:
    """Grade every submission of the course; the plain function behind `sdpa-course grade`.

    The engine runs in `workers` local processes, or on the Dask cluster whose scheduler is
    at `scheduler` (`sdpa_course.grading.dask_executor`); the rest of the pipeline is the same.
    `engine` grades one notebook file: the kit's own unless a test passes a stand-in (local
    processes only: Dask workers always run the kit's engine, as installed on them).
    """
    if scheduler and engine is not grade_submission:
        raise ValueError("a stand-in engine grades in local processes only, not on Dask workers")
    course = Course.open(course_dir)
    submitted = course.root / course.coursedir.submitted_directory
    submissions = find_submissions(submitted, course.assignment, course.notebook)
    if not submissions:
        raise KitError(f"no submissions: nothing under {submitted}/<student>/{course.assignment}/")
    result = ClassResult(course.assignment, {})
    settings = ClassGrading(config=course.config)
    with warnings.catch_warnings():
        _quiet_known_warnings()
        todo, result.records = _recorded(course, submissions, force)
        if todo:
            if scheduler:
                # deferred: Dask is an optional extra, needed only with --scheduler
                from sdpa_course.grading.dask_executor import DaskExecutor

                executor = DaskExecutor(scheduler)
            else:
                executor = WorkerPool(min(workers or os.cpu_count() or 1, len(todo)),
                                      deadline=settings.submission_deadline, engine=engine)
            # workers first: they start before the gradebook connection exists
            with executor as pool, \
                    shared_gradebook(course.db_url, course.course_id) as gradebook, \
                    quick_sqlite_commits(gradebook), schema_checked_once(), \
                    Progress(len(todo), stream=progress_stream) as progress:
                recorder = SubmissionRecorder(course, gradebook)
                _GradingRun(course, recorder, pool, progress, result).grade(todo)

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
    course_dir: Path, *, workers: int | None = None, force: bool = False, as_json: bool = False,
    scheduler: str | None = None, engine: Engine = grade_submission,
) -> int:
    """`sdpa-course grade`: exit status 0 when every student is graded, 1 when any failed."""
    result = grade_course(Path(course_dir), workers=workers, force=force, scheduler=scheduler,
                          engine=engine)
    if as_json:
        json.dump(result.as_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_summary(result, sys.stdout)
    return 1 if result.failed else 0
