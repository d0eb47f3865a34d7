"""Errors raised on the trusted side: student code misbehaving, or no isolation to grade in.

Each `StudentError` carries `.diagnosis`, a CONTRACT section 3 code the grading engine can
report as is. `Unserializable` uses a code of its own, ``unsupported-type`` (added by the
sandbox): the student's code ran, but what it returned cannot cross back as plain data.
`IsolationUnavailable` is the kit's refusal to run student code at all, with what to do.
"""

from __future__ import annotations


class StudentError(Exception):
    """Base class: the student's code, not the kit, caused this failure."""

    diagnosis = "crashed"


class StudentRaised(StudentError):
    """The student's code raised an exception (type_name, message)."""

    diagnosis = "crashed"

    def __init__(self, type_name: str, message: str, where: str = ""):
        self.type_name = type_name
        self.message = message
        self.where = where
        text = f"{type_name}: {message}" if message else type_name
        super().__init__(f"{text} ({where})" if where else text)


class StudentTimeout(StudentError):
    """The student's code ran past its wall-clock or CPU limit."""

    diagnosis = "timeout"


class StudentMemoryLimit(StudentError):
    """The student's code ran past its memory limit."""

    diagnosis = "memory-limit"


class StudentDied(StudentError):
    """The student's process ended (os._exit, a signal); the message says how."""

    diagnosis = "crashed"


class MissingName(StudentError):
    """The submission does not define a required top-level name."""

    diagnosis = "missing-name"

    def __init__(self, name: str):
        self.name = name
        super().__init__(f"the submission does not define `{name}`")


class Unserializable(StudentError):
    """A value cannot cross back as plain data (ndarray subclass, custom object, ...)."""

    diagnosis = "unsupported-type"


class ForbiddenImport(StudentError):
    """The student's code tried to import the reference or the grader."""

    diagnosis = "forbidden-import"

    def __init__(self, module: str):
        self.module = module
        super().__init__(f"importing `{module}` is not allowed in a submission")


class IsolationUnavailable(RuntimeError):
    """This machine refuses the isolation student code is graded in; the message says what
    to do (raised when a `SandboxPool` starts, before any student code runs)."""

    ADVICE = (
        "Student code is only run inside Linux user namespaces (with their own mount, PID, "
        "IPC and network namespaces). To grade here, enable unprivileged user namespaces "
        "(sysctl -w user.max_user_namespaces=15000; sysctl -w "
        "kernel.unprivileged_userns_clone=1 where that setting exists; on Ubuntu 24.04 and "
        "later sysctl -w kernel.apparmor_restrict_unprivileged_userns=0), or run the grader "
        "as root. Or, accepting that student code can then read and change your files and "
        "reach the network, opt out explicitly: `sdpa-course grade --unsafe-no-isolation`, "
        "SandboxPool(isolation='unsafe-none')."
    )

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"sandbox isolation is unavailable: {reason}. {self.ADVICE}")
