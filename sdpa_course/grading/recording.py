"""nbgrader's autograde for one submission, split around the engine, in the parent process.

`prepare` is nbgrader's first pass (copy the files, sanitise: clear outputs, restore locked
and deleted graded cells from the gradebook) and writes `autograded/<student>/<assignment>/`;
a worker then grades that notebook with the engine. `record` is nbgrader's second pass (the
course's `Autograde.autograde_preprocessors`, with `EngineGrades` in Execute's slot, then
`SaveAutoGrades` and the late penalties) followed by the feedback. Both use nbgrader's own
preprocessors on one shared gradebook connection: the parent is the gradebook's only writer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
from nbformat.v4.nbjson import BytesEncoder
from nbformat.v4.rwbase import _non_text_split_mimes as _SPLIT_MIMES
from nbgrader.api import (
    Assignment,
    Grade,
    Gradebook,
    Notebook,
    SubmittedAssignment,
    SubmittedNotebook,
)
from nbgrader.converters import Autograde
from nbgrader.preprocessors import Execute, SaveAutoGrades
from traitlets.utils.importstring import import_item

from sdpa_course.assignment import METADATA_KEY
from sdpa_course.course.directory import Course
from sdpa_course.errors import GradingFailed, KitError
from sdpa_course.grading.feedback import FeedbackWriter
from sdpa_course.grading.gradebook import (
    clear_failed_submission,
    one_commit,
    student_id_refused,
)
from sdpa_course.grading.submissions import (
    TIMESTAMP_FILE,
    Submission,
    copy_regular_files,
    read_submitted_notebook,
    read_timestamp,
)
from sdpa_course.nbgrader_ext.autograde import EngineGrades
from sdpa_course.nbgrader_ext.cell_budget import FOLDED_KEY


def _write(nb, path: Path) -> None:
    """nbformat.write without its validation pass: the notebook was validated when read and
    only nbgrader's own preprocessors have changed it since."""
    path.write_text(notebook_json(nb) + "\n", encoding="utf-8")


def _write_for_the_engine(nb, path: Path) -> None:
    """The sanitised notebook as the engine reads it (plain JSON, its cells in any of
    nbformat's forms): compact, in json's C encoder, 3 times as fast as `notebook_json`'s
    indented text. `record` writes the autograded notebook over it in nbformat's own text;
    a failed submission's folder is removed."""
    path.write_text(json.dumps(nb, cls=BytesEncoder, ensure_ascii=False) + "\n",
                    encoding="utf-8")


_TRANSIENT = ("orig_nbformat", "orig_nbformat_minor", "signature")  # nbformat's strip_transient


def _split_bundle(bundle: dict) -> dict:
    """nbformat's `_split_mimebundle`, on a copy."""
    return {key: value.splitlines(True)
            if isinstance(value, str) and (key.startswith("text/") or key in _SPLIT_MIMES)
            else value for key, value in bundle.items()}


def _file_output(output: dict) -> dict:
    if output.get("output_type") in ("execute_result", "display_data") and "data" in output:
        return {**output, "data": _split_bundle(output["data"])}
    if output.get("output_type") == "stream" and isinstance(output.get("text"), str):
        return {**output, "text": output["text"].splitlines(True)}
    return output


def notebook_json(nb) -> str:
    """`nbformat.v4.writes_json(nb)`, the same text, without its deep copy of the notebook
    (two a submission, most of the writing's time): only the parts nbformat's `split_lines`
    and `strip_transient` change are copied, and `nb` is left as it was."""
    cells = []
    for cell in nb.cells:
        copied = dict(cell)
        if isinstance(cell.get("source"), str):
            copied["source"] = cell["source"].splitlines(True)
        if "attachments" in cell:
            copied["attachments"] = {name: _split_bundle(bundle)
                                     for name, bundle in cell["attachments"].items()}
        if cell.cell_type == "code":
            copied["outputs"] = [_file_output(output) for output in cell.outputs]
        if "trusted" in cell.metadata:
            copied["metadata"] = {k: v for k, v in cell.metadata.items() if k != "trusted"}
        cells.append(copied)
    filed = {**nb, "cells": cells,
             "metadata": {k: v for k, v in nb.metadata.items() if k not in _TRANSIENT}}
    return json.dumps(filed, cls=BytesEncoder, indent=1, sort_keys=True,
                      separators=(",", ": "), ensure_ascii=False)


def _steps(course: Course, name: str) -> list:
    configured = course.config.Autograde.get(name)
    classes = configured if configured is not None else Autograde.class_traits()[name].default()
    steps = []
    for cls in classes:
        if isinstance(cls, str):
            cls = import_item(cls)
        steps.append(cls(config=course.config))
    return steps


def _release_metadata(notebook) -> dict[str, dict]:
    """Each release cell's nbgrader metadata, as `nbgrader generate_assignment` wrote it,
    from the gradebook's record of the source notebook."""
    graded = {cell.name: cell.max_score for cell in notebook.grade_cells}
    answers = {cell.name for cell in notebook.solution_cells}
    tasks = {cell.name for cell in notebook.task_cells}
    release = {}
    for cell in notebook.source_cells:
        meta = {"cell_type": cell.cell_type, "grade": cell.name in graded,
                "grade_id": cell.name, "locked": bool(cell.locked), "schema_version": 3,
                "solution": cell.name in answers, "task": cell.name in tasks}
        if cell.name in graded:
            meta["points"] = graded[cell.name]
        if cell.checksum:
            meta["checksum"] = cell.checksum
        release[cell.name] = meta
    return release


class SubmissionRecorder:
    """Runs nbgrader's autograde steps for one submission at a time, around the engine."""

    def __init__(self, course: Course, gradebook: Gradebook):
        self.course = course
        self.gradebook = gradebook
        self.sanitize_steps = _steps(course, "sanitize_preprocessors")
        self.autograde_steps = _steps(course, "autograde_preprocessors")
        if any(isinstance(step, Execute) for step in self.autograde_steps):
            raise KitError("this course's nbgrader_config.py runs notebooks in nbgrader's kernel "
                           "(Execute); `sdpa-course grade` needs the kit's EngineGrades instead "
                           "(call sdpa_course.nbgrader_ext.config.configure(c))")
        if not any(isinstance(step, EngineGrades) for step in self.autograde_steps):
            raise KitError("this course's Autograde.autograde_preprocessors has no EngineGrades")
        self.feedback = FeedbackWriter(course)
        self._sanitized: dict = {}
        self._timestamps: dict = {}  # each prepared submission's time (None: it has none)
        # what a person must check in each prepared submission (a time the kit could not
        # read: no late penalty was applied); taken by the run into the student's record
        self.to_check: dict[str, list[str]] = {}
        # the cells each recorded submission's pages fold ({"cells", "chars"}; `cell_budget`),
        # taken by the run into the student's record
        self.folded: dict[str, dict] = {}
        notebook = gradebook.find_notebook(course.notebook, course.assignment)
        self.grade_ids = {cell.name for cell in notebook.grade_cells}
        self.cell_ids = self.grade_ids | {cell.name for cell in notebook.solution_cells}
        self.locked_sources = {cell.name: cell.source for cell in notebook.source_cells
                               if cell.locked}
        self.release_metadata = _release_metadata(notebook)
        self.source_dir = Path(course.coursedir.format_path(
            course.coursedir.source_directory, ".", course.assignment))

    def _resources(self, student: str, folder: Path) -> dict:
        return {
            "unique_key": self.course.notebook,
            "output_files_dir": f"{self.course.notebook}_files",
            "metadata": {"name": self.course.notebook, "path": str(folder)},
            "nbgrader": {
                "student": student,
                "assignment": self.course.assignment,
                "notebook": self.course.notebook,
                "db_url": self.course.db_url,
            },
        }

    def max_file_bytes(self) -> int | None:
        """nbgrader's CourseDirectory.max_file_size (kilobytes of 1000 bytes, as nbgrader
        counts them) in bytes; None when it is 0 (no limit, as in nbgrader)."""
        size = self.course.coursedir.max_file_size
        return 1000 * size if size else None

    def autograded_notebook(self, student: str) -> Path:
        return self.course.folder("autograded", student) / f"{self.course.notebook}.ipynb"

    def prepare(self, submission: Submission) -> tuple[Path, list[str]]:
        """nbgrader's sanitising pass; the path the engine grades and any warnings.

        GradingFailed for a submission nbgrader cannot take (its id, its notebook), and for
        one whose autograded folder cannot be written (retried by the next run)."""
        refused = submission.misplaced or student_id_refused(submission.student)
        if refused:
            raise GradingFailed(refused)
        try:
            return self._prepare(submission)
        except OSError as err:
            raise GradingFailed(f"the kit could not write this student's autograded folder: "
                                f"{err.strerror or err}", retry=True) from None

    def _prepare(self, submission: Submission) -> tuple[Path, list[str]]:
        nb, warnings = read_submitted_notebook(submission, self.cell_ids, self.grade_ids,
                                               self.locked_sources, self.release_metadata)
        dest = self.course.folder("autograded", submission.student)
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        # as nbgrader does: the submission's other files (timestamp.txt, data), then the
        # source's own files over them, minus the course's ignore patterns
        # (never through a symbolic link: see copy_regular_files)
        ignore = [*self.course.coursedir.ignore, "*.ipynb"]
        max_bytes = self.max_file_bytes()
        for folder in (submission.folder, self.source_dir):
            skipped = copy_regular_files(folder, dest, ignore + [TIMESTAMP_FILE], max_bytes)
            if folder == submission.folder:
                warnings = [*warnings, *skipped.warnings(max_bytes)]
        # timestamp.txt: read here once, safely (never nbgrader's get_existing_timestamp,
        # which hangs on a FIFO and stops the run on text it cannot parse); autograded/ gets
        # the text when nbgrader can read it, else an empty file, nbgrader's "no time"
        when, text, unusable = read_timestamp(submission.folder)
        if text is not None:
            (dest / TIMESTAMP_FILE).write_text(text, encoding="utf-8")
        if unusable:
            warnings = [*warnings, unusable]
            self.to_check[submission.student] = [unusable]
        self._timestamps[submission.student] = when
        resources = self._resources(submission.student, submission.folder)
        try:
            for step in self.sanitize_steps:
                nb, resources = step(nb, resources)
        except Exception as err:
            raise GradingFailed(f"nbgrader could not read the notebook's cells: {err}") from err
        path = self.autograded_notebook(submission.student)
        _write_for_the_engine(nb, path)
        self._sanitized[submission.student] = nb  # record() goes on from here, not from disk
        return path, warnings

    def record(self, submission: Submission, report: dict) -> Path:
        """nbgrader's autograding pass with the engine's report, then the feedback."""
        student = submission.student
        self.gradebook.update_or_create_student(student)
        if student in self._timestamps:
            timestamp = self._timestamps.pop(student)
        else:  # recorded without being prepared in this process
            timestamp = read_timestamp(submission.folder)[0]
        if timestamp:
            self.gradebook.update_or_create_submission(
                self.course.assignment, student, timestamp=timestamp)
        else:
            self.gradebook.update_or_create_submission(self.course.assignment, student)
        path = self.autograded_notebook(student)
        nb = self._sanitized.pop(student, None) or nbformat.read(str(path), as_version=4)
        resources = self._resources(student, path.parent)
        resources[METADATA_KEY] = {"report": report}
        for step in self.autograde_steps:
            if isinstance(step, SaveAutoGrades):  # reads back nothing it wrote: one commit
                with one_commit(self.gradebook):
                    nb, resources = step(nb, resources)
            else:
                nb, resources = step(nb, resources)
        folded = nb.metadata.get(METADATA_KEY, {}).get(FOLDED_KEY)
        if folded:
            self.folded[student] = dict(folded)
        self._unanswered_written_answers_to_mark(student)
        _write(nb, path)
        return self.feedback.write(student, nb)

    def _unanswered_written_answers_to_mark(self, student: str) -> None:
        """nbgrader scores a written answer left as the release's stub 0 automatically and
        hides it from manual grading; here it stays to be marked by a person (pending, not 0,
        and flagged in formgrader), unless someone already marked it.

        The grades are found in one query (nbgrader's objects would read each grade's cell
        in a query of its own: a dozen a submission)."""
        db = self.gradebook.db
        grades = (db.query(Grade)
                  .join(SubmittedNotebook, SubmittedNotebook.id == Grade.notebook_id)
                  .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
                  .join(SubmittedAssignment,
                        SubmittedAssignment.id == SubmittedNotebook.assignment_id)
                  .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
                  .filter(Notebook.name == self.course.notebook,
                          Assignment.name == self.course.assignment,
                          SubmittedAssignment.student_id == student,
                          Grade.cell_type == "markdown", Grade.manual_score.is_(None),
                          Grade.auto_score.isnot(None))
                  .all())
        for grade in grades:
            grade.auto_score = None
            grade.needs_manual_grade = True
        if grades:
            db.commit()

    def forget(self, student: str) -> str:
        """A failed student: nothing stale left behind, no score of 0 in the gradebook."""
        self._sanitized.pop(student, None)
        self._timestamps.pop(student, None)
        self.to_check.pop(student, None)
        self.folded.pop(student, None)
        for step in ("autograded", "feedback"):
            folder = self.course.folder(step, student)
            if folder.exists():
                shutil.rmtree(folder)
        return clear_failed_submission(self.gradebook, self.course.assignment, student)
