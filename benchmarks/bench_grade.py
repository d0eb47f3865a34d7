"""Grade the same class with stock nbgrader and with `sdpa-course grade`, 1 worker and N.

    .venv/bin/python benchmarks/bench_grade.py                    # 40 students, 3 repeats
    .venv/bin/python benchmarks/bench_grade.py --students 200 --repeats 3 --workers 2
    .venv/bin/python benchmarks/bench_grade.py --students 200 --as-user nobody

The class: distinct submissions, right and wrong. Every correct and every mistaken case of
the engine's corpus (`autograder.corpus`; not the hostile ones, which stock nbgrader would run
unsandboxed), cycled to `--students` notebooks built as the demo builds them, and each answer
cell of each notebook marked with its student, so no two submissions share an answer cell
(the kit's feedback caches rendering by cell source, as a real class allows for the lesson's
own cells only).

Three ways to grade it, each from the command line as an instructor would, on a fresh copy of
the class each time:

- stock: `nbgrader autograde` (the notebook in nbgrader's kernel; the release settings only,
  so stock Execute and stock feedback) + `nbgrader generate_feedback`;
- the kit with `--workers 1`: the same serial work, so the ratio is the pipeline's own;
- the kit with `--workers N` (default: the cores): the parallel gain is its own figure.

Each repeat runs the three in a rotated order (stock first, then kit first, ...), after one
untimed warm-up of each on a small class; medians of the repeats are reported with every run.
Checked after each run: a gradebook entry and a feedback page for every student, and for the
kit, every student's score in the gradebook as the corpus expects (each notebook is written
with its student's own numbers: `init` gives the course a seed; extra credit on top).

--as-user NAME runs every timed command as that user (the class folders are given to them),
as the hardening issue asks: the kit's sandbox then takes its ordinary-user path. The Python
running this script must be readable by that user (root's pyenv is not: make the venv with
/usr/bin/python3.11, e.g. `/usr/bin/python3.11 -m venv /opt/kit-venv && /opt/kit-venv/bin/pip
install -e .`, and run this script with /opt/kit-venv/bin/python).

The machine's load average (1, 5, 15 min) is printed at the start and the end: on a shared
machine everything else running slows every side.
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import statistics
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
TIMESTAMP = "2026-11-20 09:30:00.000000 UTC"
WARM_UP_STUDENTS = 3


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + \
        f" (1, 5, 15 min) on {os.cpu_count()} cores"


def class_notebooks(students: int, variant_of) -> list[tuple[str, object, float]]:
    """(student, notebook, expected score in nbgrader, extra credit on top): distinct
    submissions, right and wrong, each written with its student's numbers (`variant_of`)."""
    import copy

    import nbformat

    from autograder.corpus import cases
    from autograder.exercises import EXTRA_CREDIT, MAX_SCORE
    from sdpa_course.course.material import notebook_path
    from sdpa_course.demo import notebook_from_source

    key = nbformat.read(str(notebook_path("solutions")), as_version=4)
    kinds = ["answer-key"] + [case.name for case in cases()
                              if case.kind in ("correct", "mistake")]
    out = []
    for i in range(students):
        name = kinds[i % len(kinds)]
        student = f"s{i:03d}-{name}"
        if name == "answer-key":  # works its answers out from the numbers it shows
            nb, expected = copy.deepcopy(key), MAX_SCORE + EXTRA_CREDIT
        else:
            case = next(c for c in cases(variant_of(student)) if c.name == name)
            nb = notebook_from_source(key, case.source)
            expected = case.expected_score + case.expected_extra_credit
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
                cell.source = f"{cell.source}\n# handed in by {student}"
        out.append((student, nb, expected))
    return out


def build_class(root: Path, students: int) -> tuple[Path, Path, dict[str, float]]:
    """A released kit course with the class submitted, and its stock twin."""
    import nbformat

    from sdpa_course.course.create import init_course
    from sdpa_course.course.directory import Course
    from sdpa_course.course.release import release_assignment

    kit = init_course(root / "kit")
    release_assignment(kit)
    variants = Course.open(kit).variants  # init gave the course a seed: students' own numbers
    expected = {}
    for student, nb, score in class_notebooks(students, variants.variant):
        folder = kit / "submitted" / student / "sdpa"
        folder.mkdir(parents=True)
        nbformat.write(nb, str(folder / "attention.ipynb"))
        (folder / "timestamp.txt").write_text(TIMESTAMP)
        expected[student] = score
    stock = root / "stock"
    shutil.copytree(kit, stock)
    (stock / "nbgrader_config.py").write_text(STOCK_CONFIG)
    return kit, stock, expected


class Runner:
    """Runs the tools, as this user or as `--as-user`."""

    def __init__(self, user: str | None):
        self.user = pwd.getpwnam(user) if user else None

    def give(self, folder: Path) -> None:
        if self.user is None:
            return
        for path in [folder, *folder.rglob("*")]:
            os.lchown(path, self.user.pw_uid, self.user.pw_gid)

    def run(self, command: list[str], cwd: Path) -> float:
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        kwargs = {}
        if self.user is not None:
            env["HOME"] = str(cwd)
            kwargs = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        started = time.perf_counter()
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                              **kwargs)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return elapsed

    def check_python(self) -> None:
        if self.user is None:
            return
        try:
            done = subprocess.run([sys.executable, "-c", "import sdpa_course"],
                                  user=self.user.pw_uid, group=self.user.pw_gid,
                                  extra_groups=[], capture_output=True, text=True, cwd="/")
        except PermissionError as err:
            done = None
            reason = str(err)
        else:
            reason = done.stderr[-500:]
        if done is None or done.returncode != 0:
            sys.exit(f"{self.user.pw_name} cannot run {sys.executable} with the kit: {reason}\n"
                     "Make a venv they can read (see --help) and run this script with it.")


def grade(runner: Runner, how: str, course: Path, workers: int) -> float:
    if how == "stock":
        return (runner.run([str(BIN / "nbgrader"), "autograde", "sdpa"], course)
                + runner.run([str(BIN / "nbgrader"), "generate_feedback", "sdpa"], course))
    return runner.run([str(BIN / "sdpa-course"), "grade", "--workers", str(workers)], course)


def check(course: Path, how: str, expected: dict[str, float]) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        scores = {s.student.id: s.score for s in gb.assignment_submissions("sdpa")}
    pages = {p.parts[-3] for p in (course / "feedback").glob("*/sdpa/attention.html")}
    if set(scores) != set(expected) or pages != set(expected):
        sys.exit(f"{how}: {len(scores)} gradebook entries and {len(pages)} feedback pages for "
                 f"{len(expected)} students")
    if how != "stock":  # stock nbgrader's graded cells only print: it cannot tell them apart
        wrong = {s: (scores[s], want) for s, want in expected.items() if scores[s] != want}
        if wrong:
            sys.exit(f"{how}: scores not as the corpus expects: {wrong}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2,
                        help="the kit's N (default: the cores)")
    parser.add_argument("--as-user", metavar="NAME", default=None,
                        help="run every timed command as this user")
    parser.add_argument("--keep", type=Path, default=None, help="build the classes here")
    args = parser.parse_args()
    runner = Runner(args.as_user)
    runner.check_python()

    print(f"start: {load()}")
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-grade-"))
    root.mkdir(parents=True, exist_ok=True)
    if runner.user is not None:
        root.chmod(0o755)
    try:
        kit, stock, expected = build_class(root / "class", args.students)
        small_kit, small_stock, small_expected = build_class(root / "warm", WARM_UP_STUDENTS)
        kinds = len({s.split("-", 1)[1] for s in expected})
        print(f"class: {args.students} distinct submissions ({kinds} kinds, right and wrong) in "
              f"{root}; running as {args.as_user or pwd.getpwuid(os.getuid()).pw_name}")
        ways = {"stock": stock, "kit --workers 1": kit, f"kit --workers {args.workers}": kit}
        templates = {"stock": small_stock, "kit --workers 1": small_kit,
                     f"kit --workers {args.workers}": small_kit}
        for how, template in templates.items():  # warm-up, untimed: disk caches, imports
            course = root / "run" / "course"
            shutil.copytree(template, course)
            runner.give(course.parent)
            grade(runner, how, course, 1 if how == "kit --workers 1" else args.workers)
            check(course, how, small_expected)
            shutil.rmtree(course.parent)
        times: dict[str, list[float]] = {how: [] for how in ways}
        order = list(ways)
        for rep in range(args.repeats):
            rotated = order[rep % len(order):] + order[:rep % len(order)]
            for how in rotated:
                course = root / "run" / "course"
                shutil.copytree(ways[how], course)
                runner.give(course.parent)
                workers = 1 if how == "kit --workers 1" else args.workers
                times[how].append(grade(runner, how, course, workers))
                check(course, how, expected)
                shutil.rmtree(course.parent)
            print(f"  repeat {rep + 1} ({' -> '.join(rotated)}): " +
                  ", ".join(f"{how} {t[-1]:.1f} s" for how, t in times.items()))
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print(f"end: {load()}")

    n = args.students
    median = {how: statistics.median(t) for how, t in times.items()}
    print()
    print(f"{n} students, median of {args.repeats} (every run in brackets):")
    for how, seconds in median.items():
        runs = ", ".join(f"{t:.1f}" for t in times[how])
        print(f"  {how:<22}{seconds:8.1f} s {seconds / n * 1000:8.0f} ms each   ({runs})")
    kit1, kitn = median["kit --workers 1"], median[f"kit --workers {args.workers}"]
    print(f"the kit, serial, against stock nbgrader: {median['stock'] / kit1:.2f}x faster")
    print(f"the kit with {args.workers} workers against 1: {kit1 / kitn:.2f}x (parallel gain)")
    print(f"the kit with {args.workers} workers against stock: {median['stock'] / kitn:.2f}x")


if __name__ == "__main__":
    main()
