"""Where the time of `sdpa-course check` and of `sdpa-course grade` goes, step by step.

    .venv/bin/python benchmarks/bench_breakdown.py                    # check and grade, as root
    .venv/bin/python benchmarks/bench_breakdown.py --as-user bench    # as an ordinary user
    .venv/bin/python benchmarks/bench_breakdown.py --only check --runs 7

check: the answer key, `--runs` fresh processes (as a learner runs it), first cold (each
starts its own zygote), then warm (each forks from the zygote the one before kept warm, as
every check after a learner's first); per step the median
wall and CPU time of the process that runs the command (the zygote and the sandbox worker are
other processes: their start shows as the wait for them, and the zygote's own steps, as it
reports them, are listed under it). Steps that overlap (the zygote boots while the command
imports the engine) are each shown with their own time: the total is the process's wall time.

grade: a class of `--students` answer keys graded by `--workers` processes, `--runs` times on
fresh copies: the fixed start-up (imports, course, gradebook, the zygotes, the recorder and
feedback exporter, the class report and its pictures) and the costs per submission in the
parent (prepare, record, feedback page) and in the grading processes (the engine and its
steps), each the median over submissions, then over runs; then one submission's CPU in every
process together, the parent's steps, the engine's and the sandbox worker's (student code),
against issue 30's target of 80 ms (the zygote's fork of each worker is not counted: about a
millisecond).

Each step is timed by `breakdown_probe.py` around the command's own functions; the machine's
load is printed with the figures (other work on a shared machine slows every step).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answer_key_class import answer_key_class  # noqa: E402
from runners import REPO, WARM, Runner, UserRunner, load, make_workdir  # noqa: E402

PROBE = Path(__file__).resolve().parent / "breakdown_probe.py"
PER_SUBMISSION_PARENT = ("prepare: nbgrader's sanitising", "record: nbgrader's autograde steps",
                         "feedback page", "record: saving the student's record")
MOMENTS = {"zygote: launching it": "launched", "zygote: waiting for it": "waited for"}
ZYGOTE_STEPS = {"started": "interpreter, the sandbox's code, numpy",
                "preloaded": "the pre-import (numpy's BLAS warmed up)",
                "planned": "the allowlist of the private root",
                "ready": "namespaces, private root, Landlock set-up"}


def read_trace(path: Path) -> list[dict]:
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.unlink()
    return events


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def check_rows(events: list[dict], wall: float) -> tuple[dict[str, tuple], dict[str, float]]:
    """step -> (wall, cpu, calls) in the command's process; the zygote's own steps."""
    process = next(e for e in events if e["step"] == "(process)")
    main = process["pid"]
    rows: dict[str, list] = {"interpreter start-up": [process["started"] - process["launched"],
                                                      process["started_cpu"], 1]}
    boot: dict[str, float] = {}
    student_cpu = 0.0
    for event in events:
        if event["pid"] != main or event["step"].startswith("("):
            continue
        if event["step"] in MOMENTS:  # when, from the launch of the command
            boot[MOMENTS[event["step"]]] = event["end"] - process["launched"]
        step = event["step"]
        if step == "sandbox round trip":
            step = f"  round trips of {event['parent'] or 'nothing'}"
        row = rows.setdefault(step, [0.0, 0.0, 0])
        row[0] += event["own_wall"]
        row[1] += event["own_cpu"]
        row[2] += 1
        boot.update(event.get("boot") or {})
        if "student_cpu" in event:
            student_cpu = event["student_cpu"]
    timed = sum(r[0] for r in rows.values())
    ended = process["launched"] + wall
    rows["untimed (probe, argparse)"] = [process["end"] - process["launched"] - timed,
                                         process["cpu"] - sum(r[1] for r in rows.values()), 1]
    rows["interpreter exit"] = [ended - process["end"], 0.0, 1]
    rows["(the sandbox worker's CPU: student code)"] = [0.0, student_cpu, 1]
    return {k: tuple(v) for k, v in rows.items()}, boot


def run_check(runner: Runner, notebook: Path, runs: int, warm: bool) -> None:
    """`runs` checks, each cold (its own zygote) or warm (forking from the zygote kept warm
    by the one before, as a learner's checks after the first)."""
    trace = runner.home / "trace-check.jsonl"
    env = {"SDPA_BENCH_TRACE": str(trace), WARM: "600" if warm else "0"}
    try:
        _timed_checks(runner, notebook, runs, "warm" if warm else "cold", trace, env)
    finally:
        if warm:  # as its user: a warm zygote serves nobody else
            runner.stop_warm_zygotes()


def _timed_checks(runner: Runner, notebook: Path, runs: int, how: str, trace: Path,
                  env: dict[str, str]) -> None:
    runner.run([str(PROBE), "check", str(notebook)], **env)  # warm-up
    trace.unlink(missing_ok=True)
    per_run, walls, boots = [], [], defaultdict(list)
    for _ in range(runs):
        wall, _done = runner.run([str(PROBE), "check", str(notebook)], **env)
        rows, boot = check_rows(read_trace(trace), wall)
        per_run.append(rows)
        walls.append(wall)
        for name, seconds in boot.items():
            boots[name].append(seconds)
        if boot:
            boots["total"].append(sum(v for k, v in boot.items() if k in ZYGOTE_STEPS))
    print(f"\n== sdpa-course check on the answer key, {how}, as {runner.name}: {runs} runs, "
          f"median "
          f"wall {_median(walls):.3f} s ({', '.join(f'{w:.2f}' for w in walls)}); {load()}")
    print(f"  {'step (in the command process)':<46}{'wall ms':>9}{'CPU ms':>9}{'calls':>7}")
    steps = list(dict.fromkeys(name for rows in per_run for name in rows))
    for name in steps:
        values = [rows.get(name, (0.0, 0.0, 0)) for rows in per_run]
        print(f"  {name:<46}{_median([v[0] for v in values]) * 1000:9.0f}"
              f"{_median([v[1] for v in values]) * 1000:9.0f}"
              f"{_median([v[2] for v in values]):7.0f}")
    if boots:
        print(f"  the zygote was launched {_median(boots['launched']) * 1000:.0f} ms after the "
              f"command, and ready {_median(boots['waited for']) * 1000:.0f} ms after it")
        print("  the zygote's start, as it reports it (overlaps the command's imports):")
        for name, label in ZYGOTE_STEPS.items():
            if name in boots:
                print(f"    {label:<44}{_median(boots[name]) * 1000:9.0f}")
        print(f"    {'total':<44}{_median(boots['total']) * 1000:9.0f}")


def grade_summary(events: list[dict], wall: float) -> dict[str, dict[str, tuple]]:
    process = next(e for e in events if e["step"] == "(process)")
    main = process["pid"]
    fixed: dict[str, list] = {"interpreter start-up": [process["started"] - process["launched"],
                                                       process["started_cpu"], 1]}
    per_parent: dict[str, list] = defaultdict(list)
    per_worker: dict[str, list] = defaultdict(list)
    by_engine: dict[str, list] = defaultdict(list)
    for event in events:
        if event["step"].startswith("("):
            continue
        if event["pid"] == main:
            if event["step"] in PER_SUBMISSION_PARENT:
                per_parent[event["step"]].append((event["own_wall"], event["own_cpu"]))
            else:
                row = fixed.setdefault(event["step"], [0.0, 0.0, 0])
                row[0] += event["own_wall"]
                row[1] += event["own_cpu"]
                row[2] += 1
        else:
            per_worker[event["step"]].append((event["own_wall"], event["own_cpu"]))
            if event["step"] == "engine: one submission":
                by_engine["engine (inclusive)"].append((event["wall"], event["cpu"]))
            if "student_cpu" in event:
                by_engine["the sandbox worker (student code; CPU)"].append(
                    (0.0, event["student_cpu"]))
    timed = sum(r[0] for r in fixed.values()) + sum(w for v in per_parent.values()
                                                    for w, _ in v)
    fixed["untimed (probe, argparse, glue)"] = [process["end"] - process["launched"] - timed,
                                                0.0, 1]
    fixed["interpreter exit"] = [process["launched"] + wall - process["end"], 0.0, 1]

    def medians(table):
        return {k: (_median([w for w, _ in v]), _median([c for _, c in v]), len(v))
                for k, v in table.items()}

    return {"fixed": {k: tuple(v) for k, v in fixed.items()}, "parent": medians(per_parent),
            "worker": medians({**per_worker, **by_engine})}


def run_grade(runner: Runner, students: int, workers: int, runs: int) -> None:
    pristine = answer_key_class(runner.workdir / "pristine" / "course", students)
    trace = runner.home / "trace-grade.jsonl"
    results, walls = [], []
    for index in range(runs + 1):  # the first is a warm-up (font caches, bytecode)
        course = runner.workdir / f"class-{index}"
        shutil.copytree(pristine, course)
        runner.give(course)
        wall, _done = runner.run([str(PROBE), "grade", str(course), "--workers", str(workers)],
                                 SDPA_BENCH_TRACE=str(trace))
        events = read_trace(trace)
        shutil.rmtree(course)
        if index:
            results.append(grade_summary(events, wall))
            walls.append(wall)
    print(f"\n== sdpa-course grade, {students} answer keys, {workers} grading processes, as "
          f"{runner.name}: {runs} runs, median wall {_median(walls):.2f} s "
          f"({', '.join(f'{w:.2f}' for w in walls)}); {load()}")
    sections = (("fixed", "fixed start-up and wind-down (the parent process; totals)"),
                ("parent", "per submission, in the parent (median of one call)"),
                ("worker", "per submission, in the grading processes (median of one call)"))
    for key, title in sections:
        print(f"  {title:<58}{'wall ms':>9}{'CPU ms':>9}{'calls':>7}")
        steps = list(dict.fromkeys(name for r in results for name in r[key]))
        for name in steps:
            values = [r[key].get(name, (0.0, 0.0, 0)) for r in results]
            print(f"    {name:<56}{_median([v[0] for v in values]) * 1000:9.0f}"
                  f"{_median([v[1] for v in values]) * 1000:9.0f}"
                  f"{_median([v[2] for v in values]):7.0f}")
    parts = {"the parent's steps": [sum(r["parent"].get(step, (0, 0, 0))[1]
                                        for step in PER_SUBMISSION_PARENT) for r in results],
             "the engine, in a grading process": [
                 r["worker"].get("engine (inclusive)", (0, 0, 0))[1] for r in results],
             "the sandbox worker (student code)": [
                 r["worker"].get("the sandbox worker (student code; CPU)", (0, 0, 0))[1]
                 for r in results]}
    total = sum(_median(values) for values in parts.values())
    print(f"  {'one submission, every process together':<58}{'':>9}{'CPU ms':>9}")
    for name, values in parts.items():
        print(f"    {name:<56}{'':>9}{_median(values) * 1000:9.0f}")
    print(f"    {'total (target <= 80 ms)':<56}{'':>9}{total * 1000:9.0f}"
          f"   {'met' if total <= 0.080 else 'NOT met'} in this run")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="check runs (grade: 3 at most)")
    parser.add_argument("--students", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", choices=("check", "grade"), default=None)
    parser.add_argument("--as-user", metavar="NAME", default=None,
                        help="run the commands as this ordinary user (created if missing)")
    args = parser.parse_args()
    workdir = make_workdir("bench-breakdown-")
    runner = UserRunner(workdir, args.as_user) if args.as_user else Runner(workdir)
    try:
        if args.only in (None, "check"):
            notebook = workdir / "attention.ipynb"
            shutil.copy(REPO / "solutions" / "sdpa" / "attention.ipynb", notebook)
            runner.give(notebook)
            run_check(runner, notebook, args.runs, warm=False)
            run_check(runner, notebook, args.runs, warm=True)
        if args.only in (None, "grade"):
            run_grade(runner, args.students, args.workers, min(args.runs, 3))
    finally:
        runner.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
