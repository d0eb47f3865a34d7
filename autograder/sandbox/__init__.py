"""Run untrusted student code in an isolated process and get plain data back.

Usage::

    with SandboxPool() as pool:                      # optional; one zygote for many students
        with Sandbox([Cell(src, "cell 1"), ...], limits=Limits(), pool=pool) as sandbox:
            outcomes = sandbox.start()               # every cell, top to bottom, one namespace
            out, attn = sandbox.call("attention", Q, K, V, mask=mask, readonly=True)

Beyond the contract: `CellOutcome.output` (a cell's captured output), `Sandbox.last_output`
(that of the latest query), `Sandbox.isolation` (the mode below), `Sandbox.restarts`,
`Sandbox.cpu_seconds` (CPU used by its workers), `Sandbox.uid`, `Limits.help()` (help text per
limit) and `SandboxPool.start(wait=False)`, which boots the zygote (about half a second of
numpy and matplotlib imports) while the caller goes on reading the submission.

Execution model. Cells run in order in one namespace, like a notebook. An error, exit or
time-out in a cell is recorded in its `CellOutcome` and execution goes on with the next cell.
A time-out first sends SIGINT (KeyboardInterrupt); if the worker does not answer within
`interrupt_grace_seconds` it is killed. Whenever the worker dies (kill, os._exit, a signal,
the CPU limit), the next cell or call runs in a fresh worker in which the cells that succeeded
have been replayed (their output discarded), at most `max_restarts` times; the failing call
raises `StudentTimeout`, `StudentDied` or `StudentMemoryLimit`, so results earned before are
kept. Files a cell wrote to its workdir do not survive a respawn.

What crosses back. Only plain data, as JSON plus raw array bytes (`codec`; never pickle):
None, bool, int, float, complex, str, list, tuple, dict with str keys, numpy scalars and arrays
of bool/int/uint/float/complex dtypes. Types are checked exactly, so ndarray subclasses, masked
arrays, float subclasses with a custom __eq__ and other objects raise `Unserializable`, whose
diagnosis is the sandbox's own code ``unsupported-type``. The trusted side validates every
field and runs no student code. Arguments are sent the same way; with ``readonly=True`` their
arrays arrive read-only and cannot be made writable.

Isolation on Linux as root (mode ``namespaces``, the one this kit is graded with):
- student code runs in a worker forked from a zygote that pre-imported numpy and
  matplotlib (Agg) and never ran student code, so one student's monkeypatching cannot reach
  another student or the trusted process;
- network: a network namespace with only a loopback device that is down: every connection
  fails;
- files: a mount namespace whose root is a fresh tmpfs holding read-only, nosuid bind mounts
  of /usr, /lib*, /bin, /sbin, the Python installation and the virtualenv, a few /etc files,
  /dev/null, zero, full, random, urandom, and the zygote's matplotlib font-list cache (a host
  directory with mode 0700: student code cannot enter it). The kit's packages (even when
  installed into the virtualenv), its checkout (hidden suites, answer key, tests), course
  directories and the gradebook are simply not there; a private size-limited /tmp holds the
  empty workdir (HOME);
- processes: each worker is the init of its own PID namespace (and has its own IPC
  namespace and /proc), so closing the sandbox kills every process the submission started,
  including setsid'd daemons; it runs as a random spare uid (>= 1,000,000) with no
  capabilities and no_new_privs, so RLIMIT_NPROC bounds fork bombs;
- rlimits: CPU seconds, address space (on top of the pre-imported runtime), processes, file
  size, open files, no core dumps; one BLAS thread; a scrubbed environment;
- imports: a meta-path finder refuses `sdpa_ref`, `autograder` and `sdpa_course` in any
  spelling and an audit hook (which Python cannot remove) refuses import statements of them
  even if the finder is taken out; both record the attempt (`forbidden_imports`) and the
  student gets a ModuleNotFoundError. Path tricks find no file to load;
- magics: `get_ipython()` is a stub: line and cell magics are ignored (%time, %%time, %timeit,
  %%capture still run their code once), shell commands (`!cmd`) are refused with a note on
  stderr; `plt.show()` does nothing.

How it degrades (with a RuntimeWarning, once per message, also listed in `Sandbox.warnings`):
- ``uid`` (root, but namespaces refused, e.g. a container without CAP_SYS_ADMIN): spare uid,
  rlimits, kill-by-uid at the end, import blocking and the same audit-hook refusals as
  ``none``. (The Python installation must be readable by other users: a pyenv under /root,
  as on the development machine, is not.)
- ``none`` (not root, not Linux, or ``SandboxPool(isolation="none")``): rlimits, a new session
  killed as a process group, import blocking, and an audit hook that refuses to open or list
  the hidden paths and refuses what it could not follow: starting processes, sending signals,
  sockets, loading native code through ctypes. Student code runs as the grader's user; a
  determined attacker with a C extension already loaded could get past the hook. Use it for
  development only.
Windows is not supported (no fork).
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
