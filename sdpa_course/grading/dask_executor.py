"""`sdpa-course grade --scheduler ADDRESS`: the grading step on a Dask cluster.

`DaskExecutor` has the local `WorkerPool`'s interface (`submit(key, path)`, `poll(timeout)`,
`busy`, a context manager), so the class-grading pipeline (`grade._GradingRun`) is the same
with either: only where the engine runs changes. Each submission travels as its contents
(bytes: workers share no filesystem with the instructor) to `dask_worker.grade_task`; a plain
report comes back, and the instructor's process stays the only gradebook writer.

Faults:
- a worker that dies mid-task: the scheduler runs its tasks again on another worker (the
  tasks are pure); after `distributed.scheduler.allowed-failures` deaths the submission is
  reported failed with retry, so the next run grades it again;
- a fault of the kit on a worker: Dask retries the task once (`retries`), then likewise;
- each key gives exactly one outcome, however often its task ran;
- the scheduler going away stops the run (`KitError`): every student recorded so far is
  complete in the gradebook, the others have no record, and rerunning grades just those.

Dask is an optional extra (`sdpa-course[dask]`): `grade` imports this module only for
`--scheduler`, and this module imports Dask.
"""

from __future__ import annotations

import logging
import queue
from concurrent.futures import CancelledError
from pathlib import Path

from dask.base import tokenize
from distributed import Client
from distributed.scheduler import KilledWorker

from sdpa_course.errors import KitError
from sdpa_course.grading.dask_worker import PLUGIN_NAME, GradingPlugin, KitMismatch, grade_task
from sdpa_course.grading.kit_version import kit_fingerprint
from sdpa_course.grading.workers import Outcome

CONNECT_SECONDS = 10.0
WORKERS_SECONDS = 60.0


class DaskExecutor:
    """`submit(key, path)` then `poll()` for outcomes until `busy` is False, on Dask workers."""

    def __init__(self, scheduler: str, *, retries: int = 1,
                 connect_timeout: float | None = None, workers_timeout: float | None = None):
        self.address = scheduler
        self.retries = retries
        self.connect_timeout = connect_timeout or CONNECT_SECONDS
        self.workers_timeout = workers_timeout or WORKERS_SECONDS
        self.expected = kit_fingerprint()
        self.client = None
        self.futures: dict[str, object] = {}  # key -> its Future, until its outcome is taken
        self.finished: queue.SimpleQueue[str] = queue.SimpleQueue()  # keys, from Dask's thread

    def __enter__(self) -> DaskExecutor:
        try:
            self._connect()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def _connect(self) -> None:
        try:
            self.client = Client(self.address, timeout=self.connect_timeout,
                                 set_as_default=False)
        except (OSError, TimeoutError, ValueError) as err:
            raise KitError(f"cannot reach the Dask scheduler at {self.address}: {err}. Start "
                           f"one with `dask scheduler` and workers with `dask worker "
                           f"{self.address}`") from None
        try:
            self.client.wait_for_workers(1, timeout=self.workers_timeout)
        except TimeoutError:
            raise KitError(f"no Dask worker joined the scheduler at {self.address} within "
                           f"{self.workers_timeout:g} s: start some with `dask worker "
                           f"{self.address}`") from None
        try:
            self.client.register_plugin(GradingPlugin(self.expected),
                                        name=PLUGIN_NAME)
        except KitMismatch as err:
            raise KitError(str(err)) from None
        except Exception as err:
            raise KitError(f"a Dask worker could not set up grading: {type(err).__name__}: "
                           f"{err}. Workers need the kit installed: pip install "
                           f"'sdpa-course[dask]'") from None

    def submit(self, key: str, path: Path) -> None:
        """Ship the notebook at `path` (its bytes) to be graded; its outcome comes as `key`."""
        if key in self.futures:  # already on its way: one outcome per key
            return
        content = Path(path).read_bytes()
        args = (content, str(path), self.expected)
        future = self.client.submit(grade_task, *args, key=f"sdpa-grade-{key}-{tokenize(*args)}",
                                    pure=True, retries=self.retries)
        self.futures[key] = future
        future.add_done_callback(lambda _future, key=key: self.finished.put(key))

    @property
    def busy(self) -> bool:
        return bool(self.futures)

    def poll(self, timeout: float = 0.0) -> list[Outcome]:
        """Outcomes that are ready (waiting up to `timeout` seconds for the first)."""
        keys = []
        try:
            keys.append(self.finished.get(timeout=timeout) if timeout > 0
                        else self.finished.get_nowait())
            while True:
                keys.append(self.finished.get_nowait())
        except queue.Empty:
            pass
        if not keys and self.futures and self.client.status in ("closing", "closed"):
            raise self._scheduler_lost()
        outcomes = []
        for key in keys:
            future = self.futures.get(key)
            if future is None:  # a second notice for a key already taken
                continue
            outcomes.append(self._outcome(key, future))
            del self.futures[key]  # dropping the future releases its result on the cluster
        return outcomes

    def _outcome(self, key: str, future) -> Outcome:
        if future.status == "cancelled":
            raise self._scheduler_lost()
        try:
            result = future.result()
        except CancelledError:
            raise self._scheduler_lost() from None
        except KitMismatch as err:
            raise KitError(str(err)) from None
        except KilledWorker:
            return Outcome(key, error="the Dask workers grading it died, more than once: "
                                      "see the workers' logs", retry=True)
        except Exception as err:
            return Outcome(key, error=f"the kit failed on a Dask worker: "
                                      f"{type(err).__name__}: {err}", retry=True)
        return Outcome(key, report=result.get("report"), error=result.get("error"))

    def _scheduler_lost(self) -> Exception:
        return KitError(
            f"the Dask scheduler at {self.address} went away; {len(self.futures)} submissions "
            f"were not graded. Every student recorded before that is complete in the "
            f"gradebook: rerun the same command, once the scheduler is back, to grade the rest")

    def close(self) -> None:
        if self.client is not None:
            # With the scheduler gone, closing cancels the client's reconnection attempts,
            # which Dask logs as errors with tracebacks: the run has said why it stopped.
            logging.disable(logging.ERROR)
            try:
                self.client.close(timeout=5)
            except Exception:  # a scheduler already gone: nothing left to close cleanly
                pass
            finally:
                logging.disable(logging.NOTSET)
            self.client = None
        self.futures.clear()
