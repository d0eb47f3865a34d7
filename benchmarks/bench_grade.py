"""Grade one class twice: stock nbgrader (kernel + stock feedback) vs `sdpa-course grade`.

    .venv/bin/python benchmarks/bench_grade.py                 # 200 answer-key submissions
    .venv/bin/python benchmarks/bench_grade.py --students 20   # a quicker run

Both courses are copies of one released kit course holding the same submissions. The stock
course's nbgrader_config.py keeps the kit's release settings only, so `nbgrader autograde`
runs each notebook in nbgrader's kernel (Execute) and `nbgrader generate_feedback` uses
nbgrader's own feedback. Each side is run as an instructor would, from the command line, and
timed end to end (autograde + feedback). Checked after each run: a gradebook score and a
feedback page for every student. The machine's other load is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
STOCK_CONFIG = '''\
"""Stock nbgrader grading: the kit's release settings only (no EngineGrades, stock feedback)."""
from sdpa_course.nbgrader_ext.config import configure_release

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "sdpa-course"
configure_release(c)
'''


def build_class(root: Path, students: int) -> Path:
    from sdpa_course.course.create import init_course
    from sdpa_course.course.material import notebook_path
    from sdpa_course.course.release import release_assignment

    course = init_course(root / "kit")
    release_assignment(course)
    key = notebook_path("solutions")
    for i in range(students):
        folder = course / "submitted" / f"s{i:03d}" / "sdpa"
        folder.mkdir(parents=True)
        shutil.copy(key, folder / "attention.ipynb")
        (folder / "timestamp.txt").write_text("2026-11-20 09:30:00.000000 UTC")
    return course


def run(command: list[str], cwd: Path) -> float:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return elapsed


def check(course: Path, students: int, label: str) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        scores = [s.score for s in gb.assignment_submissions("sdpa")]
    pages = list((course / "feedback").glob("*/sdpa/attention.html"))
    full = sum(score >= 20.0 for score in scores)
    print(f"  {label}: {len(scores)} gradebook submissions ({full} with all 20 automatic "
          f"points), {len(pages)} feedback pages")
    if len(scores) != students or len(pages) != students or full != students:
        sys.exit(f"{label}: expected {students} graded submissions with feedback")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="build the courses here")
    args = parser.parse_args()
    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"

    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-grade-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"Building a class of {args.students} answer-key submissions in {root} ...")
    kit = build_class(root, args.students)
    stock = root / "stock"
    shutil.copytree(kit, stock)
    (stock / "nbgrader_config.py").write_text(STOCK_CONFIG)

    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f} "
          "(other work on the machine slows both sides)")
    print("stock nbgrader: autograde + generate_feedback ...")
    stock_autograde = run([str(BIN / "nbgrader"), "autograde", "sdpa"], stock)
    stock_feedback = run([str(BIN / "nbgrader"), "generate_feedback", "sdpa"], stock)
    check(stock, args.students, "stock")
    print(f"sdpa-course grade --workers {args.workers} ...")
    kit_time = run([str(BIN / "sdpa-course"), "grade", "--workers", str(args.workers)], kit)
    check(kit, args.students, "kit")
    print(f"load average after: {os.getloadavg()[0]:.2f}")

    n = args.students
    stock_time = stock_autograde + stock_feedback
    print()
    print(f"{'':32}{'total s':>10}{'per submission':>16}")
    print(f"{'stock autograde':32}{stock_autograde:10.1f}{stock_autograde / n * 1000:13.0f} ms")
    per = stock_feedback / n * 1000
    print(f"{'stock generate_feedback':32}{stock_feedback:10.1f}{per:13.0f} ms")
    print(f"{'stock total':32}{stock_time:10.1f}{stock_time / n * 1000:13.0f} ms")
    print(f"{'sdpa-course grade':32}{kit_time:10.1f}{kit_time / n * 1000:13.0f} ms")
    print(f"speed-up: {stock_time / kit_time:.1f}x (target >= 10x)")


if __name__ == "__main__":
    main()
