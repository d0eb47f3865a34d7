"""Benchmark the sandbox on the answer key: wall and CPU time per submission with a warm pool.

    .venv/bin/python benchmarks/bench_sandbox.py [--runs 30]

Runs the answer key's cells (numpy, a matplotlib heatmap, the exercises) in a fresh sandbox
forked from one zygote, reads the exercise names and calls `attention` and `causal_mask` a few
times, then closes it: what grading one submission costs the sandbox. Prints medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

from autograder.sandbox import Cell, Limits, Sandbox, SandboxPool
from autograder.submission import read_submission

ANSWER_KEY = Path(__file__).resolve().parent.parent / "solutions" / "sdpa" / "attention.ipynb"


def grade_once(cells: list[Cell], pool: SandboxPool, per_cell: dict[str, list[float]]
               ) -> tuple[float, float, float, float]:
    """(wall s, trusted CPU s, worker CPU s, wall of start() alone); cell times to per_cell."""
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 5))
    mask = np.triu(np.ones((4, 6), dtype=bool), k=1)
    wall, cpu = time.perf_counter(), time.process_time()
    with Sandbox(cells, limits=Limits(), pool=pool) as sandbox:
        outcomes = sandbox.start()
        started = time.perf_counter() - wall
        assert all(o.status == "ok" for o in outcomes), outcomes
        for outcome in outcomes:
            per_cell.setdefault(outcome.label, []).append(outcome.seconds)
        for name in ("ex1_scores", "ex1_weights", "ex1_output", "p_scaled", "p_unscaled"):
            sandbox.get(name)
        for _ in range(3):
            sandbox.call("attention", q, k, v, mask=mask, readonly=True)
        sandbox.call_with_inputs("attention", q, k, v)
        sandbox.call("causal_mask", 5)
        sandbox.call("softmax", np.array([[1000.0, 0.0]]))
    return (time.perf_counter() - wall, time.process_time() - cpu, sandbox.cpu_seconds,
            started)


def zygote_cpu_seconds(pool: SandboxPool) -> float:
    """CPU time of the zygote itself (forking is charged to it), from /proc."""
    fields = Path(f"/proc/{pool.zygote_pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def overhead_once(pool: SandboxPool) -> tuple[float, float, float]:
    """A one-cell submission, one get: what the sandbox itself costs (wall, trusted, worker)."""
    wall, cpu = time.perf_counter(), time.process_time()
    with Sandbox([Cell("x = 1", "cell 1")], pool=pool) as sandbox:
        sandbox.start()
        sandbox.get("x")
    return time.perf_counter() - wall, time.process_time() - cpu, sandbox.cpu_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    cells = [Cell(c.source, c.label, c.first_line) for c in read_submission(ANSWER_KEY)]
    began = time.perf_counter()
    with SandboxPool() as pool:
        print(f"zygote start: {time.perf_counter() - began:.3f} s (isolation: {pool.mode})")
        per_cell: dict[str, list[float]] = {}
        grade_once(cells, pool, {})  # first fork touches cold pages
        zygote_before = zygote_cpu_seconds(pool)
        runs = [grade_once(cells, pool, per_cell) for _ in range(args.runs)]
        zygote_answer = (zygote_cpu_seconds(pool) - zygote_before) / args.runs
        zygote_before = zygote_cpu_seconds(pool)
        overheads = [overhead_once(pool) for _ in range(args.runs)]
        zygote_trivial = (zygote_cpu_seconds(pool) - zygote_before) / args.runs
    walls, trusted, workers, starts = (sorted(column) for column in zip(*runs, strict=True))
    o_walls, o_trusted, o_workers = (sorted(column) for column in zip(*overheads, strict=True))
    print(f"answer key, {len(cells)} cells, {args.runs} runs (medians):")
    print(f"  cells only (start):          {statistics.median(starts) * 1000:7.1f} ms wall")
    print(f"  start + 6 gets + 6 calls:    {statistics.median(walls) * 1000:7.1f} ms wall")
    print(f"  trusted-process CPU:         {statistics.median(trusted) * 1000:7.1f} ms")
    print(f"  worker CPU:                  {statistics.median(workers) * 1000:7.1f} ms")
    print(f"  zygote CPU (mean):           {zygote_answer * 1000:7.1f} ms")
    slowest = sorted(per_cell.items(), key=lambda item: -statistics.median(item[1]))[:3]
    for label, seconds in slowest:
        print(f"  slowest cell {label + ':':<26}{statistics.median(seconds) * 1000:6.1f} ms wall")
    print(f"one-cell submission, start + 1 get + close ({args.runs} runs, medians):")
    print(f"  wall:                        {statistics.median(o_walls) * 1000:7.1f} ms")
    print(f"  CPU trusted + worker + zygote: {statistics.median(o_trusted) * 1000:.1f} + "
          f"{statistics.median(o_workers) * 1000:.1f} + {zygote_trivial * 1000:.1f} ms")


if __name__ == "__main__":
    main()
