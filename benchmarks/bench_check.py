"""`sdpa-course check` on the answer key vs `nbgrader validate` on the same notebook.

    .venv/bin/python benchmarks/bench_check.py [--runs 5] [--notebook PATH] [--skip-nbgrader]

Each command runs as a fresh process, as a student or instructor would run it, so start-up
and imports count. Prints the median wall time of each and their ratio (target: check at
least 3x faster than nbgrader validate, which took about 3.3 s on the reference machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def wall_times(command: list[str], runs: int, *, env: dict[str, str]) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--notebook", type=Path,
                        default=ROOT / "solutions" / "sdpa" / "attention.ipynb")
    parser.add_argument("--skip-nbgrader", action="store_true")
    args = parser.parse_args()
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    notebook = str(args.notebook)

    rows = {
        "sdpa-course --help (start-up only)": [str(BIN / "sdpa-course"), "--help"],
        "sdpa-course check (answer key)": [str(BIN / "sdpa-course"), "check", notebook],
    }
    if not args.skip_nbgrader:
        rows["nbgrader validate (same notebook)"] = [str(BIN / "nbgrader"), "validate",
                                                     notebook]
    medians = {}
    print(f"{args.runs} runs each, median wall time; {args.notebook.name}")
    for label, command in rows.items():
        times = wall_times(command, args.runs, env=env)
        medians[label] = statistics.median(times)
        spread = ", ".join(f"{t:.2f}" for t in times)
        print(f"  {label:<38} {medians[label]:6.2f} s   ({spread})")
    if not args.skip_nbgrader:
        ratio = medians["nbgrader validate (same notebook)"] / medians[
            "sdpa-course check (answer key)"]
        print(f"  check is {ratio:.1f}x faster than nbgrader validate (target >= 3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
