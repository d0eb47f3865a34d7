"""Grading a class on Dask workers vs the local pool: throughput, and what Dask adds.

    .venv/bin/python benchmarks/bench_dask.py                  # 200 submissions, 3 repeats
    .venv/bin/python benchmarks/bench_dask.py --students 60 --repeats 1

The class: the answer key and the engine's corpus cases (all but the two that spin until a
time limit), cycled to `--students` notebooks built the way the demo builds them.

1. The grading step alone, which is what the executors share the work of: the same notebooks
   through the local `WorkerPool` and through `DaskExecutor` on a Dask cluster on loopback
   (a `dask scheduler` and `dask worker --nworkers 1 --nthreads 1` processes), with 1 and 2
   workers each. Each cluster is started for its own run and stopped after it, so nothing of
   Dask's competes for the 2 cores while the local pool is timed; the repeats alternate which
   side goes first. Timed from the first submit to the last outcome, after a warm-up batch
   (the sandbox zygotes started); median of the repeats, every run shown.
2. What Dask adds per submission, measured inside each Dask run from its task stream: the
   workers' wall time not spent computing a grade, per submission (not a difference between
   a Dask run and a local run, which the noise of a shared machine would swamp).
3. The whole `sdpa-course grade` pipeline (nbgrader's passes, gradebook and feedback in the
   instructor's process) with 2 local workers and with `--scheduler` on 2 Dask workers.

Targets (issue 8): 2 Dask workers >= 1.7x the throughput of 1; Dask adds <= 10 ms per
submission. The machine's load average is printed at the start and the end: on a shared
2-core machine everything else running slows both sides.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the loopback cluster the tests use

SLOW_CASES = {"loop-at-import", "loop-in-call"}


def build_class(root: Path, students: int) -> Path:
    from grade_course_factory import answer_key, released_course, submit

    from autograder.corpus import cases
    from sdpa_course.demo import notebook_from_source

    course = released_course(root / "course")
    key = answer_key()
    notebooks = [key] + [notebook_from_source(key, c.source) for c in cases()
                         if c.name not in SLOW_CASES]
    for i in range(students):
        submit(course, f"s{i:03d}", notebooks[i % len(notebooks)])
    return course


def drive(executor, paths: list[Path], label: str) -> float:
    """Seconds from the first submit to the last outcome; a warm-up batch first."""
    with executor as pool:
        warm = paths[:4]
        for i, path in enumerate(warm):
            pool.submit(f"{label}-warm{i}", path)
        while pool.busy:
            pool.poll(0.5)
        done = 0
        started = time.perf_counter()
        for i, path in enumerate(paths):
            pool.submit(f"{label}-{i}", path)
            done += len(pool.poll(0))
        while pool.busy:
            outcomes = pool.poll(0.5)
            for outcome in outcomes:
                if outcome.report is None:
                    sys.exit(f"{label}: {outcome.key} failed: {outcome.error}")
            done += len(outcomes)
        elapsed = time.perf_counter() - started
    if done != len(paths):
        sys.exit(f"{label}: {done} outcomes for {len(paths)} submissions")
    return elapsed


def drive_on_dask(address: str, paths: list[Path], label: str) -> dict[str, float]:
    """`drive` on the cluster at `address`, with what its task stream says about the run.

    - busy: the fraction of the workers' wall time spent grading (computing tasks);
    - task: the median task's compute seconds;
    - idle per submission: the workers' wall time not spent computing, divided by the number
      of submissions (shipping a notebook, scheduling, returning the report). Measured within
      this one run, from the same clock as its wall time: not a difference between two runs.
    """
    from distributed import Client, get_task_stream

    from sdpa_course.grading.dask_executor import DaskExecutor

    with Client(address, set_as_default=False) as client:
        workers = len(client.scheduler_info(n_workers=-1)["workers"])
        with get_task_stream(client) as stream:
            elapsed = drive(DaskExecutor(address), paths, label)
    computes = [span["stop"] - span["start"] for task in stream.data
                if "warm" not in str(task["key"])
                for span in task["startstops"] if span["action"] == "compute"]
    if len(computes) < len(paths):
        sys.exit(f"{label}: the task stream saw {len(computes)} of {len(paths)} tasks")
    return {"elapsed": elapsed, "busy": sum(computes) / (workers * elapsed),
            "task": statistics.median(computes),
            "idle": (workers * elapsed - sum(computes)) / len(paths)}


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + \
        f" (1, 5, 15 min) on {os.cpu_count()} cores"


def plural(k: int) -> str:
    return f"{k} worker{'s' * (k > 1)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    bin_dir = str(Path(sys.executable).parent)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"

    from dask_cluster import start_cluster

    from sdpa_course.grading.grade import grade_course
    from sdpa_course.grading.workers import WorkerPool

    print(f"start: {load()}")
    root = Path(tempfile.mkdtemp(prefix="bench-dask-"))
    try:
        print(f"Building a class of {args.students} in {root} ...")
        course = build_class(root, args.students)
        paths = sorted((course / "submitted").glob("*/sdpa/attention.ipynb"))
        n = len(paths)

        def local(k: int, rep: int) -> None:
            label = f"local pool, {plural(k)}"
            times.setdefault(label, []).append(
                drive(WorkerPool(k, deadline=300.0), paths, f"r{rep}l{k}"))

        def on_dask(k: int, rep: int) -> None:
            # one cluster at a time, started for this run only: nothing else of Dask's runs
            # while the local pool is timed, nor a second cluster while this one is
            cluster = start_cluster(root / f"cluster-r{rep}-{k}", workers=k)
            try:
                run = drive_on_dask(cluster.address, paths, f"r{rep}d{k}")
            finally:
                cluster.stop()
            label = f"Dask, {plural(k)}"
            times.setdefault(label, []).append(run["elapsed"])
            dask_runs.setdefault(label, []).append(run)

        times: dict[str, list[float]] = {}
        dask_runs: dict[str, list[dict]] = {}
        for rep in range(args.repeats):
            runs = [(local, 1), (local, 2), (on_dask, 1), (on_dask, 2)]
            if rep % 2:
                runs = runs[2:] + runs[:2]  # alternate: Dask first every other repeat
            for how, k in runs:
                how(k, rep)
            print(f"  repeat {rep + 1}: " + ", ".join(f"{label} {t[-1]:.1f} s"
                                                    for label, t in times.items()))

        print("whole pipeline (sdpa-course grade), one run each ...")
        pipeline = {}
        copy = root / "pipeline-local"
        shutil.copytree(course, copy)
        started = time.perf_counter()
        result = grade_course(copy, workers=2, progress_stream=open(os.devnull, "w"))
        pipeline["grade --workers 2"] = (time.perf_counter() - started, result)
        cluster = start_cluster(root / "cluster-pipeline", workers=2)
        try:
            copy = root / "pipeline-dask"
            shutil.copytree(course, copy)
            started = time.perf_counter()
            result = grade_course(copy, scheduler=cluster.address,
                                  progress_stream=open(os.devnull, "w"))
            pipeline["grade --scheduler (2 Dask workers)"] = (time.perf_counter() - started,
                                                              result)
        finally:
            cluster.stop()
        for label, (_, result) in pipeline.items():
            if result.failed or len(result.records) != n:
                sys.exit(f"{label}: {len(result.records)} records, failed: {result.failed}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"end: {load()}")

    median = {label: statistics.median(t) for label, t in times.items()}
    print()
    print(f"grading step, {n} submissions, median of {args.repeats} (every run in brackets):")
    print(f"{'':28}{'seconds':>9}{'per second':>12}{'ms each':>9}")
    for label, seconds in median.items():
        runs = ", ".join(f"{t:.1f}" for t in times[label])
        print(f"{label:28}{seconds:9.2f}{n / seconds:12.1f}{seconds / n * 1000:9.1f}   ({runs})")
    for name in ("local pool", "Dask"):
        one, two = median[f"{name}, 1 worker"], median[f"{name}, 2 workers"]
        target = "  (target >= 1.7x)" if name == "Dask" else ""
        print(f"{name}: 2 workers give {one / two:.2f}x the throughput of 1{target}")
    for label, runs in dask_runs.items():
        idle = [r["idle"] * 1000 for r in runs]
        print(f"{label}: workers busy {statistics.median(r['busy'] for r in runs):.0%} of the "
              f"time, median task {statistics.median(r['task'] for r in runs) * 1000:.0f} ms; "
              f"idle worker time per submission {statistics.median(idle):.1f} ms (runs: "
              f"{', '.join(f'{x:.1f}' for x in idle)}; target <= 10 ms)")
    print()
    print(f"whole pipeline, {n} submissions, one run each:")
    for label, (seconds, _) in pipeline.items():
        print(f"{label:36}{seconds:8.1f} s{n / seconds:8.1f} per second")


if __name__ == "__main__":
    main()
