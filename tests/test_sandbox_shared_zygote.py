"""Grading processes forked from a pool's owner share its zygote (`attach_channel` and
`SandboxPool.attached`), and lose none of the sandbox's isolation by it."""

from __future__ import annotations

import multiprocessing
import os
import sys
import time

import pytest

from autograder.sandbox import Cell, Limits, Sandbox, SandboxPool

FAST = Limits(cell_seconds=5, call_seconds=5, max_restarts=1)
fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                          reason="sharing a zygote needs fork")
PATCH = "import numpy\nnumpy.sum = lambda *a, **k: 99\n"
PROBE = ("import os, numpy\n"
         "def probe():\n"
         "    return [os.getuid(), int(numpy.sum([1, 1])), len(os.listdir('/proc/self/fd'))]\n")


def _grade(pool: SandboxPool, *sources: str) -> list:
    cells = [Cell(source, f"cell {i + 1}") for i, source in enumerate(sources)]
    with Sandbox(cells, limits=FAST, pool=pool) as sandbox:
        sandbox.start()
        return sandbox.call("probe")


def _in_grading_process(conn, parent: SandboxPool, channel, wait_for_parent: bool) -> None:
    try:
        if wait_for_parent:
            conn.recv()  # the parent has closed its pool meanwhile
        pool = SandboxPool.attached(parent, channel)
        try:
            patched = _grade(pool, PATCH + PROBE)
            clean = _grade(pool, PROBE)
            conn.send({"zygote": pool.zygote_pid, "mode": pool.mode, "patched": patched,
                       "clean": clean, "warnings": pool.warnings})
        finally:
            pool.close()
    except BaseException as exc:  # noqa: BLE001 - the test reads it
        conn.send({"error": f"{type(exc).__name__}: {exc}"})


def _fork_grading_process(pool: SandboxPool, *, wait_for_parent: bool = False):
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe()
    channel = pool.attach_channel()
    process = context.Process(target=_in_grading_process,
                              args=(theirs, pool, channel, wait_for_parent))
    process.start()
    channel.close()  # the grading process's now
    return process, ours


@fork
def test_a_forked_grading_process_forks_its_workers_from_the_parents_zygote():
    with SandboxPool() as pool:
        process, conn = _fork_grading_process(pool)
        answer = conn.recv()
        process.join(30)
        assert "error" not in answer, answer
        assert answer["zygote"] == pool.zygote_pid and answer["mode"] == pool.mode
        assert answer["warnings"] == pool.warnings
        # one student's monkeypatching reaches neither the next student nor this process
        assert answer["patched"][1] == 99 and answer["clean"][1] == 2
        assert _grade(pool, PROBE)[1] == 2
        # each worker holds its own descriptors only, as from the pool's own channel
        assert answer["clean"][2] == _grade(pool, PROBE)[2]
        if sys.platform.startswith("linux") and os.geteuid() == 0:  # a spare uid each
            assert answer["patched"][0] >= 1_000_000 and answer["clean"][0] >= 1_000_000
            assert answer["patched"][0] != answer["clean"][0]


@fork
def test_the_end_of_a_grading_process_leaves_the_zygote_serving_the_others():
    with SandboxPool() as pool:
        for _ in range(2):
            process, conn = _fork_grading_process(pool)
            assert "error" not in conn.recv()
            process.join(30)
            assert process.exitcode == 0
        assert _grade(pool, PROBE)[1] == 2
        assert pool._process.poll() is None  # the same zygote, still running


@fork
def test_a_grading_process_whose_shared_zygote_is_gone_starts_its_own():
    pool = SandboxPool()
    pool.start()
    process, conn = _fork_grading_process(pool, wait_for_parent=True)
    first_zygote = pool.zygote_pid
    pool.close()  # the zygote ends, and with it the channel
    conn.send("go")
    answer = conn.recv()
    process.join(60)
    assert "error" not in answer, answer
    assert answer["zygote"] not in (0, first_zygote)
    assert answer["patched"][1] == 99 and answer["clean"][1] == 2


def test_attached_is_for_a_forked_process_only():
    with SandboxPool() as pool:
        channel = pool.attach_channel()
        try:
            with pytest.raises(RuntimeError, match="forked"):
                SandboxPool.attached(pool, channel)
        finally:
            channel.close()


def _leave_a_worker_sleeping(conn, parent: SandboxPool, channel) -> None:
    pool = SandboxPool.attached(parent, channel)
    cells = [Cell("import time\ndef nap():\n    time.sleep(600)\n", "cell 1")]
    sandbox = Sandbox(cells, limits=Limits(call_seconds=600, submission_seconds=900), pool=pool)
    sandbox.start()
    conn.send(sandbox.pid)
    sandbox.call("nap")  # killed meanwhile: nothing after this runs


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


@fork
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_grading_process_killed_mid_call_takes_its_worker_along():
    """It never closes its sandbox: the zygote sees the worker's report pipe hang up."""
    with SandboxPool() as pool:
        context = multiprocessing.get_context("fork")
        ours, theirs = context.Pipe()
        channel = pool.attach_channel()
        process = context.Process(target=_leave_a_worker_sleeping,
                                  args=(theirs, pool, channel))
        process.start()
        channel.close()
        assert ours.poll(60), "the grading process sent no worker pid"
        worker = ours.recv()
        assert worker > 0 and _alive(worker)
        process.kill()
        process.join(30)
        deadline = time.monotonic() + 60  # a bound, not a speed test: it goes in milliseconds
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(worker)
        assert _grade(pool, PROBE)[1] == 2  # and the zygote serves on
