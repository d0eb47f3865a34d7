"""`Sandbox`: one submission's cells run in an isolated worker, queried with plain data.

The trusted side of the sandbox. It never runs student code and never unpickles: it sends
requests, reads `codec` replies under a deadline, interrupts then kills on time-outs, and
respawns the worker (replaying the cells that succeeded) when student code killed it. Every
field of a reply is the student's to forge: whatever it holds becomes a `StudentError` (a
reply that makes no sense is the student's process misbehaving: `crashed`), never another
exception.

The submission's budget (`Limits.submission_seconds`) counts the wall-clock time of every
request that runs student code (cells, calls, replays after a restart). Once spent, the
request running is stopped as a time-out, later cells are not run (status "timeout") and
later calls raise `StudentTimeout`; reading values (`get`, `has`) runs no student code and
goes on working while the worker lives, so what ran keeps its points.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from . import codec
from .blocker import FORBIDDEN_PACKAGES
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
from .gauge import Unmeasurable
from .images import FigureBudget, read_pngs
from .limits import Limits
from .pool import SandboxPool, default_pool
from .process import OutputCapture, WorkerLost, WorkerProcess

MAX_REPLY_TEXT = 1000  # characters of a reply's message or type name kept


@dataclass(frozen=True)
class Cell:
    """One notebook cell or one top-level statement of a .py submission."""

    source: str  # Python source of one notebook cell or one top-level statement
    label: str  # "cell 7" / "line 12", used in messages
    first_line: int = 1  # line number of the cell's first line in the submission


@dataclass
class CellOutcome:
    """What happened when one cell ran."""

    label: str
    status: str  # "ok" | "error" | "syntax-error" | "timeout" | "memory-limit" | "died"
    error: str = ""  # student-facing one-line summary
    output: str = ""  # the cell's captured stdout/stderr, truncated
    seconds: float = 0.0  # wall-clock time the cell took
    images: list[bytes] = field(default_factory=list)  # PNGs of the figures it drew, checked
    figures_dropped: int = 0  # figures it drew beyond the submission's budget (`images`)


@dataclass(frozen=True)
class MemoryUse:
    """What one measured call used beyond what existed before it (`call_measuring_memory`)."""

    traced: int | None  # peak bytes tracemalloc saw in the worker; None: the call stopped it
    resident: int | None  # bytes the worker's high-water mark rose, read by the trusted side
    unmeasured: str = ""  # why `resident` is None when the submission prevented the reading;
    # "" with None: this system offers no such reading (`Sandbox.warnings` says why)
    touched: int | None = None  # bytes of written memory the call read or wrote, allocated
    # before it or during it (`MemoryGauge.touched`); None where `resident` is


def _text(value, default: str = "") -> str:
    """A reply field as bounded text (it may be anything the student forged)."""
    if type(value) is not str:
        return default
    return value if len(value) <= MAX_REPLY_TEXT else value[:MAX_REPLY_TEXT] + "..."


def _line(reply: dict) -> int:
    line = reply.get("line")
    return line if type(line) is int and 0 < line < 10**9 else 0


def _located(text: str, label: str, line: int, with_label: bool) -> str:
    if not line:
        return text
    return f"{text} ({label}, line {line})" if with_label and label else f"{text} (line {line})"


class Sandbox:
    """One submission, run in an isolated worker process; a context manager.

    `start()` runs the cells; `has`, `get` and `call` then query the namespace they built.
    """

    def __init__(self, cells: list[Cell], limits: Limits | None = None,
                 pool: SandboxPool | None = None):
        self.cells = list(cells)
        self.limits = limits or Limits()
        self.pool = pool or default_pool()
        self.forbidden_imports: set[str] = set()
        self.warnings: list[str] = []
        self.outcomes: list[CellOutcome] | None = None
        self.last_output = ""  # stdout/stderr of the latest call, get or has: never in `output`
        self.calls_printed = False  # whether a call printed or warned anything (withheld)
        self.restarts = 0
        self.cpu_seconds = 0.0  # CPU used by the workers that have ended (all, after close)
        self.uid = SandboxPool.new_uid()
        self.budget_left = float(self.limits.submission_seconds)  # seconds of student code
        self._output = OutputCapture(self.limits.output_bytes)
        self._figures = FigureBudget()  # what all of this submission's cells may still keep
        self._replay: list[int] = []  # indices of the cells that ran without error
        self._worker: WorkerProcess | None = None
        self._cgroup = None
        self._cgroup_made = False
        self._closed = False

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def output(self) -> str:
        """What the cells printed (stdout/stderr), truncated, with a dropped-bytes marker;
        never what a call printed (`last_output`)."""
        return self._output.text()

    @property
    def isolation(self) -> str:
        """The pool's isolation: "namespaces" or "unsafe-none" (see the package doc)."""
        return self.pool.mode

    @property
    def out_of_time(self) -> bool:
        """Whether the submission's budget is spent: no more student code runs."""
        return self.budget_left <= 0

    @property
    def pid(self) -> int:
        """Host pid of the current worker (0 if none), for tests and diagnostics."""
        return self._worker.pid if self._worker is not None and self._worker.alive else 0

    # -- workers ----------------------------------------------------------------------------

    def _new_worker(self) -> WorkerProcess:
        if self._closed:
            raise RuntimeError("this Sandbox is closed")
        spawned = None
        if not self._cgroup_made:  # the first worker: the one the pool forked ahead, if any
            preforked = self.pool.take_preforked(self.limits)
            if preforked is not None:
                self.uid, self._cgroup, spawned = preforked
            else:
                self._cgroup = self.pool.new_cgroup(self.limits)
            self._cgroup_made = True
        worker = WorkerProcess(self.pool, self.limits, self.uid, self._cgroup, spawned)
        for text in self.pool.warnings:
            if text not in self.warnings:
                self.warnings.append(text)
        return worker

    def _discard_worker(self) -> None:
        if self._worker is not None:
            self._worker.close(wait=False)
            self.cpu_seconds += self._worker.cpu_seconds
            self._worker = None

    def _budget_timeout(self, what: str) -> StudentTimeout:
        return StudentTimeout(f"{what} not run: the submission's time budget of "
                              f"{self.limits.submission_seconds:g} s ran out")

    def _timed(self, worker: WorkerProcess, message: dict, blob: bytes, seconds: float,
               sink: list[OutputCapture], student_code: bool):
        """worker.exchange; a request running student code is charged to the budget."""
        if not student_code:
            return worker.exchange(message, blob, seconds, sink)
        began = time.monotonic()
        try:
            return worker.exchange(message, blob, seconds, sink, began + self.budget_left)
        finally:
            self.budget_left -= time.monotonic() - began

    def _respawn(self, what: str = "this") -> None:
        """A fresh worker with the successful cells replayed; StudentDied when out of restarts,
        StudentTimeout when out of time."""
        self._discard_worker()
        while True:
            if self.out_of_time:
                raise self._budget_timeout(what)
            if self.restarts >= self.limits.max_restarts:
                raise StudentDied(f"the submission's process was restarted "
                                  f"{self.restarts} times; nothing more is run")
            self.restarts += 1
            worker = self._new_worker()
            replayed = True
            for index in list(self._replay):
                cell = self.cells[index]
                try:
                    self._timed(worker, self._run_request(cell), b"", self.limits.cell_seconds,
                                [], True)
                except WorkerLost:
                    if not self.out_of_time:
                        self._replay.remove(index)  # it ran once, but kills the process now
                    replayed = False
                if self.out_of_time:
                    worker.close(wait=False)
                    raise self._budget_timeout(what)
                if not replayed:
                    worker.close(wait=False)
                    break
            if replayed:
                self._worker = worker
                return

    def _ready(self, what: str) -> WorkerProcess:
        if self.outcomes is None:
            self.start()
        if self._worker is None or not self._worker.alive:
            self._respawn(what)
        return self._worker

    @staticmethod
    def _run_request(cell: Cell) -> dict:
        return {"op": "run", "source": cell.source, "label": cell.label,
                "first_line": cell.first_line}

    def _note_forbidden(self, reply: dict) -> None:
        attempts = reply.get("forbidden")
        if type(attempts) is list:
            self.forbidden_imports.update(a for a in attempts if a in FORBIDDEN_PACKAGES)

    # -- cells ------------------------------------------------------------------------------

    def start(self) -> list[CellOutcome]:
        """Run every cell once, top to bottom, in one namespace; return what happened."""
        if self.outcomes is not None:
            return self.outcomes
        self.outcomes = []
        self._worker = self._new_worker()
        for index, cell in enumerate(self.cells):
            if self.out_of_time:
                self.outcomes.append(CellOutcome(
                    cell.label, "timeout", f"not run: the submission's time budget of "
                    f"{self.limits.submission_seconds:g} s ran out"))
                continue
            if self._worker is None:
                try:
                    self._respawn(cell.label)
                except StudentTimeout as exc:
                    self.outcomes.append(CellOutcome(cell.label, "timeout", str(exc)))
                    continue
                except StudentDied as exc:
                    self.outcomes.append(CellOutcome(cell.label, "died", f"not run: {exc}"))
                    continue
            outcome = self._run_cell(cell)
            if outcome.status == "ok":
                self._replay.append(index)
            self.outcomes.append(outcome)
        return self.outcomes

    def _run_cell(self, cell: Cell) -> CellOutcome:
        began = time.perf_counter()
        outcome = self._run_cell_untimed(cell)
        outcome.seconds = time.perf_counter() - began
        return outcome

    def _timeout_text(self, seconds: float) -> str:
        if self.out_of_time:
            return (f"stopped: the submission's time budget of "
                    f"{self.limits.submission_seconds:g} s ran out")
        return f"timed out after {seconds:g} s"

    def _run_cell_untimed(self, cell: Cell) -> CellOutcome:
        segment = OutputCapture(self.limits.output_bytes)
        seconds = self.limits.cell_seconds
        try:
            reply, reply_blob, interrupted = self._timed(
                self._worker, self._run_request(cell), b"", seconds, [segment, self._output],
                True)
        except WorkerLost as lost:
            self._discard_worker()
            text = self._timeout_text(seconds) if self.out_of_time else str(lost)
            return CellOutcome(cell.label, lost.status, text, segment.text())
        self._note_forbidden(reply)
        output = segment.text()
        if interrupted or reply.get("kind") == "interrupted":
            return CellOutcome(cell.label, "timeout", self._timeout_text(seconds), output)
        if reply.get("ok") is True:
            images, dropped = self._figures.keep(read_pngs(reply.get("images"), reply_blob))
            return CellOutcome(cell.label, "ok", "", output, images=images,
                               figures_dropped=dropped)
        text = f"{_text(reply.get('type'), 'Error')}: {_text(reply.get('message'))}".rstrip(": ")
        status = {"syntax": "syntax-error", "memory": "memory-limit"}.get(
            _text(reply.get("kind")), "error")
        return CellOutcome(cell.label, status, _located(text, "", _line(reply), False), output)

    # -- queries ----------------------------------------------------------------------------

    def _request(self, message: dict, blob: bytes, what: str, student_code: bool
                 ) -> tuple[dict, bytes]:
        return self._exchange(self._prepare(what, student_code), message, blob, what,
                              student_code)

    def _prepare(self, what: str, student_code: bool) -> WorkerProcess:
        """The live worker a request goes to (respawned if need be)."""
        if student_code and self.out_of_time:
            raise self._budget_timeout(what)
        if not student_code and self.out_of_time and (
                self._worker is None or not self._worker.alive):
            raise self._budget_timeout(what)  # no time left to replay the cells
        return self._ready(what)

    def _exchange(self, worker: WorkerProcess, message: dict, blob: bytes, what: str,
                  student_code: bool) -> tuple[dict, bytes]:
        segment = OutputCapture(self.limits.output_bytes)
        seconds = self.limits.call_seconds
        try:
            # A query's output stays out of `output`: a call runs on the grader's (hidden)
            # inputs, and what it prints is the student's text about them.
            reply, reply_blob, interrupted = self._timed(
                worker, message, blob, seconds, [segment], student_code)
        except WorkerLost as lost:
            self._discard_worker()
            self.last_output = segment.text()
            self.calls_printed = self.calls_printed or bool(self.last_output)
            if lost.status == "timeout":
                text = self._timeout_text(seconds) if self.out_of_time else str(lost)
                raise StudentTimeout(f"{what} {text}") from None
            if lost.status == "memory-limit":
                raise StudentMemoryLimit(f"{what} {lost}") from None
            raise StudentDied(f"{what} stopped: {lost}") from None
        self.last_output = segment.text()
        self.calls_printed = self.calls_printed or bool(self.last_output)
        self._note_forbidden(reply)
        if interrupted:
            raise StudentTimeout(f"{what} {self._timeout_text(seconds)}")
        if reply.get("ok") is not True:
            raise self._error(reply, what)
        return reply, reply_blob

    def _error(self, reply: dict, what: str) -> StudentError:
        """The StudentError a failure reply stands for; a reply that is not one the worker
        sends (forged by student code) is the student's process misbehaving."""
        kind = _text(reply.get("kind"))
        message = _text(reply.get("message"))
        if kind == "missing" and type(reply.get("name")) is str:
            return MissingName(_text(reply.get("name")))
        if kind == "unsupported":
            return Unserializable(message)
        if kind == "interrupted":
            return StudentTimeout(f"{what} {self._timeout_text(self.limits.call_seconds)}")
        type_name = _text(reply.get("type"), "Error")
        line, label = _line(reply), _text(reply.get("label"))
        where = f"{label}, line {line}" if line and label else (f"line {line}" if line else "")
        if kind == "memory":
            return StudentMemoryLimit(_located(f"{type_name}: {message}".rstrip(": "),
                                               label, line, True))
        if kind == "forbidden" and reply.get("module") in FORBIDDEN_PACKAGES:
            return ForbiddenImport(reply["module"])
        if kind == "raised":
            return StudentRaised(type_name, message, where)
        self._discard_worker()
        return StudentDied(f"{what} stopped: the submission's process sent a reply that "
                           f"makes no sense (kind {kind[:40]!r})")

    def _decode(self, doc, blob: bytes):
        try:
            return codec.decode(doc, blob, max_str_chars=self.limits.max_str_chars)
        except codec.MalformedMessage as exc:
            self._discard_worker()
            raise StudentDied(f"the submission's process sent a malformed reply ({exc})") from None

    def has(self, name: str) -> bool:
        """Whether the submission defines the top-level name."""
        reply, _ = self._request({"op": "has", "name": name}, b"", f"looking up `{name}`",
                                 False)
        return reply.get("value") is True

    def get(self, name: str) -> Any:
        """A plain-data copy of a top-level name; MissingName if it is not defined."""
        reply, blob = self._request({"op": "get", "name": name}, b"", f"reading `{name}`",
                                    False)
        return self._decode(reply.get("value"), blob)

    def call(self, name: str, *args, readonly: bool = False, **kwargs) -> Any:
        """Call a student function with plain-data arguments; return a plain-data result."""
        return self._call(name, args, kwargs, readonly, False)[0]

    def call_with_inputs(self, name: str, *args, readonly: bool = False, **kwargs
                         ) -> tuple[Any, tuple, dict]:
        """Like call, plus the arguments as they are after the call (to spot mutation)."""
        return self._call(name, args, kwargs, readonly, True)

    def call_measuring_memory(self, name: str, *args, **kwargs) -> tuple[Any, MemoryUse]:
        """Like call, plus what the call used beyond its inputs: the peak tracemalloc saw in
        the worker, and the growth of the worker's high-water mark that the trusted side read
        (`gauge`; a measured call leaves the worker unable to start processes or threads)."""
        try:
            doc, blob = codec.encode([list(args), kwargs], max_str_chars=2**62)
        except codec.UnsupportedValue as exc:  # the grader's mistake, not the student's
            raise TypeError(f"cannot send this argument to the sandbox: {exc}") from None
        message = {"op": "call", "name": name, "args": doc, "readonly": False,
                   "return_inputs": False, "trace_memory": True}
        what = f"`{name}(...)`"
        worker = self._prepare(what, True)
        gauge, start, unmeasured = worker.gauge, None, ""
        if gauge is not None and not gauge.unavailable:
            try:
                start = gauge.begin()
            except Unmeasurable as exc:
                unmeasured = str(exc)
            except OSError as exc:  # the kit's side (the worker is checked by the exchange)
                self._warn(f"the memory of a call could not be read from outside the "
                           f"submission's process ({exc}); tracemalloc's figure stands alone")
        elif gauge is not None:
            self._warn(f"{gauge.unavailable}: tracemalloc's figure stands alone")
        if self.pool.mode == "namespaces" and not self.pool.layers.get("landlock"):
            self._warn("without Landlock, the submission's process could reset the memory "
                       "high-water mark of a measured call itself (/proc/self/clear_refs)")
        reply, reply_blob = self._exchange(worker, message, blob, what, True)
        resident = touched = None
        if start is not None:
            try:
                resident, touched = gauge.grown(start), gauge.touched()
            except OSError:  # gone since it replied: nothing to read, so nothing earned
                unmeasured = "the submission's process ended before its memory was read"
        result = self._decode(reply.get("value"), reply_blob)
        peak = reply.get("peak_bytes")
        if peak is not None and (type(peak) is not int or peak < 0):
            self._discard_worker()
            raise StudentDied("the submission's process sent a malformed reply")
        return result, MemoryUse(peak, resident, unmeasured, touched)

    def _warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def _call(self, name: str, args: tuple, kwargs: dict, readonly: bool, want_inputs: bool):
        try:
            doc, blob = codec.encode([list(args), kwargs], max_str_chars=2**62)
        except codec.UnsupportedValue as exc:  # the grader's mistake, not the student's
            raise TypeError(f"cannot send this argument to the sandbox: {exc}") from None
        message = {"op": "call", "name": name, "args": doc, "readonly": readonly,
                   "return_inputs": want_inputs}
        reply, reply_blob = self._request(message, blob, f"`{name}(...)`", True)
        result = self._decode(reply.get("value"), reply_blob)
        if not want_inputs:
            return result, (), {}
        inputs = self._decode(reply.get("inputs"), reply_blob)
        if type(inputs) is not list or len(inputs) != 2 or type(inputs[1]) is not dict:
            self._discard_worker()
            raise StudentDied("the submission's process sent a malformed reply")
        return result, tuple(inputs[0]), inputs[1]

    def close(self) -> None:
        """Kill the worker and every process the submission started; remove its cgroup."""
        if self._worker is not None:
            self._worker.close(wait=True)
            self.cpu_seconds += self._worker.cpu_seconds
            self._worker = None
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None
        self._closed = True
