"""Limits per submission: its time budget, time charged as the time it ran, its CPU share.

Wall-clock durations are never asserted: what is checked is what a submission was charged
(its processes' CPU time, read from the kernel) and what its report says.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from autograder.corpus import case, pieces
from autograder.engine import grade_content
from autograder.sandbox import Cell, Limits, Sandbox, SandboxPool, StudentTimeout

linux_root = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0,
    reason="pinning processes to a processor and cgroups need root on Linux")


@pytest.fixture(scope="module")
def pool():
    with SandboxPool() as shared:
        yield shared


def cpu_seconds_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def started(pool, *sources, limits: Limits) -> Sandbox:
    cells = [Cell(textwrap.dedent(s), f"cell {i + 1}") for i, s in enumerate(sources)]
    sandbox = Sandbox(cells, limits=limits, pool=pool)
    sandbox.start()
    return sandbox


# -- the submission's budget ---------------------------------------------------------------


def test_budget_stops_many_slow_cells_and_what_ran_keeps_its_points(pool):
    """40 cells just under the cell limit each: the budget ends them, the submission is
    graded (not failed), exercise 1 computed before keeps its points."""
    slow = "import time\ntime.sleep(0.4)\n"
    source = "\n".join([pieces.IMPORTS, pieces.EX1_ROUNDED, *([slow] * 40),
                        pieces.SOFTMAX_STABLE, pieces.EX2_ROUNDED, pieces.ATTENTION_WHERE,
                        pieces.CAUSAL_MASK_TRIU])
    limits = Limits(cell_seconds=0.5, call_seconds=1, submission_seconds=3)
    report = grade_content(source, name="slow.py", limits=limits, pool=pool)
    exercises = report["exercises"]
    assert exercises["ex1"]["score"] == exercises["ex1"]["max_score"] == 3
    assert exercises["ex2"]["score"] < 6 and exercises["ex3"]["score"] < 11
    assert "timeout" in exercises["ex3"]["diagnoses"]
    assert "kit_errors" not in report
    messages = [t["message"] for t in exercises["ex3"]["tests"] if not t["passed"]]
    assert all("time budget was used up" in m for m in messages), messages


def test_budget_spent_in_calls_makes_later_calls_time_outs_and_values_still_readable(pool):
    limits = Limits(call_seconds=2, submission_seconds=2.5)
    sandbox = started(pool, "import time\nanswer = 42\n"
                      "def slow():\n    time.sleep(0.9)\n    return 1", limits=limits)
    try:
        assert sandbox.call("slow") == 1 and sandbox.call("slow") == 1
        with pytest.raises(StudentTimeout, match="budget"):
            sandbox.call("slow")  # stopped when the budget runs out
        assert sandbox.out_of_time
        with pytest.raises(StudentTimeout, match="not run: the submission's time budget"):
            sandbox.call("slow")  # no longer run at all
        assert sandbox.get("answer") == 42 and sandbox.has("slow")
    finally:
        sandbox.close()


def test_cells_after_the_budget_are_time_outs_without_running(pool):
    limits = Limits(cell_seconds=5, submission_seconds=1)
    sandbox = started(pool, "x = 1", "while True:\n    pass", "y = 2", limits=limits)
    try:
        assert [o.status for o in sandbox.outcomes] == ["ok", "timeout", "timeout"]
        assert "budget of 1 s ran out" in sandbox.outcomes[1].error
        assert sandbox.outcomes[2].error.startswith("not run")
        assert sandbox.get("x") == 1 and not sandbox.has("y")
    finally:
        sandbox.close()


# -- time charged is the time the submission ran ---------------------------------------------


def _burners(count: int, cpu: int) -> list[subprocess.Popen]:
    """CPU burners of the test's own, pinned to processor `cpu`, each in a session of its own
    (with the kernel's autogroups, one session's processes share one processor share)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                              start_new_session=True) for _ in range(count)]
    for proc in procs:
        os.sched_setaffinity(proc.pid, {cpu})
    return procs


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
        proc.wait()


@linux_root
@pytest.mark.slow
def test_a_call_kept_from_the_processor_by_other_work_is_not_a_timeout(pool):
    """Pinned to one processor with four CPU burners, a call needing 0.6 s of CPU takes
    longer than its 1.5 s limit on the clock, but it ran less than that: no time-out."""
    limits = Limits(call_seconds=1.5, submission_seconds=60)
    sandbox = started(pool, """
        import time
        def work():
            began = time.process_time()
            while time.process_time() - began < 0.6:
                pass
            return 'done'
        """, limits=limits)
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(sandbox.pid, {cpu})
    burners = _burners(4, cpu)
    try:
        began = time.monotonic()
        assert sandbox.call("work") == "done"
        waited = time.monotonic() - began
    finally:
        _stop(burners)
        sandbox.close()
    assert waited > limits.call_seconds  # the premise: on the clock, it ran past its limit


@linux_root
@pytest.mark.slow
def test_an_endless_loop_kept_from_the_processor_is_still_charged_its_limit(pool):
    limits = Limits(call_seconds=0.5, submission_seconds=60, interrupt_grace_seconds=0.3)
    sandbox = started(pool, "def spin():\n    while True:\n        pass", limits=limits)
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(sandbox.pid, {cpu})
    burners = _burners(2, cpu)
    try:
        before = cpu_seconds_of(sandbox.pid)
        with pytest.raises(StudentTimeout):
            sandbox.call("spin")
        spent = cpu_seconds_of(sandbox.pid) - before
    finally:
        _stop(burners)
        sandbox.close()
    assert 0.4 <= spent <= limits.call_seconds + limits.interrupt_grace_seconds + 0.3


# -- CPU share -------------------------------------------------------------------------------


def _cpu_of_marked(marker: str) -> float:
    total = 0.0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    total += cpu_seconds_of(int(entry))
            except OSError:
                pass
    return total


@linux_root
@pytest.mark.slow
def test_a_submission_beside_a_fork_hog_gets_an_equal_share_of_the_processor(pool):
    """Both submissions pinned to one processor: the hog's eight burners together get about
    as much CPU as the honest submission's single process (its cgroup's share), not 8x."""
    if not pool.cgroups:
        pytest.skip("no cgroups here: the processor share is not isolated (see the warning)")
    marker = f"sdpa-hog-{os.getpid()}"
    limits = Limits(call_seconds=30, submission_seconds=60)
    hog = started(pool, f"""
        import subprocess
        def burn():
            for _ in range(8):
                subprocess.Popen(['sh', '-c', 'while :; do :; done', {marker!r}])
        """, limits=limits)
    honest = started(pool, """
        import time
        def work():
            began = time.process_time()
            while time.process_time() - began < 1.0:
                pass
        """, limits=limits)
    cpu = min(os.sched_getaffinity(0))
    try:
        for sandbox in (hog, honest):
            os.sched_setaffinity(sandbox.pid, {cpu})
        hog.call("burn")
        time.sleep(0.2)
        hog_before, honest_before = _cpu_of_marked(marker), cpu_seconds_of(honest.pid)
        honest.call("work")
        hog_cpu = _cpu_of_marked(marker) - hog_before
        honest_cpu = cpu_seconds_of(honest.pid) - honest_before
    finally:
        hog.close()
        honest.close()
    assert _cpu_of_marked(marker) == 0.0  # the burners died with their submission
    assert honest_cpu >= 0.5 * hog_cpu, (honest_cpu, hog_cpu)


@pytest.mark.slow
def test_an_honest_submission_graded_beside_a_hog_keeps_every_point(pool):
    """Two students graded at once by one pool: plain loops beside forked CPU burners."""
    hog_source = "\n".join([pieces.IMPORTS, """
import os
for _ in range(12):
    if os.fork() == 0:
        while True:
            pass
"""])
    reports = {}

    def grade(name, source):
        reports[name] = grade_content(source, name=f"{name}.py", pool=pool)

    threads = [threading.Thread(target=grade, args=("hog", hog_source)),
               threading.Thread(target=grade, args=("honest", case("plain-loops").source))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert reports["honest"]["score"] == 20, reports["honest"]["exercises"]
