"""Run untrusted student code in an isolated process and get plain data back.

The placeholder docstring; see the end of the session for the full text.
"""

from .errors import (
    ForbiddenImport,
    MissingName,
    StudentDied,
    StudentError,
    StudentMemoryLimit,
    StudentRaised,
    StudentTimeout,
    Unserializable,
)
from .limits import Limits
from .pool import SandboxPool, default_pool
from .sandbox import Cell, CellOutcome, Sandbox

__all__ = [
    "Cell", "CellOutcome", "ForbiddenImport", "Limits", "MissingName", "Sandbox",
    "SandboxPool", "StudentDied", "StudentError", "StudentMemoryLimit", "StudentRaised",
    "StudentTimeout", "Unserializable", "default_pool",
]
