"""Run untrusted student code in an isolated process and get plain data back.

Usage::

    with SandboxPool() as pool:                      # optional; one zygote for many students
        with Sandbox([Cell(src, "cell 1"), ...], limits=Limits(), pool=pool) as sandbox:
            outcomes = sandbox.start()               # every cell, top to bottom, one namespace
            out, attn = sandbox.call("attention", Q, K, V, mask=mask, readonly=True)

Beyond the contract: `CellOutcome.output` (a cell's captured output), `CellOutcome.images`
(the figures it drew, within a budget for the whole submission: `images`) and
`CellOutcome.figures_dropped` (those beyond it), `Sandbox.output` (the cells' output only),
`Sandbox.last_output` (that of the latest query, kept out of `output`: a call runs on the
grader's inputs), `Sandbox.calls_printed`, `Sandbox.isolation` (the pool's mode),
`Sandbox.restarts`, `Sandbox.budget_left`,
`Sandbox.cpu_seconds` (CPU used by its workers), `Sandbox.uid`, `Limits.help()` (help text
per limit), `SandboxPool.layers` (what the kernel granted),
`SandboxPool.start(wait=False)`, which boots the zygote (a tenth of a second of numpy's
import) while the caller goes on reading the submission (importing this package
does not import numpy, so the zygote can start first), `SandboxPool.boot_seconds` (the
zygote's start, step by step) and `SandboxPool.attach_channel` / `SandboxPool.attached`, with
which processes forked from the pool's owner (grading processes) fork their workers from the
same zygote: one zygote's start for a whole class, the same isolation for every worker;
`SandboxPool(keep_warm=seconds)`, `SandboxPool.warm` and `warm`: a zygote left running after
its pool closes, which the next pool with the same configuration (the next `sdpa-course
check`) forks its workers from; `SandboxPool.prefork(limits)`, with which such a pool forks
its next worker at once, isolating itself while the caller imports the engine, for the first
`Sandbox` with those limits to take (its own uid and cgroup; ended with the pool if none).
`Sandbox.call_measuring_memory` returns a `MemoryUse`: the peak tracemalloc saw in the worker
and the growth of the worker's memory high-water mark read from outside it (`gauge`); from
the first measured call on, that worker can start no process or thread.

Execution model. Cells run in order in one namespace, like a notebook. An error, exit or
time-out in a cell is recorded in its `CellOutcome` and execution goes on with the next cell.
A time-out first sends SIGINT (KeyboardInterrupt); if the worker does not answer within
`interrupt_grace_seconds` it is killed. Whenever the worker dies (kill, os._exit, a signal,
the CPU or memory limit), the next cell or call runs in a fresh worker in which the cells
that succeeded have been replayed (their output discarded), at most `max_restarts` times; the
failing call raises `StudentTimeout`, `StudentDied` or `StudentMemoryLimit`, so results earned
before are kept. Files a cell wrote to its workdir do not survive a respawn.

Time. A cell or call is charged the time its process ran or chose to wait; time it spent
waiting for a processor that other work held (its run delay, from the kernel) is given back,
so a neighbour's CPU hog or a loaded machine does not turn an honest answer into a time-out,
while an endless loop is charged in full. The whole submission has a wall-clock budget
(`Limits.submission_seconds`) for its cells, calls and replays: once spent, the running
request is stopped as a time-out, later cells and calls are time-outs without running, and
reading values still works, so what ran keeps its points and the submission is graded.

What crosses back. Only plain data, as JSON plus raw array bytes (`codec`; never pickle):
None, bool, int, float, complex, str, list, tuple, dict with str keys, numpy scalars and arrays
of bool/int/uint/float/complex dtypes. Types are checked exactly, so ndarray subclasses, masked
arrays, float subclasses with a custom __eq__ and other objects raise `Unserializable`, whose
diagnosis is the sandbox's own code ``unsupported-type``. The trusted side validates every
field and runs no student code; a reply it cannot make sense of (student code can write to
its channel) is the student's process misbehaving (``crashed``), never an error of the kit.
Arguments are sent the same way; with ``readonly=True`` their arrays arrive read-only.

Isolation (mode ``namespaces``, the default, the same as root, as an ordinary user and as
root without CAP_SYS_ADMIN, e.g. in a container; see `isolation` and `rootfs`):
- student code runs in a worker forked from a zygote that pre-imported numpy (matplotlib,
  Agg, only where a cell imports it) and never ran student code, so one student's
  monkeypatching cannot reach another student or the trusted process;
- the zygote lives in user, mount, PID, IPC and network namespaces of its own (the kernel's
  unprivileged user namespaces: no privilege is needed to create them);
- files: a private root holding, read-only, nosuid and nodev, the system directories, the
  Python runtime and an allowlist: the distributions the pre-import loaded modules from,
  matplotlib, and those they require (numpy, pillow...). Every other package of the virtualenv,
  the kit itself whatever its install mode (its installed files, an editable install's data
  copy of `source/` and `solutions/`), its checkout, course directories, the gradebook, other
  students' files and the grader's home are not there. The system directories are shown
  whole: what others may read under /usr (a course kept there, say) student code may read
  too; the kit, the course and the gradebook being graded are masked there as elsewhere. A
  private /tmp (the workdir and HOME, `disk_mb`) and /dev/shm, in memory, vanish with the
  submission;
- network: each submission has a network namespace of its own with a loopback that is
  down: no connection leaves it, and two submissions graded at once cannot talk, not even
  over abstract UNIX sockets;
- processes: each worker is the init of its own PID namespace (own IPC namespace and /proc):
  closing the sandbox kills every process the submission started, setsid'd daemons
  included, and the zygote's end takes every worker along;
- privileges: as root, each submission runs as a spare uid of its own (>= 1,000,000); as an
  ordinary user, in a user namespace of its own (its host uid is the grader's; nothing of
  the grader's is mounted). No capabilities in any namespace, no_new_privs, Landlock (read
  and execute what is visible, write only under /tmp and /dev/shm, no TCP, abstract UNIX
  sockets and signals scoped to the submission) and a seccomp filter (no namespaces,
  mounts, ptrace, bpf, keyrings, io_uring, kernel modules, sockets other than AF_UNIX...);
  the worker checks that the kernel reports all of it before it serves;
- limits per submission where cgroups can be used (v1 as root, v2 where delegated): its
  memory (`memory_mb`, with its /tmp and /dev/shm pages), `processes` (pids.max) and an equal
  CPU weight, so that a submission graded beside a fork or CPU hog keeps its share. Per process
  everywhere: RLIMIT_AS (`memory_mb` above the runtime), RLIMIT_CPU, RLIMIT_FSIZE,
  RLIMIT_NOFILE, no core dumps; RLIMIT_NPROC counts the submission's own uid or user
  namespace (Linux >= 5.14 counts it per user namespace). Without cgroups (an ordinary user
  without delegation) memory is bounded per process only, so up to `processes` x `memory_mb`
  for one submission, and the CPU share is not isolated; every report's warnings say so;
- imports: a meta-path finder refuses `sdpa_ref`, `autograder` and `sdpa_course` in any
  spelling and an audit hook (which Python cannot remove) refuses import statements of them
  even if the finder is taken out; both record the attempt (`forbidden_imports`);
- magics: `get_ipython()` is a stub: line and cell magics are ignored (%time, %%time, %timeit,
  %%capture still run their code once), shell commands (`!cmd`) are refused with a note on
  stderr; `plt.show()` does nothing;
- warnings: each is printed under what was running when it was raised, the cell or the
  grader's call, then where it was raised ("RuntimeWarning while the grader called attention:
  ... (raised in softmax at line 5 of cell 4)"), never as the line that holds it alone.

Refusal. Where the kernel refuses these namespaces (user namespaces disabled), a pool raises
`IsolationUnavailable` when it starts, saying what to do; it never degrades on
its own. ``SandboxPool(isolation="unsafe-none")``, asked for explicitly (`check` for a
self-learner, `grade --unsafe-no-isolation`), runs student code as the grader with rlimits, a
process group and an audit hook that refuses to open the hidden paths, to start processes,
send signals, use sockets or load native code; every report's warnings then begin with
"UNSAFE". A determined attacker gets past an audit hook: it is not a boundary.
Linux only: even unisolated, the pool's channels are Unix sequenced-packet sockets passing
credentials (SO_PASSCRED), which macOS lacks; Windows has no fork.
"""

from .errors import (
    ForbiddenImport,
    IsolationUnavailable,
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

# From .sandbox, whose codec needs numpy.
_LOADS_NUMPY = ("Cell", "CellOutcome", "MemoryUse", "Sandbox")


def __getattr__(name: str):
    """`Sandbox`, `Cell` and `CellOutcome` on first use: `check` starts a pool's zygote
    before numpy is imported here (a tenth of a second that the zygote's start overlaps)."""
    if name in _LOADS_NUMPY:
        from . import sandbox  # deferred: numpy, on first use

        return getattr(sandbox, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "Cell", "CellOutcome", "ForbiddenImport", "IsolationUnavailable", "Limits", "MemoryUse",
    "MissingName", "Sandbox", "SandboxPool", "StudentDied", "StudentError", "StudentMemoryLimit",
    "StudentRaised", "StudentTimeout", "Unserializable", "default_pool",
]
