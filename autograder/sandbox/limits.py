"""Resource limits for student code, declared once with their defaults and help text."""

from __future__ import annotations

from dataclasses import dataclass, field, fields


def _limit(default, help_text: str):
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class Limits:
    """Every limit the sandbox applies to one submission.

    Wall-clock limits are enforced by the trusted side (SIGINT, then SIGKILL); the others by
    the kernel inside the worker process (rlimits, tmpfs size).
    """

    cell_seconds: float = _limit(10.0, "Wall-clock seconds one notebook cell may run.")
    call_seconds: float = _limit(5.0, "Wall-clock seconds one call of a student function may run.")
    interrupt_grace_seconds: float = _limit(
        0.5, "After a time-out, seconds to wait for KeyboardInterrupt before killing the process."
    )
    cpu_seconds: int = _limit(
        30, "CPU seconds one worker process may use in total (RLIMIT_CPU); a respawn starts afresh."
    )
    memory_mb: int = _limit(
        512, "Address space (RLIMIT_AS) the submission may add on top of the pre-imported runtime."
    )
    processes: int = _limit(
        32, "Processes and threads the submission's uid may own at once (RLIMIT_NPROC)."
    )
    disk_mb: int = _limit(64, "Size of the private temporary file system holding the workdir.")
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
