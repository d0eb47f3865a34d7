"""Grading processes: each submission graded by exactly one worker, with the engine.

Workers only run the engine (each keeps one sandbox pool for all its submissions) and send
back plain reports; they never touch the gradebook. A worker that dies or runs past the
deadline is replaced, and its submission comes back as failed with the reason.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path

from autograder.engine import grade_submission
from sdpa_course.engine_call import Engine, grade_path, sandbox_pool
from sdpa_course.errors import GradingFailed


@dataclass
class Outcome:
    """One submission's result from a worker: a report, or why there is none."""

    key: str
    report: dict | None = None
    error: str | None = None
    retry: bool = False  # the failure came from the kit, not the submission: grade again later


def _worker_main(conn, engine: Engine) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    pool = sandbox_pool()
    try:
        while True:
            try:
                task = conn.recv()
            except EOFError:
                break
            if task is None:
                break
            key, path = task
            try:
                conn.send(Outcome(key, report=grade_path(Path(path), engine=engine, pool=pool)))
            except GradingFailed as err:
                conn.send(Outcome(key, error=str(err), retry=err.retry))
            except Exception as err:
                conn.send(Outcome(key, error=f"the kit failed while grading: "
                                              f"{type(err).__name__}: {err}", retry=True))
    finally:
        if pool is not None:
            pool.close()


class _Worker:
    def __init__(self, context, engine: Engine):
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(child, engine))
        self.process.start()
        child.close()
        self.task: tuple[str, str] | None = None
        self.started = 0.0

    def send(self, task: tuple[str, str]) -> None:
        self.task = task
        self.started = time.monotonic()
        try:
            self.conn.send(task)
        except OSError:  # the process is gone; poll() reports it with this task
            pass

    def stop(self, *, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(timeout=5)
            if self.process.is_alive():
                self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


class WorkerPool:
    """`submit(key, path)` then `poll()` for outcomes until `busy` is False.

    `engine` grades one notebook file in a worker: `autograder.engine.grade_submission`
    unless a test passes a stand-in.
    """

    def __init__(self, workers: int | None, *, deadline: float,
                 engine: Engine = grade_submission):
        self.size = max(1, workers or os.cpu_count() or 1)
        self.engine = engine
        self.deadline = deadline
        # fork: no re-import of the caller's main module, and a quick start; the pool is
        # entered before the gradebook is opened, so no database connection is inherited.
        methods = multiprocessing.get_all_start_methods()
        self.context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self.queue: deque[tuple[str, str]] = deque()
        self.workers: list[_Worker] = []

    def __enter__(self) -> WorkerPool:
        while len(self.workers) < self.size:
            self.workers.append(_Worker(self.context, self.engine))
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(kill=exc_type is not None)

    def submit(self, key: str, path: Path) -> None:
        self.queue.append((key, str(path)))
        self._dispatch()

    @property
    def busy(self) -> bool:
        return bool(self.queue) or any(w.task for w in self.workers)

    def _dispatch(self) -> None:
        while self.queue:
            idle = next((w for w in self.workers if w.task is None), None)
            if idle is None and len(self.workers) < self.size:
                idle = _Worker(self.context, self.engine)
                self.workers.append(idle)
            if idle is None:
                return
            idle.send(self.queue.popleft())

    def _replace(self, worker: _Worker) -> None:
        worker.stop(kill=True)
        self.workers.remove(worker)

    def poll(self, timeout: float = 0.0) -> list[Outcome]:
        """Outcomes that are ready (waiting up to `timeout` seconds for the first)."""
        running = [w for w in self.workers if w.task]
        if not running:
            self._dispatch()
            return []
        waits = [w.conn for w in running] + [w.process.sentinel for w in running]
        wait(waits, timeout=timeout)
        outcomes = []
        now = time.monotonic()
        for worker in running:
            key = worker.task[0]
            died = False
            if worker.conn.poll():
                try:
                    outcomes.append(worker.conn.recv())
                    worker.task = None
                    continue
                except (EOFError, OSError):  # the worker's end closed: it is gone
                    worker.process.join(timeout=2)
                    died = True
            if died or not worker.process.is_alive():
                code = worker.process.exitcode
                outcomes.append(Outcome(key, error=f"the grading process died (exit code "
                                                   f"{code}) while grading", retry=True))
                self._replace(worker)
            elif now - worker.started > self.deadline:
                outcomes.append(Outcome(key, error=f"grading took longer than "
                                                   f"{self.deadline:g} s and was stopped",
                                        retry=True))
                self._replace(worker)
        self._dispatch()
        return outcomes

    def close(self, *, kill: bool = False) -> None:
        for worker in self.workers:
            worker.stop(kill=kill)
        self.workers.clear()
