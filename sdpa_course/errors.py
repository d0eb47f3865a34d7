"""The kit's two errors, at the bottom of `sdpa_course`: every package may import this module,
and it imports nothing of the kit.

- `KitError`: something the user can fix (a missing course directory, an unreachable
  scheduler, ...); the command line prints it without a traceback and exits with status 2.
- `GradingFailed`: one submission could not be graded; the message says why, and the student
  is recorded as failed (never as a plain 0).
"""

from __future__ import annotations


class KitError(Exception):
    """An error the user can fix; printed without a traceback, exit status 2."""


class GradingFailed(Exception):
    """The kit could not grade a submission; the message says why.

    `retry` is True when the kit, not the submission, is at fault: a rerun grades it again.
    """

    def __init__(self, message: str, *, retry: bool = False):
        super().__init__(message)
        self.retry = retry
