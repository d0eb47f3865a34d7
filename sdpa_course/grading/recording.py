"""nbgrader's autograde for one submission, split around the engine, in the parent process.

`prepare` is nbgrader's first pass (copy the files, sanitise: clear outputs, restore locked
and deleted graded cells from the gradebook) and writes `autograded/<student>/<assignment>/`;
a worker then grades that notebook with the engine. `record` is nbgrader's second pass (the
course's `Autograde.autograde_preprocessors`, with `EngineGrades` in Execute's slot, then
`SaveAutoGrades` and the late penalties) followed by the feedback. Both use nbgrader's own
preprocessors on one shared gradebook connection: the parent is the gradebook's only writer.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook
from nbgrader.converters import Autograde
from nbgrader.preprocessors import Execute
from nbgrader.utils import find_all_files
from traitlets.utils.importstring import import_item

from sdpa_course.assignment import METADATA_KEY
from sdpa_course.course.directory import Course
from sdpa_course.errors import GradingFailed, KitError
from sdpa_course.grading.feedback import FeedbackWriter
from sdpa_course.grading.gradebook import clear_failed_submission
from sdpa_course.grading.submissions import Submission, read_submitted_notebook
from sdpa_course.nbgrader_ext.autograde import EngineGrades


def _write(nb, path: Path) -> None:
    """nbformat.write without its validation pass: the notebook was validated when read and
    only nbgrader's own preprocessors have changed it since."""
    path.write_text(nbformat.v4.writes_json(nb) + "\n", encoding="utf-8")


def _steps(course: Course, name: str) -> list:
    configured = course.config.Autograde.get(name)
    classes = configured if configured is not None else Autograde.class_traits()[name].default()
    steps = []
    for cls in classes:
        if isinstance(cls, str):
            cls = import_item(cls)
        steps.append(cls(config=course.config))
    return steps


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
        notebook = gradebook.find_notebook(course.notebook, course.assignment)
        self.grade_ids = {cell.name for cell in notebook.grade_cells}
        self.cell_ids = self.grade_ids | {cell.name for cell in notebook.solution_cells}
        self.locked_sources = {cell.name: cell.source for cell in notebook.source_cells
                               if cell.locked}
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

    def autograded_notebook(self, student: str) -> Path:
        return self.course.folder("autograded", student) / f"{self.course.notebook}.ipynb"

    def prepare(self, submission: Submission) -> tuple[Path, list[str]]:
        """nbgrader's sanitising pass; the path the engine grades and any warnings."""
        nb, warnings = read_submitted_notebook(submission, self.cell_ids, self.grade_ids,
                                               self.locked_sources)
        dest = self.course.folder("autograded", submission.student)
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        # as nbgrader does: the submission's other files (timestamp.txt, data), then the
        # source's own files over them, minus the course's ignore patterns
        ignore = [*self.course.coursedir.ignore, "*.ipynb"]
        for folder in (submission.folder, self.source_dir):
            for name in find_all_files(str(folder), ignore) if folder.is_dir() else []:
                target = dest / Path(name).relative_to(folder)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(name, target)
        resources = self._resources(submission.student, submission.folder)
        try:
            for step in self.sanitize_steps:
                nb, resources = step(nb, resources)
        except Exception as err:
            raise GradingFailed(f"nbgrader could not read the notebook's cells: {err}") from err
        path = self.autograded_notebook(submission.student)
        _write(nb, path)
        self._sanitized[submission.student] = nb  # record() goes on from here, not from disk
        return path, warnings

    def record(self, submission: Submission, report: dict) -> Path:
        """nbgrader's autograding pass with the engine's report, then the feedback."""
        student = submission.student
        self.gradebook.update_or_create_student(student)
        timestamp = self.course.coursedir.get_existing_timestamp(str(submission.folder))
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
            nb, resources = step(nb, resources)
        _write(nb, path)
        return self.feedback.write(student, nb)

    def forget(self, student: str) -> str:
        """A failed student: nothing stale left behind, no score of 0 in the gradebook."""
        self._sanitized.pop(student, None)
        for step in ("autograded", "feedback"):
            folder = self.course.folder(step, student)
            if folder.exists():
                shutil.rmtree(folder)
        return clear_failed_submission(self.gradebook, self.course.assignment, student)
