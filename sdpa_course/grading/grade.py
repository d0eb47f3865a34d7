"""`sdpa-course grade`: grade a whole class into nbgrader's gradebook.

The pipeline, in order (each step its own module):

1. find the submissions (`grading.submissions`) and skip those already recorded
   (`reports.records`), unless `--force`; check that the release carries this course's numbers
   key (`grading.variants`);
2. per submission, in this process: nbgrader's sanitising pass (`grading.recording.prepare`);
3. in a worker process: the engine grades the sanitised notebook as the student's variant
   (from the course seed and the folder's student id), in `grading.workers`, or
   `grading.dask_executor` on a Dask cluster, through `engine_call`;
4. back in this process, the only gradebook writer: nbgrader's autograding pass with the
   engine's scores, the gradebook, the feedback page (`grading.recording.record`), then the
   record;
5. the class report (`reports.class_report`) and the summary or `--json` on stdout.

A student the kit cannot grade is `failed` with a reason: kept out of the gradebook's scores,
listed in the report and in `--json`, and the exit status is 1.

Student code runs only in the sandbox's isolation: where this machine refuses it, `grade`
stops before grading anyone and says what to do (`KitError`). `--unsafe-no-isolation`
(`isolation="unsafe-none"`) grades anyway; the class result, the summary, the class report
and every student's report then say so.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import Gradebook
from traitlets import Float
from traitlets.config import Configurable

from autograder.engine import grade_submission
from autograder.runner import collect
from autograder.sandbox import Limits, SandboxPool
from sdpa_course.course.directory import Course
from sdpa_course.engine_call import ISOLATED, UNSAFE, Engine, require_isolation, sandbox_pool
from sdpa_course.errors import GradingFailed, KitError
from sdpa_course.grading.feedback import FeedbackWriter, refresh_feedback
from sdpa_course.grading.gradebook import has_submission, shared_gradebook
from sdpa_course.grading.hand_marks import class_marks, gradebook_students, student_marks
from sdpa_course.grading.nbgrader_speedups import quick_sqlite_commits, schema_checked_once
from sdpa_course.grading.progress import Progress
from sdpa_course.grading.recording import SubmissionRecorder
from sdpa_course.grading.run_lock import course_run_lock
from sdpa_course.grading.submissions import find_submissions
from sdpa_course.grading.variants import release_mismatch
from sdpa_course.grading.workers import WorkerPool
from sdpa_course.nbgrader_ext.variants import CourseVariants
from sdpa_course.reports import records
from sdpa_course.reports.class_report import write_class_report
from sdpa_course.reports.safe_text import for_terminal, id_for_terminal


class ClassGrading(Configurable):
    """Settings of `sdpa-course grade` (set them in the course's nbgrader_config.py)."""

    submission_deadline = Float(
        300.0,
        help="Seconds a worker may spend on one submission before it is stopped and the "
             "submission reported as failed: a backstop for the kit itself, above the "
             "sandbox's own budget per submission (Limits.submission_seconds), after which "
             "a submission is graded with its time-outs.",
    ).tag(config=True)


def _deadline(settings: ClassGrading) -> float:
    """The configured deadline, refused if it would cut the sandbox's own budget short."""
    budget = Limits().submission_seconds
    if settings.submission_deadline <= budget + DEADLINE_MARGIN:
        raise KitError(f"ClassGrading.submission_deadline must stay above the sandbox's budget "
                       f"per submission ({budget:g} s) plus {DEADLINE_MARGIN:g} s for the rest "
                       f"of its grading, not {settings.submission_deadline:g}")
    return settings.submission_deadline


DEADLINE_MARGIN = 60.0  # the suites, diagnoses and recording around a submission's budget
UNSAFE_NOTE = ("UNSAFE: graded with --unsafe-no-isolation: student code ran without the "
               "sandbox's isolation, as the grader, able to read and change its files and "
               "reach the network")


@dataclass
class ClassResult:
    """What a grading run ends with: every student's record, and where the report is."""

    assignment: str
    records: dict[str, dict]
    graded_now: list[str] = field(default_factory=list)  # finished in this run, failed too
    reports: dict[str, Path] = field(default_factory=dict)
    refreshed: list[str] = field(default_factory=list)  # feedback regenerated for hand marks
    missing: list[str] = field(default_factory=list)  # in the gradebook, nothing submitted
    marks: dict[str, dict] = field(default_factory=dict)  # the gradebook's hand marks
    isolation: str = ISOLATED  # "unsafe-none" after --unsafe-no-isolation
    note: str = ""  # heads the class report: how this run graded, when an instructor must know

    @property
    def failed(self) -> list[str]:
        return [s for s, r in self.records.items() if r["status"] == records.FAILED]

    def as_json(self) -> dict:
        """CONTRACT section 4."""
        keys = ("status", "score", "max_score", "extra_credit", "exercises", "variant", "error")
        return {
            "assignment": self.assignment,
            "isolation": self.isolation,
            "students": {
                student: {key: record.get(key) for key in keys}
                | {"warnings": record.get("warnings", []),
                   "check_by_hand": records.to_check(record),
                   "hand_graded": self.marks.get(student, {}).get("written", {})}
                for student, record in sorted(self.records.items())
            },
            "missing": list(self.missing),
        }


def _quiet_known_warnings() -> None:
    """Noise nbgrader itself produces on every submission, stock autograde included."""
    warnings.filterwarnings("ignore", message=".*not in session.*")  # nbgrader + SQLAlchemy 2
    warnings.filterwarnings("ignore", message=".*missing an id field.*")  # nbformat 4.4 files


def _recorded(course: Course, gradebook: Gradebook, submissions: list, force: bool,
              variants: CourseVariants) -> tuple[list, dict[str, dict]]:
    """(to grade, already recorded): recorded means for this very submission, nothing missing.

    Refuses (KitError) a course whose release does not carry the numbers key of its seed."""
    known = records.load_records(course.reports_dir)
    todo, done = [], {}
    try:
        gradebook.find_notebook(course.notebook, course.assignment)
    except Exception:
        gradebook.db.rollback()
        raise KitError(f"the gradebook has no notebook {course.notebook} in assignment "
                       f"{course.assignment}: run `sdpa-course release` first") from None
    mismatch = release_mismatch(gradebook, course, variants)
    if mismatch:
        raise KitError(mismatch)
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

    def __init__(self, course: Course, recorder, pool, progress, result: ClassResult,
                 variants: CourseVariants):
        self.course, self.recorder, self.pool = course, recorder, pool
        self.variants = variants
        self.progress, self.result = progress, result
        self.submissions: dict[str, object] = {}
        self.notes: dict[str, list[str]] = {}
        # each submission's fingerprint as it was before it was read for grading: a student
        # who submits again while the run grades the old notebook gets a record that does not
        # match the new one, so the next run grades it (taken later, it would match and hide it)
        self.fingerprints: dict[str, str] = {}

    def grade(self, todo: list) -> None:
        for submission in todo:
            self.submissions[submission.student] = submission
            fingerprint = self.fingerprints[submission.student] = submission.fingerprint()
            records.forget_record(self.course.reports_dir, submission.student)
            try:
                path, self.notes[submission.student] = self.recorder.prepare(submission)
            except GradingFailed as err:
                self.finish(records.failed_record(submission.student, str(err), fingerprint,
                                                  retry=err.retry),
                            timed=False)
                continue
            except Exception as err:  # the kit's fault on this notebook: the class goes on
                self.recorder.gradebook.db.rollback()
                self.finish(records.failed_record(
                    submission.student, f"preparing the submission for grading failed: "
                    f"{type(err).__name__}: {err}", fingerprint, retry=True), timed=False)
                continue
            # the folder's student id, never the one the notebook claims
            self.pool.submit(submission.student, path,
                             self.variants.variant(submission.student, self.course.assignment))
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
        fingerprint = self.fingerprints[outcome.key]
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
            self.finish(records.graded_record(outcome.key, outcome.report, fingerprint, notes,
                                              self.recorder.to_check.pop(outcome.key, []),
                                              folded=self.recorder.folded.pop(outcome.key,
                                                                              None)))

    def finish(self, record: dict, *, timed: bool = True) -> None:
        student = record["student"]
        if not record.get("variant"):  # a failed student: still say whose numbers were due
            record["variant"] = self.variants.variant(student, self.course.assignment).public()
        if record["status"] == records.FAILED:
            note = self.recorder.forget(student)
            record["warnings"] = [*record["warnings"], f"gradebook: {note}"]
        else:  # the hand marks its feedback shows (a later change regenerates it)
            marks = student_marks(self.recorder.gradebook, self.course.assignment,
                                  self.course.notebook, student)
            record["feedback_marks"] = marks["fingerprint"] if marks else None
        records.save_record(self.course.reports_dir, record)  # last: the student is done
        self.result.records[student] = record
        self.result.graded_now.append(student)
        self.progress.advance(timed=timed)


def grade_course(course_dir: Path, *, workers: int | None = None, force: bool = False,
                 progress_stream=None, scheduler: str | None = None,
                 engine: Engine = grade_submission, isolation: str = ISOLATED,
                 sandbox: SandboxPool | None = None) -> ClassResult:
    """Grade every submission of the course; the plain function behind `sdpa-course grade`.

    The engine runs in `workers` local processes, or on the Dask cluster whose scheduler is
    at `scheduler` (`sdpa_course.grading.dask_executor`); the rest of the pipeline is the same.
    `engine` grades one notebook file: the kit's own unless a test passes a stand-in (local
    processes only: Dask workers always run the kit's engine, as installed on them).
    `isolation` is the sandbox's: KitError before anyone is graded where this machine (or a
    Dask worker) refuses "namespaces"; "unsafe-none" is `--unsafe-no-isolation`.
    `sandbox`, a pool of that isolation the caller started early (its zygote boots while
    nbgrader is imported): the local workers fork from its zygote, which is closed once
    they are done; without it one is started here.
    """
    if scheduler and engine is not grade_submission:
        raise ValueError("a stand-in engine grades in local processes only, not on Dask workers")
    started = time.monotonic()  # the progress line's clock: the whole run, start-up included
    if isolation not in (ISOLATED, UNSAFE):
        raise ValueError(f"isolation must be {ISOLATED!r} or {UNSAFE!r}, not {isolation!r}")
    if sandbox is not None and sandbox.isolation != isolation:
        raise ValueError(f"the sandbox pool's isolation is {sandbox.isolation!r}, not "
                         f"{isolation!r}")
    course = Course.open(course_dir)
    with course_run_lock(course.reports_dir, "sdpa-course grade"):
        return _grade_course(course, workers=workers, force=force, started=started,
                             progress_stream=progress_stream, scheduler=scheduler,
                             engine=engine, isolation=isolation, sandbox=sandbox)


def _grade_course(course: Course, *, workers, force, started, progress_stream, scheduler,
                  engine, isolation, sandbox) -> ClassResult:
    """`grade_course` once the course's run lock is held."""
    submitted = course.root / course.coursedir.submitted_directory
    submissions = find_submissions(submitted, course.assignment, course.notebook)
    if not submissions:
        raise KitError(f"no submissions: nothing under {submitted}/<student>/{course.assignment}/")
    result = ClassResult(course.assignment, {}, isolation=isolation)
    settings = ClassGrading(config=course.config)
    variants = CourseVariants(config=course.config)
    variants.numbers_key()  # a malformed seed stops the run here, before anything is written
    local = None  # the kit's sandbox, started while the gradebook is read: refused before
    if not scheduler and engine is grade_submission:  # any worker starts, where unavailable
        deadline = _deadline(settings)
        local = sandbox if sandbox is not None else sandbox_pool(isolation)
        local.start(wait=False)
        collect()  # the hidden suites load here once, for every grading process forked
    else:
        deadline = settings.submission_deadline
    with warnings.catch_warnings():
        _quiet_known_warnings()
        # one gradebook connection for the whole run: who is recorded, grading, the report
        with shared_gradebook(course.db_url, course.course_id) as gradebook:
            recorder = None
            try:
                todo, result.records = _recorded(course, gradebook, submissions, force,
                                                 variants)
                if todo and local is not None:
                    require_isolation(local)
                if todo:
                    recorder = _grade_todo(course, gradebook, todo, result, variants,
                                           workers=workers,
                                           deadline=deadline, engine=engine,
                                           isolation=isolation, scheduler=scheduler,
                                           sandbox=local, progress=(progress_stream, started))
            finally:
                if local is not None:
                    local.close()  # every worker is gone: so is the zygote
            result.records = dict(sorted(result.records.items()))
            after_grading(course, result, gradebook=gradebook,
                          feedback=recorder.feedback if recorder else None)
    return result


def _grade_todo(course: Course, gradebook: Gradebook, todo: list, result: ClassResult,
                variants: CourseVariants, *,
                workers, deadline, engine, isolation, scheduler, sandbox, progress
                ) -> SubmissionRecorder:
    """Grade `todo` into the gradebook and `result`; the recorder that did it."""
    if scheduler:
        # deferred: Dask is an optional extra, needed only with --scheduler
        from sdpa_course.grading.dask_executor import DaskExecutor

        executor = DaskExecutor(scheduler, isolation=isolation)
    else:
        executor = WorkerPool(min(workers or os.cpu_count() or 1, len(todo)),
                              deadline=deadline, engine=engine, isolation=isolation,
                              sandbox=sandbox)
    stream, started = progress
    with executor as pool, quick_sqlite_commits(gradebook), schema_checked_once(), \
            Progress(len(todo), stream=stream, started=started) as bar:
        recorder = SubmissionRecorder(course, gradebook)
        _GradingRun(course, recorder, pool, bar, result, variants).grade(todo)
    return recorder


def after_grading(course: Course, result: ClassResult, *, force_feedback: bool = False,
                  gradebook: Gradebook | None = None, feedback: FeedbackWriter | None = None
                  ) -> None:
    """Feedback brought up to date with the gradebook's hand marks, then the report.

    A grader who marked `ex2_explain` in formgrader changed the gradebook, not the page: every
    graded student whose marks (or comments, or late penalty) differ from those their page was
    written with gets a new page (all of them with `force_feedback`). `gradebook` is the run's
    shared one (`shared_gradebook`), opened here if not given; `feedback` the run's writer.
    """
    if gradebook is None:
        with shared_gradebook(course.db_url, course.course_id) as gradebook:
            after_grading(course, result, force_feedback=force_feedback, gradebook=gradebook,
                          feedback=feedback)
        return
    unsafe = [s for s, r in result.records.items() if r.get("isolation") == UNSAFE]
    result.note = f"{UNSAFE_NOTE} (students: {', '.join(unsafe)})" if unsafe else ""
    graded = [s for s, r in result.records.items() if r["status"] == records.GRADED]
    result.marks = class_marks(gradebook, course.assignment, course.notebook, graded)
    result.refreshed = refresh_feedback(course, result.records, result.marks,
                                        force=force_feedback, writer=feedback)
    result.missing = [s for s in gradebook_students(gradebook) if s not in result.records]
    result.reports = write_class_report(result.records, course.reports_dir, course.assignment,
                                        marks=result.marks, missing=result.missing,
                                        notebook=course.notebook, note=result.note)


def _print_summary(result: ClassResult, stream) -> None:
    """The table of results; every student-controlled string escaped for the terminal."""
    if result.isolation == UNSAFE:
        print(UNSAFE_NOTE + "\n", file=stream)
    ids = {student: id_for_terminal(student) for student in result.records}
    width = max([len(s) for s in ids.values()] + [7])
    # extra credit in a column of its own: on top of the score, never in its maximum
    print(f"{'student':<{width}}  {'status':<7}  {'score':>11}  {'extra':>5}  notes",
          file=stream)
    for student, record in result.records.items():
        extra = "-"
        if record["status"] == records.GRADED:
            score = f"{record['score']:g} / {record['max_score']:g}"
            extra = f"+{record.get('extra_credit') or 0:g}" if record.get("extra_credit") else ""
            notes = ", ".join(sorted({f"{ex}: {code}" for ex, result_ in
                                      record["exercises"].items()
                                      for code in result_.get("diagnoses") or []}))
            written = result.marks.get(student, {}).get("written", {})
            pending = [name for name, mark in written.items() if mark["score"] is None]
            if pending:
                notes += ("; " if notes else "") + f"pending hand grading: {', '.join(pending)}"
            for item in records.to_check(record):
                notes += ("; " if notes else "") + f"CHECK BY HAND: {item}"
            if record.get("stopped_cells"):  # those of an exercise are its diagnoses above
                notes += ("; " if notes else "") + ("did not run to the end: "
                                                    + ", ".join(record["stopped_cells"]))
            if records.folded_note(record.get("folded_cells")):
                notes += ("; " if notes else "") + records.folded_note(record["folded_cells"])
        else:
            score, notes = "-", record["error"] or ""
        print(f"{ids[student]:<{width}}  {record['status']:<7}  {score:>11}  {extra:>5}  "
              f"{for_terminal(notes)}", file=stream)
    for student in result.missing:
        print(f"{id_for_terminal(student):<{width}}  {'missing':<7}  {'-':>11}  {'-':>5}  "
              "in the gradebook, nothing submitted", file=stream)
    now = [result.records[s] for s in result.graded_now if s in result.records]
    graded_now = sum(1 for r in now if r["status"] == records.GRADED)
    failed_now = len(now) - graded_now
    graded = len(result.records) - len(result.failed)
    earlier = len(result.records) - len(now)
    print(f"\n{graded} graded, {len(result.failed)} failed"
          + (f", {len(result.missing)} missing" if result.missing else "")
          + f". This run: {graded_now} graded, {failed_now} failed; {earlier} already recorded.",
          file=stream)
    to_check = [s for s, r in result.records.items() if records.to_check(r)]
    if to_check:
        print(f"To check by hand ({len(to_check)}, see their notes): "
              f"{', '.join(id_for_terminal(s) for s in to_check)}", file=stream)
    if result.refreshed:
        print(f"Feedback regenerated for new hand marks: "
              f"{', '.join(id_for_terminal(s) for s in result.refreshed)}", file=stream)
    for name, path in result.reports.items():
        print(f"{name}: {for_terminal(str(path))}", file=stream)


def grade_class(
    course_dir: Path, *, workers: int | None = None, force: bool = False, as_json: bool = False,
    scheduler: str | None = None, engine: Engine = grade_submission,
    isolation: str = ISOLATED, sandbox: SandboxPool | None = None,
) -> int:
    """`sdpa-course grade`: exit status 0 when every student is graded, 1 when any failed."""
    result = grade_course(Path(course_dir), workers=workers, force=force, scheduler=scheduler,
                          engine=engine, isolation=isolation, sandbox=sandbox)
    if as_json:
        json.dump(result.as_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_summary(result, sys.stdout)
    return 1 if result.failed else 0


def feedback_class(course_dir: Path, *, force: bool = False) -> int:
    """`sdpa-course feedback`: bring every graded student's feedback page up to date with the
    gradebook's hand marks and comments (all pages with `force`), and rewrite the report.

    Grades nothing: students not yet graded need `sdpa-course grade`. Exit status 0.
    """
    course = Course.open(Path(course_dir))
    with course_run_lock(course.reports_dir, "sdpa-course feedback"):
        result = ClassResult(course.assignment, dict(sorted(
            records.load_records(course.reports_dir).items())))
        if not result.records:
            raise KitError(f"no student graded yet in {course.reports_dir}: run "
                           "`sdpa-course grade`")
        with warnings.catch_warnings():
            _quiet_known_warnings()
            after_grading(course, result, force_feedback=force)
    pages = ", ".join(id_for_terminal(s) for s in result.refreshed) or "none"
    print(f"Feedback regenerated for {len(result.refreshed)} students: {pages}")
    print("Release it to students with: nbgrader release_feedback "
          f"{for_terminal(course.assignment)}")
    for name, path in result.reports.items():
        print(f"{name}: {for_terminal(str(path))}")
    return 0
