"""Resource limits for student code, declared once with their defaults and help text."""

from __future__ import annotations

from dataclasses import dataclass, field, fields


def _limit(default, help_text: str):
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class Limits:
    """Every limit the sandbox applies to one submission.

    Time limits are enforced by the trusted side (SIGINT, then SIGKILL). A cell or a call is
    charged the time its process ran or chose to wait, not the time it waited for a processor
    that other work held; the submission's budget is plain wall-clock time. The other limits
    are the kernel's: per submission in its cgroup where cgroups are available, per process
    in rlimits everywhere, and the size of its private file systems.
    """

    cell_seconds: float = _limit(10.0, "Seconds one notebook cell may run (time it waited for "
                                 "a processor held by other work excluded).")
    call_seconds: float = _limit(5.0, "Seconds one call of a student function may run (time "
                                 "it waited for a processor held by other work excluded).")
    submission_seconds: float = _limit(
        60.0, "Wall-clock seconds all of a submission's cells and calls may run together; "
        "once spent, what ran keeps its points and the rest is a time-out."
    )
    interrupt_grace_seconds: float = _limit(
        0.5, "After a time-out, seconds to wait for KeyboardInterrupt before killing the process."
    )
    cpu_seconds: int = _limit(
        30, "CPU seconds one worker process may use in total (RLIMIT_CPU); a respawn starts afresh."
    )
    memory_mb: int = _limit(
        512, "Memory the submission may use: in all its processes together (with its /tmp "
        "and /dev/shm files on top) where cgroups are available, and in each process as "
        "address space on top of the pre-imported runtime (RLIMIT_AS)."
    )
    processes: int = _limit(
        32, "Processes and threads the submission may have at once (its cgroup's pids.max "
        "where available, and RLIMIT_NPROC in a user namespace or uid of its own)."
    )
    disk_mb: int = _limit(64, "Size of the private /tmp holding the workdir, and the largest "
                          "file the submission may write (RLIMIT_FSIZE).")
    open_files: int = _limit(256, "File descriptors per process (RLIMIT_NOFILE).")
    output_bytes: int = _limit(
        8192, "Bytes of student stdout/stderr kept (per sandbox, and per cell or call); the rest "
        "is dropped but counted."
    )
    max_restarts: int = _limit(
        5, "Times the worker may be killed and respawned (replaying the cells that succeeded)."
    )
    max_transfer_bytes: int = _limit(
        64 * 2**20, "Largest message accepted from the worker (arrays included)."
    )
    max_str_chars: int = _limit(100_000, "Longest string accepted from the worker.")

    @classmethod
    def help(cls) -> dict[str, str]:
        """Map each limit's name to its help text (for the CLI and the docs)."""
        return {f.name: f.metadata["help"] for f in fields(cls)}
