"""Grade one class with and without per-student variants, and against stock nbgrader.

    .venv/bin/python benchmarks/bench_variants.py                  # 200 students, 3 repeats
    .venv/bin/python benchmarks/bench_variants.py --students 40 --repeats 1 --stock-students 0

The class: every correct and every mistaken case of the engine's corpus (not the hostile
ones, which stock nbgrader would run unsandboxed), cycled to `--students` notebooks built as
the demo builds them, each answer cell marked with its student so that no two submissions
share one. Two courses hold the same cases for the same students:

- with variants: the course has a seed, and each student's notebook is written with that
  student's own numbers (`autograder.corpus.cases(variant)`); grading derives each variant
  from the seed and the folder's id, and the engine grades against it (own numbers, own
  hidden inputs, the notebook run with the student's id);
- without: the same course without a seed; every notebook has the lesson's numbers.

Each repeat grades a fresh copy of each course with `sdpa-course grade --workers N`, in a
rotated order (with variants first, then without, ...), after one untimed warm-up of each;
medians are reported, with every run. Checked after each run: every student graded with the
score the corpus expects. Then stock nbgrader (`nbgrader autograde` with its kernel, and
`nbgrader generate_feedback`) grades `--stock-students` of the class without variants (all
of it by default), for the speed-up. The load average (1, 5, 15 min) is printed at the start
and at the end: on a shared machine everything else running slows every side.

`--engine-only N` measures the variants' own cost without the class pipeline: N corpus
submissions graded by the engine in this process, each once as a student's variant and once
with the lesson's numbers, alternately (so that the machine's other load falls on both).
"""

from __future__ import annotations

import argparse
import json
import os
import re
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


def _cases(variant) -> list:
    from autograder.corpus import cases

    return [case for case in cases(variant) if case.kind != "hostile"]


def build_class(root: Path, name: str, students: int, *, seeded: bool) -> Path:
    """A released course of `students` submissions; with `seeded`, each written with the
    student's own numbers."""
    import nbformat

    from sdpa_course.course.create import init_course
    from sdpa_course.course.directory import Course
    from sdpa_course.course.material import notebook_path
    from sdpa_course.course.release import release_assignment
    from sdpa_course.demo import notebook_from_source

    course = init_course(root / name)
    if not seeded:
        config = course / "nbgrader_config.py"
        config.write_text(re.sub(r"^c\.CourseVariants\.seed.*$", "", config.read_text(),
                                 flags=re.M))
    release_assignment(course)
    variants = Course.open(course).variants
    key = nbformat.read(str(notebook_path("solutions")), as_version=4)
    expected = {}
    for i in range(students):
        student = f"s{i:03d}"
        cases = _cases(variants.variant(student))
        case = cases[i % len(cases)]
        notebook = notebook_from_source(key, case.source)
        for cell in notebook.cells:
            if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code":
                cell.source += f"\n# {student}"
        folder = course / "submitted" / student / "sdpa"
        folder.mkdir(parents=True)
        nbformat.write(notebook, str(folder / "attention.ipynb"))
        (folder / "timestamp.txt").write_text("2026-11-20 09:30:00.000000 UTC")
        expected[student] = case.expected_score
    (root / f"{name}.expected.json").write_text(json.dumps(expected))
    return course


def run(command: list[str], cwd: Path) -> tuple[float, str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return elapsed, done.stdout


def grade_copy(master: Path, scratch: Path, workers: int, expected: dict) -> float:
    copy = scratch / f"{master.name}-{time.monotonic_ns()}"
    shutil.copytree(master, copy)
    seconds, out = run([str(BIN / "sdpa-course"), "grade", "--workers", str(workers), "--json"],
                       copy)
    students = json.loads(out)["students"]
    wrong = {s: r["score"] for s, r in students.items() if r["score"] != expected[s]}
    if wrong or set(students) != set(expected):
        sys.exit(f"{master.name}: scores other than the corpus expects: {wrong}")
    shutil.rmtree(copy)
    return seconds


def engine_alternating(students: int) -> tuple[list[float], list[float]]:
    """Seconds per submission of the engine in this process, one sandbox pool, alternating a
    student's own variant and the lesson's on the same kind of submission: the variants' own
    cost, with the class pipeline (nbgrader, feedback) left out."""
    from autograder.engine import grade_content
    from autograder.sandbox import SandboxPool
    from autograder.variants import DEFAULT, new_seed, variant_for

    seed, pool = new_seed(), SandboxPool()
    with_variants, without = [], []
    try:
        for i in range(students + 2):  # the first two warm the pool up, untimed
            variant = variant_for(seed, "sdpa", f"s{i:03d}")
            for own, times in ((variant, with_variants), (DEFAULT, without)):
                case = _cases(own)[i % len(_cases(own))]
                started = time.perf_counter()
                grade_content(case.source, name=f"{case.name}.py", pool=pool, variant=own)
                if i >= 2:
                    times.append(time.perf_counter() - started)
    finally:
        pool.close()
    return with_variants, without


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--stock-students", type=int, default=None,
                        help="how many of the class stock nbgrader grades (default: all; "
                             "0: skip it)")
    parser.add_argument("--keep", type=Path, default=None, help="build the courses here")
    parser.add_argument("--engine-only", type=int, default=0, metavar="N",
                        help="instead: N submissions graded by the engine in this process, "
                             "each with and without its variant, alternately")
    args = parser.parse_args()
    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    if args.engine_only:
        print(f"cores: {os.cpu_count()}, load average (1/5/15 min) at the start: {load()}")
        mine, plain = engine_alternating(args.engine_only)
        print(f"load average (1/5/15 min) at the end: {load()}")
        a, b = statistics.median(mine), statistics.median(plain)
        mean_a, mean_b = statistics.mean(mine), statistics.mean(plain)
        print(f"engine, median per submission: with variants {a * 1000:.0f} ms, without "
              f"{b * 1000:.0f} ms ({(a / b - 1) * 100:+.1f}%); means {mean_a * 1000:.0f} and "
              f"{mean_b * 1000:.0f} ms ({(mean_a / mean_b - 1) * 100:+.1f}%)")
        return
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-variants-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"cores: {os.cpu_count()}, load average (1/5/15 min) at the start: {load()}")
    print(f"Building two classes of {args.students} students in {root} ...")
    sides = {"with variants": build_class(root, "variants", args.students, seeded=True),
             "without": build_class(root, "plain", args.students, seeded=False)}
    expected = {name: json.loads((root / f"{course.name}.expected.json").read_text())
                for name, course in sides.items()}
    scratch = root / "runs"
    scratch.mkdir(exist_ok=True)

    warm = min(args.students, 10)
    print(f"warm-up (untimed, {warm} students each) ...")
    for name, course in sides.items():
        small = root / f"warm-{course.name}"
        shutil.copytree(course, small)
        for folder in sorted((small / "submitted").iterdir())[warm:]:
            shutil.rmtree(folder)
        grade_copy(small, scratch, args.workers,
                   {s: v for s, v in expected[name].items() if (small / "submitted" / s).is_dir()})

    times: dict[str, list[float]] = {name: [] for name in sides}
    order = list(sides)
    for repeat in range(args.repeats):
        for name in order:
            seconds = grade_copy(sides[name], scratch, args.workers, expected[name])
            times[name].append(seconds)
            print(f"  repeat {repeat + 1}, {name:<14} {seconds:7.1f} s   (load {load()})")
        order.reverse()

    stock_seconds = None
    stock_n = args.students if args.stock_students is None else args.stock_students
    if stock_n:
        stock = root / "stock"
        shutil.copytree(sides["without"], stock)
        for folder in sorted((stock / "submitted").iterdir())[stock_n:]:
            shutil.rmtree(folder)
        (stock / "nbgrader_config.py").write_text(STOCK_CONFIG)
        print(f"stock nbgrader on {stock_n} students: autograde + generate_feedback ...")
        autograde, _ = run([str(BIN / "nbgrader"), "autograde", "sdpa"], stock)
        feedback, _ = run([str(BIN / "nbgrader"), "generate_feedback", "sdpa"], stock)
        stock_seconds = autograde + feedback
    print(f"load average (1/5/15 min) at the end: {load()}")

    n = args.students
    print()
    print(f"{'':36}{'median s':>10}{'per student':>14}   runs")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        runs = ", ".join(f"{v:.1f}" for v in values)
        print(f"{'sdpa-course grade, ' + name:36}{medians[name]:10.1f}"
              f"{medians[name] / n * 1000:11.0f} ms   {runs}")
    slower = medians["with variants"] / medians["without"] - 1
    print(f"variants cost: {slower * 100:+.1f}% (target <= +10%)")
    if stock_seconds is not None:
        per_stock = stock_seconds / stock_n
        print(f"{'stock nbgrader (' + str(stock_n) + ' students)':36}{stock_seconds:10.1f}"
              f"{per_stock * 1000:11.0f} ms")
        speedup = per_stock / (medians["with variants"] / n)
        print(f"speed-up of grading with variants over stock: {speedup:.1f}x per student "
              "(target >= 10x)")


if __name__ == "__main__":
    main()
