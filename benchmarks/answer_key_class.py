"""A released course whose whole class handed in the answer key (bench_breakdown, bench_targets)."""

from __future__ import annotations

import shutil
from pathlib import Path

TIMESTAMP = "2026-11-20 09:30:00.000000 UTC"


def answer_key_class(course_dir: Path, students: int) -> Path:
    """`sdpa-course init` + `release` at `course_dir`, then `students` copies of the answer
    key under submitted/s000/, s001/, ... (it earns every point with any student's numbers)."""
    from sdpa_course.course.create import init_course
    from sdpa_course.course.material import notebook_path
    from sdpa_course.course.release import release_assignment

    course = init_course(course_dir)
    release_assignment(course)
    key = notebook_path("solutions")
    for i in range(students):
        folder = course / "submitted" / f"s{i:03d}" / "sdpa"
        folder.mkdir(parents=True)
        shutil.copy(key, folder / "attention.ipynb")
        (folder / "timestamp.txt").write_text(TIMESTAMP)
    return course
