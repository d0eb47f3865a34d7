"""A class graded by the kit's real engine for the feedback-page tests: the corpus's typical
students, as `sdpa-course demo` builds them, plus a hostile one (tests/hostile_notebook.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
from nbconvert.exporters import HTMLExporter
from traitlets.config import Config

REPO = Path(__file__).resolve().parents[2]
ANSWER_KEY = REPO / "solutions" / "sdpa" / "attention.ipynb"
TYPICAL = {  # student -> corpus case ("" for the answer key)
    "key": "",
    "mask-inverted": "ex3-mask-inverted",
    "softmax-axis": "ex2-softmax-axis",
    "no-scaling": "ex1-no-scaling",
    "stateful": "ex3-stateful",
    "loop-in-call": "loop-in-call",
}
HOSTILE = "mal"


def grade_typical_class(root: Path):
    """Released course at `root`, the typical students and the hostile one, graded."""
    import sys

    sys.path.insert(0, str(REPO / "tests"))
    from grade_course_factory import released_course, submit
    from hostile_notebook import hostile

    from autograder.corpus import case
    from sdpa_course.demo import notebook_from_source
    from sdpa_course.grading.grade import grade_course

    course = released_course(root)
    key = nbformat.read(str(ANSWER_KEY), as_version=4)
    for student, name in TYPICAL.items():
        submit(course, student, notebook_from_source(key, case(name).source) if name else key)
    submit(course, HOSTILE, hostile(key))
    return course, grade_course(course, workers=2)


def formgrader_page(course: Path, student: str) -> str:
    """The page formgrader shows a TA who opens `student`'s notebook to mark it, rendered as
    formgrader renders it: an HTMLExporter built from the course's config plus formgrader's
    own settings (nbgrader's FormgradeExtension), fed the autograded notebook."""
    from nbgrader.server_extensions.formgrader import handlers

    from sdpa_course.course.directory import Course

    config = copy.deepcopy(Course.open(course).config)
    extra = Config()
    extra.HTMLExporter.template_name = "formgrade"
    extra.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    config.merge(extra)
    exporter = HTMLExporter(config=config)
    resources = {"assignment_id": "sdpa", "notebook_id": "attention", "submission_id": "x",
                 "index": 0, "total": 1, "base_url": "", "student": student,
                 "last_name": "", "first_name": "", "notebook_path": "x"}
    path = course / "autograded" / student / "sdpa" / "attention.ipynb"
    html, _ = exporter.from_filename(str(path), resources=resources)
    return html
