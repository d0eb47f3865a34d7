"""An nbgrader course directory opened in-process: its config and its folders.

The config is the course's own `nbgrader_config.py`, read the way nbgrader reads it, so every
setting there (`CourseDirectory.db_url`, the preprocessor lists, ...) is honoured.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from sdpa_course.assignment import (
    ASSIGNMENT,
    COURSE_CONFIG,
    NOT_A_COURSE,
    NOTEBOOK,
    REPORTS_DIRECTORY,
)
from sdpa_course.errors import KitError
from sdpa_course.nbgrader_ext.variants import CourseVariants

CONFIG_FILE = COURSE_CONFIG


def put_venv_bin_on_path() -> None:
    """nbgrader shells out to `alembic`, installed next to this Python."""
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def load_config(course_dir: Path) -> Config:
    """The course's nbgrader config, with its root set to `course_dir`."""
    config = Config()
    if (course_dir / CONFIG_FILE).is_file():
        config = PyFileConfigLoader(CONFIG_FILE, path=str(course_dir)).load_config()
    config.CourseDirectory.root = str(course_dir)
    return config


@dataclass
class Course:
    """One course directory and the one assignment the kit grades in it."""

    root: Path
    config: Config
    coursedir: CourseDirectory
    assignment: str = ASSIGNMENT
    notebook: str = NOTEBOOK

    @classmethod
    def open(cls, course_dir: Path) -> Course:
        root = Path(course_dir).resolve()
        if not (root / CONFIG_FILE).is_file():
            raise KitError(NOT_A_COURSE.format(root=root))
        put_venv_bin_on_path()
        config = load_config(root)
        return cls(root=root, config=config, coursedir=CourseDirectory(config=config))

    @property
    def db_url(self) -> str:
        return self.coursedir.db_url

    @property
    def course_id(self) -> str:
        return self.coursedir.course_id

    def folder(self, step: str, student: str) -> Path:
        """`<root>/<step>/<student>/<assignment>` as nbgrader lays it out.

        `step` is one of "submitted", "autograded", "feedback" (as named in the config).
        """
        name = getattr(self.coursedir, f"{step}_directory")
        return Path(self.coursedir.format_path(name, student, self.assignment))

    @property
    def variants(self) -> CourseVariants:
        """The course seed's variants: `course.variants.variant(student)`."""
        return CourseVariants(config=self.config)

    @property
    def reports_dir(self) -> Path:
        return self.root / REPORTS_DIRECTORY / self.assignment
