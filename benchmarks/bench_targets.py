"""Issue 17's figures: the kit beside stock nbgrader, interleaved in one run, as root or as an
ordinary user.

    .venv/bin/python benchmarks/bench_targets.py                      # both, as root
    .venv/bin/python benchmarks/bench_targets.py --as-user bench      # as an ordinary user
    .venv/bin/python benchmarks/bench_targets.py --only check --check-runs 9

check: `sdpa-course check` on the answer key beside `nbgrader validate` on the same notebook,
`--check-runs` fresh processes each, taking turns (target: check at least 6x faster, about
0.6-0.7 s on a quiet machine; stretch 0.5 s). `check` is timed twice: cold (no zygote kept
warm, `SDPA_COURSE_WARM_SANDBOX=0`: the first check of a session) and warm (the zygote the
previous check left running: every check after an edit).

grade: a class of `--students` answer keys, graded `--rounds` times on fresh copies of the same
course, alternating which side goes first: `sdpa-course grade` (start-up included) beside stock
`nbgrader autograde` + `nbgrader generate_feedback` (the kit's release settings only, so the
notebooks run in nbgrader's kernel; target: at least 20x). Each run is checked: a gradebook
score of 20 and a feedback page for every student.

Every figure is a median, printed with the machine's load when it was taken: the machine is
shared, and only ratios of runs interleaved like these compare like with like.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answer_key_class import answer_key_class  # noqa: E402
from runners import REPO, WARM, Runner, UserRunner, load, make_workdir  # noqa: E402

STOCK_CONFIG = '''\
"""Stock nbgrader grading: the kit's release settings only (no EngineGrades, stock feedback)."""
from sdpa_course.nbgrader_ext.config import configure_release

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "sdpa-course"
configure_release(c)
'''




def _spread(times: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in times)


def bench_check(runner: Runner, runs: int) -> None:
    notebook = runner.home / "attention.ipynb"
    shutil.copy(REPO / "solutions" / "sdpa" / "attention.ipynb", notebook)
    runner.give(notebook)
    check = runner.command("sdpa-course", "check", str(notebook))
    sides = {"sdpa-course check, cold": (check, {WARM: "0"}),
             "sdpa-course check, warm": (check, {WARM: "600"}),
             "nbgrader validate": (runner.command("nbgrader", "validate", str(notebook)), {})}
    try:
        for argv, env in sides.values():  # warm-up: caches, bytecode; the warm zygote
            runner.timed(argv, runner.home, **env)
        times: dict[str, list[float]] = {name: [] for name in sides}
        loads = []
        for run in range(runs):
            order = list(sides)[run % 3:] + list(sides)[:run % 3]
            for name in order:
                argv, env = sides[name]
                times[name].append(runner.timed(argv, runner.home, **env))
            loads.append(load())
    finally:  # as its user: a warm zygote serves nobody else
        runner.stop_warm_zygotes()
    cold, kept, stock = (statistics.median(times[name]) for name in sides)
    print(f"\n== check on the answer key, as {runner.name}: {runs} runs each, taking turns")
    for name in sides:
        print(f"  {name:<24} median {statistics.median(times[name]):6.2f} s   "
              f"({_spread(times[name])})")
    print(f"  check is {stock / cold:.1f}x faster than nbgrader validate cold, "
          f"{stock / kept:.1f}x warm (target >= 6x; 0.6-0.7 s, stretch 0.5 s, on a quiet machine)")
    print(f"  {loads[0]} at the first run, {loads[-1]} at the last")


def _check_graded(course: Path, students: int, label: str) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = [s.score for s in gradebook.assignment_submissions("sdpa")]
    pages = list((course / "feedback").glob("*/sdpa/attention.html"))
    full = sum(score >= 20.0 for score in scores)
    if len(scores) != students or len(pages) != students or full != students:
        sys.exit(f"{label}: expected {students} graded submissions with feedback, got "
                 f"{len(scores)} in the gradebook ({full} with 20 points), {len(pages)} pages")


def bench_grade(runner: Runner, students: int, rounds: int, workers: int | None) -> None:
    kit_pristine = answer_key_class(runner.workdir / "pristine" / "kit", students)
    stock_pristine = runner.workdir / "pristine" / "stock"
    shutil.copytree(kit_pristine, stock_pristine)
    (stock_pristine / "nbgrader_config.py").write_text(STOCK_CONFIG)
    grade = ["grade"] + (["--workers", str(workers)] if workers else [])
    sides = {
        "sdpa-course grade": (kit_pristine, [runner.command("sdpa-course", *grade)]),
        "stock autograde + generate_feedback": (stock_pristine, [
            runner.command("nbgrader", "autograde", "sdpa"),
            runner.command("nbgrader", "generate_feedback", "sdpa")]),
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    loads = []
    print(f"\n== a class of {students} answer keys, as {runner.name}: {rounds} rounds, "
          f"alternating which side goes first")
    for round_ in range(rounds):
        order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
        for name in order:
            pristine, commands = sides[name]
            course = runner.workdir / f"run-{round_}-{name.split()[0]}"
            shutil.copytree(pristine, course)
            runner.give(course)
            before = load()
            wall = sum(runner.timed(argv, course) for argv in commands)
            _check_graded(course, students, name)
            shutil.rmtree(course)
            times[name].append(wall)
            loads.append(before)
            print(f"  round {round_ + 1}: {name:<36} {wall:7.2f} s  ({before} before)",
                  flush=True)
    kit, stock = (statistics.median(times[name]) for name in sides)
    for name in sides:
        median = statistics.median(times[name])
        print(f"  {name:<36} median {median:7.2f} s, {median / students * 1000:5.0f} ms "
              f"per submission   ({_spread(times[name])})")
    print(f"  the kit is {stock / kit:.1f}x faster, start-up included (target >= 20x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check-runs", type=int, default=5)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None,
                        help="sdpa-course grade --workers (default: its own, one per core)")
    parser.add_argument("--only", choices=("check", "grade"), default=None)
    parser.add_argument("--as-user", metavar="NAME", default=None,
                        help="run every command as this ordinary user (created if missing)")
    args = parser.parse_args()
    workdir = make_workdir("bench-targets-")
    runner = UserRunner(workdir, args.as_user) if args.as_user else Runner(workdir)
    print(f"{runner.name}; {load()}")
    try:
        if args.only in (None, "check"):
            bench_check(runner, args.check_runs)
        if args.only in (None, "grade"):
            bench_grade(runner, args.students, args.rounds, args.workers)
    finally:
        runner.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
