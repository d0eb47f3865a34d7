"""What the session's processes made outside the session's own folders, claimed as this
session's: on a machine shared with other test runs, a new entry in /dev/shm is checked at the
session's end only when a process of this session is known to have held it.

Named POSIX semaphores (`/dev/shm/sem.*`) and shared memory are mapped by the processes using
them, so /proc/<pid>/maps names them while those processes live: a helper that kills processes
claims what they held first (tests/dask_cluster.py), and the conftest claims what the session's
live processes hold at its end.
"""

from __future__ import annotations

import os
from pathlib import Path

SHARED_MEMORY = Path("/dev/shm")
CLAIMED: set[Path] = set()


def shared_memory_of(pid: int) -> set[Path]:
    """The /dev/shm files the process maps (an unlinked one shows as "(deleted)": left out)."""
    try:
        with open(f"/proc/{pid}/maps") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return set()
    return {Path(line.split(None, 5)[5]) for line in lines
            if len(line.split(None, 5)) == 6 and line.split(None, 5)[5].startswith(
                f"{SHARED_MEMORY}/") and not line.endswith("(deleted)")}


def claim_shared_memory_of(pids) -> None:
    for pid in pids:
        CLAIMED.update(shared_memory_of(pid))


def process_ids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
