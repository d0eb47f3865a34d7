"""One class graded by the kit's real engine, once a session, for the tests that only read
what grading left (records, gradebook, feedback pages, autograded notebooks):

- tests/test_feedback.py's students: the answer key and corpus cases that crash, hang, hog
  memory or read files, each written with the numbers of the student named after it (`CASES`);
- the browser tests' typical students (tests/e2e/test_feedback_pages.py): the answer key and
  corpus cases as `sdpa-course demo` builds them (`TYPICAL`), plus a hostile one
  (tests/hostile_notebook.py, `HOSTILE`).

Both sets used to be graded apart, each class waiting out its own endless loop; in one class
the two loops run at once on the two workers. The root conftest's `feedback_class` fixture
grades it (session scope); no test may change it.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
ANSWER_KEY = REPO / "solutions" / "sdpa" / "attention.ipynb"
# tests/test_feedback.py: student (named after the case) -> the case, with their own numbers
CASES = ("ex3-mask-inverted", "read-hidden-files", "exit-in-call", "loop-at-import",
         "memory-hog-in-call")
TYPICAL = {  # the browser tests: student -> corpus case ("" for the answer key)
    "key": "",
    "mask-inverted": "ex3-mask-inverted",
    "softmax-axis": "ex2-softmax-axis",
    "no-scaling": "ex1-no-scaling",
    "stateful": "ex3-stateful",
    "loop-in-call": "loop-in-call",
}
HOSTILE = "mal"


def notebook_for(case_name: str, course: Path):
    """The corpus case, with the numbers of the student named after it in `course`."""
    from grade_course_factory import answer_key, variant_of

    from autograder.corpus import case
    from sdpa_course.demo import notebook_from_source

    own = case(case_name, variant_of(course, case_name))
    return notebook_from_source(answer_key(), own.source)


def grade_feedback_class(root: Path):
    """Released course at `root` with every student above, graded with 2 workers:
    (course, ClassResult)."""
    from grade_course_factory import released_course, submit
    from hostile_notebook import hostile

    from autograder.corpus import case
    from sdpa_course.demo import notebook_from_source
    from sdpa_course.grading.grade import grade_course

    course = released_course(root)
    key = nbformat.read(str(ANSWER_KEY), as_version=4)
    for student, name in TYPICAL.items():  # "key" is both sets' answer key
        submit(course, student, notebook_from_source(key, case(name).source) if name else key)
    submit(course, HOSTILE, hostile(key))
    for name in CASES:
        submit(course, name, notebook_for(name, course))
    return course, grade_course(course, workers=2)
