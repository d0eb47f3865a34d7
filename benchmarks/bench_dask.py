"""Grading a class on Dask workers vs the local pool: throughput, and what Dask adds.

    .venv/bin/python benchmarks/bench_dask.py                  # 200 submissions, 3 repeats
    .venv/bin/python benchmarks/bench_dask.py --students 60 --repeats 1

The class: the answer key and the engine's corpus cases (all but the two that spin until a
time limit), cycled to `--students` notebooks built the way the demo builds them.

1. The grading step alone, which is what the executors share the work of: the same notebooks
   through the local `WorkerPool` and through `DaskExecutor` on a Dask cluster on loopback
   (a `dask scheduler` and `dask worker --nworkers 1 --nthreads 1` processes), with 1 and 2
   workers each. Timed from the first submit to the last outcome, after a warm-up batch (the
   sandbox zygotes started); median of the repeats.
2. The whole `sdpa-course grade` pipeline (nbgrader's passes, gradebook and feedback in the
   instructor's process) with 2 local workers and with `--scheduler` on 2 Dask workers.

Targets (issue 8): 2 Dask workers >= 1.7x the throughput of 1; Dask adds <= 10 ms per
submission over the local pool. The machine's other load is printed with the figures: on a
shared 2-core machine everything else running slows both sides.
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


def drive_on_dask(address: str, paths: list[Path], label: str) -> tuple[float, float, float]:
    """`drive` on the cluster at `address`; also how busy its workers were (the fraction of
    the wall time spent grading, averaged over workers) and the median task's seconds.

    Busy workers whose tasks take longer than on one worker point to CPU contention (the
    machine's other load), idle ones to Dask's own overhead."""
    from distributed import Client, get_task_stream

    from sdpa_course.grading.dask_executor import DaskExecutor

    with Client(address, set_as_default=False) as client:
        workers = len(client.scheduler_info(n_workers=-1)["workers"])
        with get_task_stream(client) as stream:
            elapsed = drive(DaskExecutor(address), paths, label)
    computes = [span["stop"] - span["start"] for task in stream.data
                if "warm" not in str(task["key"])
                for span in task["startstops"] if span["action"] == "compute"]
    busy = sum(computes) / (workers * elapsed)
    return elapsed, busy, statistics.median(computes)


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

    root = Path(tempfile.mkdtemp(prefix="bench-dask-"))
    print(f"Building a class of {args.students} in {root} ...")
    course = build_class(root, args.students)
    paths = sorted((course / "submitted").glob("*/sdpa/attention.ipynb"))
    n = len(paths)
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f}")

    times: dict[str, list[float]] = {}
    utilisation: dict[str, list[tuple[float, float]]] = {}
    clusters = {k: start_cluster(root / f"cluster{k}", workers=k) for k in (1, 2)}
    try:
        for rep in range(args.repeats):
            for k in (1, 2):
                label = f"local pool, {k} worker{'s' * (k > 1)}"
                pool = WorkerPool(k, deadline=300.0)
                times.setdefault(label, []).append(drive(pool, paths, f"r{rep}l{k}"))
                label = f"Dask, {k} worker{'s' * (k > 1)}"
                elapsed, busy, task = drive_on_dask(clusters[k].address, paths, f"r{rep}d{k}")
                times.setdefault(label, []).append(elapsed)
                utilisation.setdefault(label, []).append((busy, task))
            print(f"  repeat {rep + 1}: " + ", ".join(f"{label} {t[-1]:.1f} s"
                                                    for label, t in times.items()))

        print("whole pipeline (sdpa-course grade) ...")
        pipeline = {}
        for label, kwargs in (("grade --workers 2", {"workers": 2}),
                              ("grade --scheduler (2 Dask workers)",
                               {"scheduler": clusters[2].address})):
            copy = root / f"pipeline-{len(pipeline)}"
            shutil.copytree(course, copy)
            started = time.perf_counter()
            result = grade_course(copy, progress_stream=open(os.devnull, "w"), **kwargs)
            pipeline[label] = time.perf_counter() - started
            if result.failed or len(result.records) != n:
                sys.exit(f"{label}: {len(result.records)} records, failed: {result.failed}")
    finally:
        for cluster in clusters.values():
            cluster.stop()
    print(f"load average after: {os.getloadavg()[0]:.2f}")

    median = {label: statistics.median(t) for label, t in times.items()}
    print()
    print(f"grading step, {n} submissions, median of {args.repeats}:")
    print(f"{'':28}{'seconds':>9}{'per second':>12}{'ms each':>9}")
    for label, seconds in median.items():
        print(f"{label:28}{seconds:9.2f}{n / seconds:12.1f}{seconds / n * 1000:9.1f}")
    for name in ("local pool", "Dask"):
        one = median[f"{name}, 1 worker"]
        two = median[f"{name}, 2 workers"]
        target = "  (target >= 1.7x)" if name == "Dask" else ""
        print(f"{name}: 2 workers give {one / two:.2f}x the throughput of 1{target}")
    for k, suffix in ((1, " worker"), (2, " workers")):
        extra = (median[f"Dask, {k}{suffix}"] - median[f"local pool, {k}{suffix}"]) / n * 1000
        print(f"Dask adds {extra:+.1f} ms per submission over the local pool with {k}{suffix} "
              "(target <= 10 ms)")
    for label, runs in utilisation.items():
        busy = statistics.median(b for b, _ in runs)
        task = statistics.median(t for _, t in runs)
        print(f"{label}: workers busy {busy:.0%} of the time, median task {task * 1000:.0f} ms")
    print()
    print(f"whole pipeline, {n} submissions, one run each:")
    for label, seconds in pipeline.items():
        print(f"{label:36}{seconds:8.1f} s{n / seconds:8.1f} per second")


if __name__ == "__main__":
    main()
