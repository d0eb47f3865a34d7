"""A real Dask cluster on loopback for the tests: `dask scheduler` and `dask worker` processes.

Each worker is its own process group (the `dask worker` nanny and its worker process), started
in its own temporary working directory with `--nworkers 1 --nthreads 1 --no-dashboard`, so a
test can kill one outright, as a machine failing would. The scheduler binds a port of its own
choosing (`--port 0`) and writes its address to a scheduler file; every process keeps its
scratch space (`dask-scratch-space`) in its own working directory.

Killing a group outright spares multiprocessing's resource tracker in it: the nanny's
semaphores (`/dev/shm/sem.mp-*`, made by its spawn context) are unlinked only by that tracker
once the processes holding them are gone, so a SIGKILL to the whole group left six in
/dev/shm per worker. `kill_group` waits until every process of the group is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from leftovers import claim_shared_memory_of

DASK = str(Path(sys.executable).parent / "dask")
START_SECONDS = 60.0


def _start(command: list[str], cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "DASK_TEMPORARY_DIRECTORY": str(cwd)}
    log = (cwd / "dask.log").open("w")
    return subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def group_members(group: int) -> list[int]:
    """The processes of a process group (Linux's /proc), zombies left out."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(int(entry))
    return members


def _is_resource_tracker(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"multiprocessing.resource_tracker" in cmdline.read()
    except OSError:
        return False


def kill_group(group: int, sig: int = signal.SIGKILL, timeout: float = 30.0) -> None:
    """Send `sig` to every process of the group but multiprocessing's resource tracker (which
    unlinks the semaphores the others leave once they are gone), and wait until the whole
    group is gone; SIGKILL whatever of it is left after `timeout`. What the group held in
    /dev/shm is claimed as the session's first: the session's end checks it is gone."""
    claim_shared_memory_of(group_members(group))
    for pid in group_members(group):
        if not _is_resource_tracker(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
    if not wait_until(lambda: not group_members(group), timeout):
        for pid in group_members(group):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not group_members(group), timeout)


def _kill_group(process: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Stop one of our `dask` processes and its group, and reap it."""
    kill_group(process.pid, sig)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        kill_group(process.pid, signal.SIGKILL)
        process.wait()


def _address_in(scheduler_file: Path) -> str:
    """The address in the scheduler's file, or "" while it is not (completely) written."""
    try:
        return json.loads(scheduler_file.read_text())["address"]
    except (OSError, ValueError, KeyError):
        return ""


@dataclass
class DaskCluster:
    root: Path
    address: str = ""
    scheduler: subprocess.Popen | None = None
    workers: list[subprocess.Popen] = field(default_factory=list)

    def start_scheduler(self) -> DaskCluster:
        folder = self.root / "scheduler"
        folder.mkdir(parents=True, exist_ok=True)
        info = folder / "scheduler.json"
        self.scheduler = _start([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0",
                                 "--no-dashboard", "--scheduler-file", str(info)], folder)
        if not wait_until(lambda: _address_in(info) or self.scheduler.poll() is not None,
                          START_SECONDS):
            raise RuntimeError(f"the Dask scheduler wrote no address in {START_SECONDS:.0f} s:"
                               f"\n{self.logs()}")
        if self.scheduler.poll() is not None:
            raise RuntimeError(f"the Dask scheduler exited:\n{self.logs()}")
        self.address = _address_in(info)
        return self

    def add_worker(self) -> subprocess.Popen:
        folder = Path(tempfile.mkdtemp(prefix=f"worker{len(self.workers)}-", dir=self.root))
        worker = _start([DASK, "worker", self.address, "--nworkers", "1", "--nthreads", "1",
                         "--no-dashboard", "--local-directory", str(folder)], folder)
        self.workers.append(worker)
        return worker

    def wait_for_workers(self, n: int) -> None:
        from distributed import Client

        with Client(self.address, timeout=START_SECONDS, set_as_default=False) as client:
            client.wait_for_workers(n, timeout=START_SECONDS)

    def worker_group(self, worker_address: str) -> int:
        """The process group (one `dask worker` of ours) that runs the worker at that address."""
        from distributed import Client

        with Client(self.address, timeout=START_SECONDS, set_as_default=False) as client:
            pid = client.run(os.getpid, workers=[worker_address])[worker_address]
        return os.getpgid(pid)

    def kill_scheduler(self) -> None:
        _kill_group(self.scheduler)

    def stop(self) -> None:
        for worker in self.workers:
            _kill_group(worker, signal.SIGTERM)
        if self.scheduler is not None:
            _kill_group(self.scheduler, signal.SIGTERM)

    def logs(self) -> str:
        return "\n".join(f"--- {path}\n{path.read_text()[-3000:]}"
                         for path in sorted(self.root.rglob("dask.log")))


def start_cluster(root: Path, workers: int) -> DaskCluster:
    """A scheduler and `workers` workers on 127.0.0.1, all joined; `stop()` when done."""
    cluster = DaskCluster(Path(root)).start_scheduler()
    try:
        for _ in range(workers):
            cluster.add_worker()
        cluster.wait_for_workers(workers)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def wait_until(condition, timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return False
