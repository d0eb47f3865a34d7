"""The course the browser tests run against: made, released and graded with the kit's own
commands, as an instructor would, with a class of two.

- `ada` hands in the answer key (every automatic point);
- `ben` hands in the answer key with a typical mistake in Exercise 3 (the mask inverted),
  built the way `sdpa-course demo` builds its class.

A student's working copy of the release sits in `student/` for the JupyterLab flow.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[2]
ANSWER_KEY = REPO / "solutions" / "sdpa" / "attention.ipynb"
ASSIGNMENT, NOTEBOOK = "sdpa", "attention"
WRONG_CASE = "ex3-mask-inverted"
TIMESTAMP = "2026-11-20 09:30:00.000000 UTC"
STUDENT_COPY = f"student/{NOTEBOOK}.ipynb"


@dataclass
class GradedCourse:
    root: Path
    grades: dict  # `sdpa-course grade --json`: what the kit recorded

    @property
    def release(self) -> Path:
        return self.root / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"

    @property
    def student_copy(self) -> Path:
        return self.root / STUDENT_COPY


def kit_environment() -> dict[str, str]:
    """The environment the kit's commands run in: this Python's bin/ first on PATH
    (nbgrader shells out to `alembic` from there)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run_tool(args: list[str], cwd: Path) -> str:
    """Run one of the venv's commands (`sdpa-course`, `nbgrader`); its stdout, or a failure
    that shows its output."""
    command = [str(Path(sys.executable).parent / args[0]), *args[1:]]
    done = subprocess.run(command, cwd=cwd, env=kit_environment(), capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}:\n"
                             f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def _hand_in(course: Path, student: str, notebook) -> None:
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, str(folder / f"{NOTEBOOK}.ipynb"))
    (folder / "timestamp.txt").write_text(TIMESTAMP)


def class_notebooks(root: Path) -> dict[str, object]:
    from autograder.corpus import case
    from sdpa_course.course.directory import Course
    from sdpa_course.demo import notebook_from_source

    key = nbformat.read(str(ANSWER_KEY), as_version=4)
    wrong = case(WRONG_CASE, Course.open(root).variants.variant("ben"))  # ben's own numbers
    return {"ada": key, "ben": notebook_from_source(key, wrong.source)}


def make_graded_course(root: Path) -> GradedCourse:
    run_tool(["sdpa-course", "init", str(root)], cwd=root.parent)
    run_tool(["sdpa-course", "release"], cwd=root)
    for student, notebook in class_notebooks(root).items():
        _hand_in(root, student, notebook)
    grades = json.loads(run_tool(["sdpa-course", "grade", "--json"], cwd=root))
    course = GradedCourse(root, grades)
    course.student_copy.parent.mkdir()
    shutil.copyfile(course.release, course.student_copy)
    return course
