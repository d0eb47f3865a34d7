"""`Sandbox`: one submission's cells run in an isolated worker, queried with plain data.

The trusted side of the sandbox. It never runs student code and never unpickles: it sends
requests, reads `codec` replies under a deadline, interrupts then kills on time-outs, and
respawns the worker (replaying the cells that succeeded) when student code killed it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from . import codec
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
from .images import read_pngs
from .limits import Limits
from .pool import SandboxPool, default_pool
from .process import OutputCapture, WorkerLost, WorkerProcess


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
        self.last_output = ""  # stdout/stderr of the latest call, get or has
        self.restarts = 0
        self.cpu_seconds = 0.0  # CPU used by the workers that have ended (all, after close)
        self.uid = SandboxPool.new_uid()
        self._output = OutputCapture(self.limits.output_bytes)
        self._replay: list[int] = []  # indices of the cells that ran without error
        self._worker: WorkerProcess | None = None
        self._closed = False

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def output(self) -> str:
        """All captured student stdout/stderr, truncated, with a dropped-bytes marker."""
        return self._output.text()

    @property
    def isolation(self) -> str:
        """The isolation mode achieved: "namespaces", "uid" or "none" (see the package doc)."""
        return self.pool.mode

    @property
    def pid(self) -> int:
        """Host pid of the current worker (0 if none), for tests and diagnostics."""
        return self._worker.pid if self._worker is not None and self._worker.alive else 0

    # -- workers ----------------------------------------------------------------------------

    def _new_worker(self) -> WorkerProcess:
        if self._closed:
            raise RuntimeError("this Sandbox is closed")
        worker = WorkerProcess(self.pool, self.limits, self.uid)
        for text in self.pool.warnings:
            if text not in self.warnings:
                self.warnings.append(text)
        return worker

    def _discard_worker(self) -> None:
        if self._worker is not None:
            self._worker.close(wait=False)
            self.cpu_seconds += self._worker.cpu_seconds
            self._worker = None

    def _respawn(self) -> None:
        """A fresh worker with the successful cells replayed; StudentDied when out of restarts."""
        self._discard_worker()
        while True:
            if self.restarts >= self.limits.max_restarts:
                raise StudentDied(f"the submission's process was restarted "
                                  f"{self.restarts} times; nothing more is run")
            self.restarts += 1
            worker = self._new_worker()
            replayed = True
            for index in list(self._replay):
                cell = self.cells[index]
                try:
                    worker.exchange(self._run_request(cell), b"", self.limits.cell_seconds, [])
                except WorkerLost:
                    self._replay.remove(index)  # it ran once, but kills the process now
                    worker.close(wait=False)
                    replayed = False
                    break
            if replayed:
                self._worker = worker
                return

    def _ready(self) -> WorkerProcess:
        if self.outcomes is None:
            self.start()
        if self._worker is None or not self._worker.alive:
            self._respawn()
        return self._worker

    @staticmethod
    def _run_request(cell: Cell) -> dict:
        return {"op": "run", "source": cell.source, "label": cell.label,
                "first_line": cell.first_line}

    def _note_forbidden(self, reply: dict) -> None:
        attempts = reply.get("forbidden")
        if type(attempts) is list:
            self.forbidden_imports.update(a for a in attempts if type(a) is str)

    # -- cells ------------------------------------------------------------------------------

    def start(self) -> list[CellOutcome]:
        """Run every cell once, top to bottom, in one namespace; return what happened."""
        if self.outcomes is not None:
            return self.outcomes
        self.outcomes = []
        self._worker = self._new_worker()
        for index, cell in enumerate(self.cells):
            if self._worker is None:
                try:
                    self._respawn()
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

    def _run_cell_untimed(self, cell: Cell) -> CellOutcome:
        segment = OutputCapture(self.limits.output_bytes)
        seconds = self.limits.cell_seconds
        try:
            reply, reply_blob, interrupted = self._worker.exchange(
                self._run_request(cell), b"", seconds, [segment, self._output])
        except WorkerLost as lost:
            self._discard_worker()
            return CellOutcome(cell.label, lost.status, str(lost), segment.text())
        self._note_forbidden(reply)
        output = segment.text()
        if interrupted or reply.get("kind") == "interrupted":
            return CellOutcome(cell.label, "timeout", f"timed out after {seconds:g} s", output)
        if reply.get("ok"):
            return CellOutcome(cell.label, "ok", "", output,
                               images=read_pngs(reply.get("images"), reply_blob))
        text = f"{reply.get('type', 'Error')}: {reply.get('message', '')}".rstrip(": ")
        line = reply.get("line") if type(reply.get("line")) is int else 0
        status = {"syntax": "syntax-error", "memory": "memory-limit"}.get(reply.get("kind"),
                                                                          "error")
        return CellOutcome(cell.label, status, _located(text, "", line, False), output)

    # -- queries ----------------------------------------------------------------------------

    def _request(self, message: dict, blob: bytes, what: str) -> tuple[dict, bytes]:
        worker = self._ready()
        segment = OutputCapture(self.limits.output_bytes)
        seconds = self.limits.call_seconds
        try:
            reply, reply_blob, interrupted = worker.exchange(
                message, blob, seconds, [segment, self._output])
        except WorkerLost as lost:
            self._discard_worker()
            self.last_output = segment.text()
            if lost.status == "timeout":
                raise StudentTimeout(f"{what} {lost}") from None
            raise StudentDied(f"{what} stopped: {lost}") from None
        self.last_output = segment.text()
        self._note_forbidden(reply)
        if interrupted:
            raise StudentTimeout(f"{what} timed out after {seconds:g} s")
        if not reply.get("ok"):
            raise self._error(reply, what)
        return reply, reply_blob

    def _error(self, reply: dict, what: str) -> StudentError:
        kind = reply.get("kind")
        message = str(reply.get("message", ""))
        if kind == "missing":
            return MissingName(str(reply.get("name")))
        if kind == "unsupported":
            return Unserializable(message)
        if kind == "interrupted":
            return StudentTimeout(f"{what} timed out after {self.limits.call_seconds:g} s")
        type_name = str(reply.get("type", "Error"))
        line = reply.get("line") if type(reply.get("line")) is int else 0
        where = f"{reply.get('label')}, line {line}" if line and reply.get("label") else (
            f"line {line}" if line else "")
        if kind == "memory":
            return StudentMemoryLimit(_located(f"{type_name}: {message}".rstrip(": "),
                                               str(reply.get("label", "")), line, True))
        if kind == "forbidden":
            return ForbiddenImport(str(reply.get("module") or "?"))
        if kind == "protocol":
            raise RuntimeError(f"sandbox protocol error: {message}")
        return StudentRaised(type_name, message, where)

    def _decode(self, doc, blob: bytes):
        try:
            return codec.decode(doc, blob, max_str_chars=self.limits.max_str_chars)
        except codec.MalformedMessage as exc:
            self._discard_worker()
            raise StudentDied(f"the submission's process sent a malformed reply ({exc})") from None

    def has(self, name: str) -> bool:
        """Whether the submission defines the top-level name."""
        reply, _ = self._request({"op": "has", "name": name}, b"", f"looking up `{name}`")
        return reply.get("value") is True

    def get(self, name: str) -> Any:
        """A plain-data copy of a top-level name; MissingName if it is not defined."""
        reply, blob = self._request({"op": "get", "name": name}, b"", f"reading `{name}`")
        return self._decode(reply.get("value"), blob)

    def call(self, name: str, *args, readonly: bool = False, **kwargs) -> Any:
        """Call a student function with plain-data arguments; return a plain-data result."""
        return self._call(name, args, kwargs, readonly, False)[0]

    def call_with_inputs(self, name: str, *args, readonly: bool = False, **kwargs
                         ) -> tuple[Any, tuple, dict]:
        """Like call, plus the arguments as they are after the call (to spot mutation)."""
        return self._call(name, args, kwargs, readonly, True)

    def call_measuring_memory(self, name: str, *args, **kwargs) -> tuple[Any, int | None]:
        """Like call, plus the peak bytes the call allocated beyond its inputs, measured by
        tracemalloc in the worker; None when the student's code stopped the measurement."""
        try:
            doc, blob = codec.encode([list(args), kwargs], max_str_chars=2**62)
        except codec.UnsupportedValue as exc:  # the grader's mistake, not the student's
            raise TypeError(f"cannot send this argument to the sandbox: {exc}") from None
        message = {"op": "call", "name": name, "args": doc, "readonly": False,
                   "return_inputs": False, "trace_memory": True}
        reply, reply_blob = self._request(message, blob, f"`{name}(...)`")
        result = self._decode(reply.get("value"), reply_blob)
        peak = reply.get("peak_bytes")
        if peak is not None and (type(peak) is not int or peak < 0):
            self._discard_worker()
            raise StudentDied("the submission's process sent a malformed reply")
        return result, peak

    def _call(self, name: str, args: tuple, kwargs: dict, readonly: bool, want_inputs: bool):
        try:
            doc, blob = codec.encode([list(args), kwargs], max_str_chars=2**62)
        except codec.UnsupportedValue as exc:  # the grader's mistake, not the student's
            raise TypeError(f"cannot send this argument to the sandbox: {exc}") from None
        message = {"op": "call", "name": name, "args": doc, "readonly": readonly,
                   "return_inputs": want_inputs}
        reply, reply_blob = self._request(message, blob, f"`{name}(...)`")
        result = self._decode(reply.get("value"), reply_blob)
        if not want_inputs:
            return result, (), {}
        inputs = self._decode(reply.get("inputs"), reply_blob)
        if type(inputs) is not list or len(inputs) != 2 or type(inputs[1]) is not dict:
            self._discard_worker()
            raise StudentDied("the submission's process sent a malformed reply")
        return result, tuple(inputs[0]), inputs[1]

    def close(self) -> None:
        """Kill the worker and every process the submission started."""
        if self._worker is not None:
            self._worker.close(wait=True)
            self.cpu_seconds += self._worker.cpu_seconds
            self._worker = None
        self._closed = True
