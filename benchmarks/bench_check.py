"""`sdpa-course check` on the answer key beside `nbgrader validate` on the same notebook.

    .venv/bin/python benchmarks/bench_check.py [--runs 5] [--notebook PATH] [--skip-nbgrader]

Each command runs as a fresh process, as a student or instructor would run it, so start-up
and imports count; `check` twice: cold (`SDPA_COURSE_WARM_SANDBOX=0`, its own zygote) and
warm (forking from the zygote the previous check kept warm, as every check after the first).
The commands alternate (round r runs them in an order rotated by r, after one untimed warm-up
round), so a change in the machine's load touches them alike. Prints the
median wall time of each with every run, and their ratio (target: check at least 3x faster
than nbgrader validate), and the machine's load average at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.sandbox import warm

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CHECK = "sdpa-course check (answer key)"
WARM = "SDPA_COURSE_WARM_SANDBOX"
VALIDATE = "nbgrader validate (same notebook)"


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + \
        f" (1, 5, 15 min) on {os.cpu_count()} cores"


def wall_time(command: list[str], *, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--notebook", type=Path,
                        default=ROOT / "solutions" / "sdpa" / "attention.ipynb")
    parser.add_argument("--skip-nbgrader", action="store_true")
    args = parser.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="bench-check-cache-"))  # its warm zygote's socket
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "XDG_CACHE_HOME": str(cache)}
    notebook = str(args.notebook)
    check = [str(BIN / "sdpa-course"), "check", notebook]
    commands = {  # label -> (argv, environment)
        "sdpa-course --help (start-up only)": ([str(BIN / "sdpa-course"), "--help"], env),
        f"{CHECK}, cold": (check, {**env, WARM: "0"}),
        f"{CHECK}, warm": (check, {**env, WARM: "600"}),
    }
    if not args.skip_nbgrader:
        commands[VALIDATE] = ([str(BIN / "nbgrader"), "validate", notebook], env)
    print(f"start: {load()}")
    try:
        for command, command_env in commands.values():  # warm-up, untimed: disk caches
            wall_time(command, env=command_env)
        times: dict[str, list[float]] = {label: [] for label in commands}
        labels = list(commands)
        for round_ in range(args.runs):
            shift = round_ % len(labels)
            for label in labels[shift:] + labels[:shift]:
                times[label].append(wall_time(commands[label][0], env=commands[label][1]))
    finally:
        for path in (cache / "sdpa-course" / "warm").glob("zygote-*"):
            warm.stop(path)
        shutil.rmtree(cache, ignore_errors=True)
    print(f"end: {load()}")

    print(f"{args.runs} runs each, alternating, median wall time; {args.notebook.name}")
    medians = {}
    for label, runs in times.items():
        medians[label] = statistics.median(runs)
        spread = ", ".join(f"{t:.2f}" for t in runs)
        print(f"  {label:<38} {medians[label]:6.2f} s   ({spread})")
    if not args.skip_nbgrader:
        for how in ("cold", "warm"):
            ratio = medians[VALIDATE] / medians[f"{CHECK}, {how}"]
            print(f"  check ({how}) is {ratio:.1f}x faster than nbgrader validate "
                  f"(target >= 3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
