"""One run at a time per course: `grade` and `feedback` hold an exclusive lock while they write.

Two runs at once (a cron job and a manual one, two terminals) both wrote the gradebook: one
died with pages of SQLAlchemy tracebacks (a UNIQUE constraint, a deleted row) and the other
recorded a student as failed. The lock is `flock` on a file in the course's
`reports/<assignment>/`, so the kernel releases it whenever the run ends, however it ends (no
stale lock file to delete); the file holds the process id of the run that took it, for the
message the second run prints before it stops, having written nothing.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sdpa_course.errors import KitError

LOCK_FILE = ".run.lock"


@contextmanager
def course_run_lock(reports_dir: Path, command: str) -> Iterator[None]:
    """Hold the course's run lock for the `with` block; KitError if another run holds it."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    path = reports_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            raise KitError(
                f"another `sdpa-course grade` or `feedback` is running on this course "
                f"(process {holder or '?'}): `{command}` waits for nothing and changed nothing; "
                "run it again once that one has finished"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock (processes forked meanwhile have ended with the run)
