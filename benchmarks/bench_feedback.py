"""Milliseconds per feedback page and page size: the answer key and a typical wrong answer.

    .venv/bin/python benchmarks/bench_feedback.py              # 40 renders of each
    .venv/bin/python benchmarks/bench_feedback.py --repeat 10

A course is made, the answer key and `ex3-mask-inverted` (the corpus's typical Exercise 3
mistake) are graded once by `sdpa-course grade`'s pipeline with the real engine; then each
student's page is rendered again and again the way `grade` renders a class (one exporter
reused: `grading.feedback.FeedbackWriter`, the gradebook open, the course's feedback
preprocessors: gradebook marks, summary, redaction, sanitising, MathML). The first render
(templates compiling, caches filling) is reported apart. Targets: <= 50 ms and <= 150 KB per
page. The machine's load is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STUDENTS = {"answer-key": "", "mask-inverted": "ex3-mask-inverted"}
TARGET_MS, TARGET_KB = 50.0, 150.0


def graded_course(root: Path) -> Path:
    sys.path.insert(0, str(REPO / "tests"))
    from grade_course_factory import answer_key, released_course, submit

    from autograder.corpus import case
    from sdpa_course.demo import notebook_from_source
    from sdpa_course.grading.grade import grade_course

    course = released_course(root / "course")
    key = answer_key()
    for student, name in STUDENTS.items():
        submit(course, student, notebook_from_source(key, case(name).source) if name else key)
    result = grade_course(course, workers=2, progress_stream=open(os.devnull, "w"))
    assert all(r["status"] == "graded" for r in result.records.values()), result.records
    return course


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=40, help="renders per student")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import nbformat

    from sdpa_course.course.directory import Course
    from sdpa_course.grading.feedback import FeedbackWriter
    from sdpa_course.grading.gradebook import shared_gradebook

    with tempfile.TemporaryDirectory(prefix="bench-feedback-") as tmp:
        course = Course.open(graded_course(Path(tmp)))
        print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
        with shared_gradebook(course.db_url, course.course_id):
            writer = FeedbackWriter(course)
            ok = True
            for student in STUDENTS:
                path = course.folder("autograded", student) / f"{course.notebook}.ipynb"
                first = None
                times = []
                for _ in range(args.repeat + 1):
                    nb = nbformat.read(str(path), as_version=4)
                    began = time.perf_counter()
                    page = writer.write(student, nb)
                    elapsed = (time.perf_counter() - began) * 1000
                    if first is None:
                        first = elapsed
                    else:
                        times.append(elapsed)
                size = page.stat().st_size / 1000
                median = statistics.median(times)
                ok &= median <= TARGET_MS and size <= TARGET_KB
                print(f"{student:>14}: median {median:6.1f} ms per page "
                      f"(min {min(times):.1f}, max {max(times):.1f}, first {first:.0f} ms), "
                      f"{size:.1f} KB")
        print(f"load average after: {os.getloadavg()[0]:.2f}; targets <= {TARGET_MS:g} ms and "
              f"<= {TARGET_KB:g} KB per page: {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
