"""`MemoryGauge`: how far one call raised its worker's memory, read from outside the worker.

Trusted side only. tracemalloc, which the memory test reads, runs inside the student's own
process, where code can reset its peak, patch what reads it, or allocate where it does not
look (an anonymous `mmap`, a forked process). This gauge is the kernel's figure instead: the
worker's resident-set high-water mark (VmHWM in /proc/PID/status), which counts every page
the process touches (numpy's buffers, mmap and shared memory, code paged in), reset before
the call by writing "5" to /proc/PID/clear_refs. Neither file needs a privilege: the grader
owns its worker (as an ordinary user the worker runs under the grader's host uid; as root
the files are root's), and both are opened when the worker starts, before any student code
ran, so a worker that later makes itself non-dumpable (its /proc files become root's) is
still measured.

A high-water mark covers one process, so during a measured call the worker must be alone:
before the call the gauge lowers the worker's hard RLIMIT_NPROC to 1 (through prlimit, which
the grader may do to its own worker in every mode; no process lowers a hard limit back up
without CAP_SYS_RESOURCE, which the worker lacks), so that it can start no process and no
thread for the rest of its life, and it refuses to measure (`Unmeasurable`) a worker that
has a thread or a child already (started by a cell). The same holds as root, as an ordinary
user and without CAP_SYS_ADMIN, with or without cgroups; a respawned worker starts afresh.

The worker cannot reset its own mark: Landlock lets it write only under /tmp and /dev/shm,
so its /proc/self/clear_refs is closed to it (where the kernel lacks Landlock, a dumpable
worker could, and the sandbox's warnings say so).

Memory the submission allocated before the call and reuses during it (a module-level buffer
the call writes its scores into) is already resident, so it raises no high-water mark, and
tracemalloc does not count it either. So the gauge also counts the pages the call touched:
`begin` clears the referenced bit of every page of the worker (writing "1" to the same
clear_refs), and `touched` sums, over the worker's mappings in /proc/PID/smaps (opened with
the others), the smaller of each mapping's referenced and dirty memory: memory the process
wrote at some time (its heap, its arrays, its /tmp and /dev/shm files) that the call read or
wrote, whenever it was allocated; clean pages of code and libraries, which every call runs
through, are not dirty and do not count. Freed during the call, a page no longer shows
there: the high-water mark covers those.

Not counted: kernel memory the call fills without mapping it (pipe buffers, files written to
its tmpfs with write()).
"""

from __future__ import annotations

import os
import resource


class Unmeasurable(Exception):
    """The submission keeps the gauge from measuring this call; the message says how."""


class MemoryGauge:
    """Opened on a worker's host pid right after it started; `begin` then `grown` per call.

    `unavailable` says why this system offers no gauge (no /proc: the kit's side, not the
    student's); "" when it works.
    """

    def __init__(self, pid: int):
        self.pid = pid
        self.unavailable = ""
        self._clear_refs = self._status = self._children = self._smaps = -1
        try:
            self._clear_refs = os.open(f"/proc/{pid}/clear_refs", os.O_WRONLY | os.O_CLOEXEC)
            self._status = os.open(f"/proc/{pid}/status", os.O_RDONLY | os.O_CLOEXEC)
            self._smaps = os.open(f"/proc/{pid}/smaps", os.O_RDONLY | os.O_CLOEXEC)
            self._children = os.open(f"/proc/{pid}/task/{pid}/children",
                                     os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            self.close()
            self.unavailable = (f"this system does not let the grader read a process's memory "
                                f"high-water mark ({exc.strerror}: {exc.filename})")

    def _read(self, fd: int) -> str:
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks).decode("ascii", errors="replace")

    def _status_field(self, text: str, key: str) -> int:
        for line in text.splitlines():
            name, _, value = line.partition(":")
            if name == key:
                return int(value.split()[0])
        raise OSError(f"/proc/{self.pid}/status has no {key}")

    def begin(self) -> int:
        """Make the worker unable to start processes or threads, check it is alone, reset its
        high-water mark; the mark (bytes) the call starts from. `Unmeasurable` when it has a
        thread or a child; OSError when the worker is gone."""
        # prlimit takes a pid number: first make sure, through the descriptor opened on this
        # very process (a pid recycled since would give ESRCH here), that it is still there.
        self._read(self._status)
        resource.prlimit(self.pid, resource.RLIMIT_NPROC, (1, 1))
        status = self._read(self._status)
        threads = self._status_field(status, "Threads")
        if threads != 1:
            raise Unmeasurable(f"the submission's process runs {threads} threads (a cell "
                               f"started them); a measured call must run alone")
        if self._read(self._children).split():
            raise Unmeasurable("the submission's process has child processes (a cell started "
                               "them); a measured call must run alone")
        os.write(self._clear_refs, b"1")  # every page unreferenced: `touched` counts anew
        os.write(self._clear_refs, b"5")
        return self._status_field(self._read(self._status), "VmHWM") * 1024

    def grown(self, start: int) -> int:
        """Bytes the worker's high-water mark rose since `begin` returned `start`."""
        return max(self._status_field(self._read(self._status), "VmHWM") * 1024 - start, 0)

    def touched(self) -> int:
        """Bytes of written memory the worker referenced since `begin`: per mapping, the
        smaller of its Referenced and its dirty (Private_Dirty + Shared_Dirty) pages."""
        total = referenced = dirty = 0
        for line in self._read(self._smaps).splitlines():
            name, _, value = line.partition(":")
            if name == "Referenced":
                referenced = int(value.split()[0])
            elif name in ("Private_Dirty", "Shared_Dirty"):
                dirty += int(value.split()[0])
            elif " " in name or "-" in name:  # a mapping's first line: the last one's sums
                total += min(referenced, dirty)
                referenced = dirty = 0
        return (total + min(referenced, dirty)) * 1024

    def close(self) -> None:
        for name in ("_clear_refs", "_status", "_children", "_smaps"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)
