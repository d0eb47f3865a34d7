"""The worker loop: runs a submission's cells in one namespace and answers the trusted side.

Runs in the sandboxed child process (shipped as source, so it imports only the standard library,
numpy and its sibling modules). Requests and replies are `codec` messages; student code runs
only between reading a request and writing its reply, and SIGINT raises KeyboardInterrupt
only then.
"""

from __future__ import annotations

import _tracemalloc
import ast
import builtins
import io
import os
import signal
import sys
import traceback
import warnings

from . import codec
from .blocker import ImportBlocker, is_refusal

MAX_MESSAGE_CHARS = 300
PASSTHROUGH_MAGICS = ("time", "timeit", "capture", "prun")
# Figures a cell leaves open are sent back as PNG, as Jupyter's inline backend shows them at
# the end of a cell (the trusted side checks each one: `images.read_pngs`).
MAX_FIGURES_PER_CELL = 4
FIGURE_DPI = 72


class IPythonStub:
    """Enough of `get_ipython()` for transformed notebook cells: magics are ignored, except
    the timing ones whose code still runs once, and shell commands are refused."""

    def __init__(self, namespace: dict):
        self._namespace = namespace

    def _run(self, source: str) -> None:
        exec(compile(source, "<magic>", "exec"), self._namespace)

    def run_line_magic(self, name, line, *_args, **_kwargs):
        if name in PASSTHROUGH_MAGICS and line.strip() and not line.lstrip().startswith("-"):
            self._run(line)
        return None

    def run_cell_magic(self, name, line, cell, *_args, **_kwargs):
        if name in PASSTHROUGH_MAGICS:
            self._run(cell)
        return None

    def system(self, command, *_args, **_kwargs):
        print(f"[grader] shell command not run: !{command}", file=sys.stderr)
        return None

    def getoutput(self, command, *_args, **_kwargs):
        self.system(command)
        return []

    def magic(self, *_args, **_kwargs):
        return None

    @property
    def user_ns(self) -> dict:
        return self._namespace

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def _exit_at_cpu_limit(signum, frame):
    os._exit(128 + signal.SIGXCPU)


def _display(*_objects, **_kwargs):
    return None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 3] + "..."


def _peak_tracer(is_tracing, start, stop, reset_peak, get_traced_memory):
    """The tracer `Worker._measured` uses: tracemalloc's C functions held in a closure made
    before any student code ran, so patching this module's names, `tracemalloc` or
    `_tracemalloc` does not reach them. Not a boundary: code in this process can still reset
    the peak, or allocate where tracemalloc does not look; the trusted side's gauge (`gauge`)
    catches what matters of that."""

    def tracing_peak(call):
        was_tracing = is_tracing()
        if not was_tracing:
            start()
        reset_peak()
        before = get_traced_memory()[0]
        try:
            result = call()
            peak = get_traced_memory()[1] - before if is_tracing() else None
        finally:
            if not was_tracing and is_tracing():
                stop()
        return result, None if peak is None else max(int(peak), 0)

    return tracing_peak


_TRACING_PEAK = _peak_tracer(_tracemalloc.is_tracing, _tracemalloc.start, _tracemalloc.stop,
                             _tracemalloc.reset_peak, _tracemalloc.get_traced_memory)


class Worker:
    def __init__(self, channel_fd: int, blocker: ImportBlocker, max_transfer: int,
                 max_str_chars: int):
        self.channel_fd = channel_fd
        self.pid = os.getpid()  # the worker's own: a fork of student code is not the worker
        self.blocker = blocker
        self.max_transfer = max_transfer
        self.max_str_chars = max_str_chars
        self.namespace = {"__name__": "__main__", "__builtins__": builtins}
        self.namespace["get_ipython"] = lambda: IPythonStub(self.namespace)
        self.namespace["display"] = _display
        self.cell_files: dict[str, int] = {}  # filename -> line offset
        self.student_running = False
        self.interrupted = False
        self.running = ""  # what runs now, as a warning names it: "cell 7 (ex3_x) ran"

    # -- plumbing ---------------------------------------------------------------------------

    def _on_sigint(self, signum, frame):
        if self.student_running:
            self.interrupted = True
            raise KeyboardInterrupt

    def send(self, message: dict, blob: bytes | bytearray = b"") -> None:
        message["forbidden"] = sorted(set(self.blocker.attempts))
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except Exception:  # the student may have replaced or closed it
                pass
        data = memoryview(codec.pack(message, blob))
        while data:
            written = os.write(self.channel_fd, data)
            data = data[written:]

    def serve(self) -> None:
        signal.signal(signal.SIGINT, self._on_sigint)
        warnings.showwarning = self._show_warning
        # Init of a PID namespace ignores SIGXCPU by default: exit at the soft CPU limit.
        signal.signal(signal.SIGXCPU, _exit_at_cpu_limit)
        while True:
            try:
                request, blob = codec.read_message(self.channel_fd, self.max_transfer)
            except EOFError:
                os._exit(0)
            handler = getattr(self, "op_" + str(request.get("op")), None)
            if handler is None:
                self.send({"op": "reply", "ok": False, "kind": "protocol",
                           "message": f"unknown request {request.get('op')!r}"})
                continue
            self.interrupted = False
            try:
                reply, reply_blob = handler(request, blob)
            except BaseException as exc:  # noqa: BLE001 - anything escaping is reported
                reply, reply_blob = self._failure(exc), b""
            reply["op"] = "reply"
            reply["id"] = request.get("id")
            self.send(reply, reply_blob)

    def _student(self, function, *args, _getpid=os.getpid, _exit=os._exit, **kwargs):
        """Run student code with SIGINT armed. A process the student's code forked, once
        that code returns into this one's, exits at once: only the worker answers on the
        channel, however the grader runs (the functions are bound when the class was made:
        patching `os` does not reach them)."""
        self.student_running = True
        try:
            return function(*args, **kwargs)
        finally:
            if _getpid() != self.pid:
                _exit(0)
            self.student_running = False

    def _measured(self, function, args, kwargs, tracing_peak=_TRACING_PEAK):
        """The call's result and the peak bytes tracemalloc saw it allocate beyond what
        existed before it (None when the call stopped tracing). The tracer is a default
        argument, bound when the class was made: patching this module's names does not
        reach it (`_peak_tracer`)."""
        return tracing_peak(lambda: self._student(function, *args, **kwargs))

    # -- warnings ---------------------------------------------------------------------------

    def _show_warning(self, message, category, filename, lineno, file=None, line=None):
        """Print a warning under what was running when it was raised (a cell, or the grader's
        call of a function), then where it was raised: a warning a wrong mask raises inside
        the student's softmax, while their attention cell or the grader's call of attention
        runs, belongs to that cell or call, not to the softmax cell that holds the line."""
        try:
            text = _warning_text(message, category, self.running or "the notebook ran",
                                 self._raised_at(filename, lineno))
            (file if file is not None else sys.stderr).write(text + "\n")
        except Exception:  # noqa: BLE001 - a stream the student closed or replaced: not shown
            pass

    def _raised_at(self, filename: str, lineno: int) -> str:
        """Where a warning was raised: "in softmax at line 6 of cell 4 (ex2_softmax)"; no
        function at a cell's top level, no cell when it is the running one or a .py file's
        statement (whose line numbers are the file's)."""
        label = filename[1:-1] if filename in self.cell_files else os.path.basename(filename)
        frame = sys._getframe(1)
        while frame is not None and (frame.f_code.co_filename, frame.f_lineno) != (filename,
                                                                                   lineno):
            frame = frame.f_back
        function = frame.f_code.co_name if frame is not None else "<module>"
        where = f"at line {lineno}"
        if not function.startswith("<"):
            where = f"in {function} {where}"
        if not (self.running.startswith(label + " ") or label.startswith("line ")):
            where += f" of {label}"
        return where

    # -- errors -----------------------------------------------------------------------------

    def _where(self, exc: BaseException) -> tuple[str, int]:
        label, line = "", 0
        for frame, lineno in traceback.walk_tb(exc.__traceback__):
            filename = frame.f_code.co_filename
            if filename in self.cell_files:
                label, line = filename[1:-1], lineno
        return label, line

    def _failure(self, exc: BaseException) -> dict:
        if isinstance(exc, KeyboardInterrupt) and self.interrupted:
            return {"ok": False, "kind": "interrupted", "type": "KeyboardInterrupt",
                    "message": "interrupted at the time limit"}
        try:
            message = _short(str(exc))
        except BaseException:  # noqa: BLE001 - a hostile __str__
            message = ""
        label, line = self._where(exc)
        kind = "raised"
        if is_refusal(exc):
            kind = "forbidden"
        elif isinstance(exc, MemoryError):
            kind = "memory"
        return {"ok": False, "kind": kind, "type": codec.type_name(exc), "message": message,
                "label": label, "line": line, "module": getattr(exc, "name", None)
                if kind == "forbidden" else None}

    def _encode(self, value, lead: str):
        """Encode a value for the reply, or say why it cannot cross ("<lead> a Foo; hint")."""
        try:
            doc, blob = codec.encode(value, max_str_chars=self.max_str_chars)
        except codec.UnsupportedValue as exc:
            where = f" (item {exc.path})" if exc.path else ""
            article = "an" if exc.type_name[:1].lower() in "aeiou" else "a"
            return None, None, f"{lead} {article} {exc.type_name}{where}; {exc.hint}"
        except ValueError as exc:  # e.g. an int too long to convert to text
            return None, None, f"{lead} a value that cannot be sent back ({_short(str(exc))})"
        if len(blob) > self.max_transfer:
            return None, None, f"{lead} a value too large to send back ({len(blob)} bytes)"
        return doc, blob, ""

    # -- requests ---------------------------------------------------------------------------

    def op_run(self, request: dict, _blob: bytes):
        source, label = str(request["source"]), str(request["label"])
        first_line = int(request.get("first_line", 1))
        filename = f"<{label}>"
        try:
            tree = ast.parse(source, filename)
            ast.increment_lineno(tree, first_line - 1)
            code = compile(tree, filename, "exec")
        except SyntaxError as exc:
            line = first_line + (exc.lineno or 1) - 1
            return {"ok": False, "kind": "syntax", "type": type(exc).__name__,
                    "message": _short(exc.msg or "invalid syntax"), "line": line,
                    "label": label}, b""
        except (ValueError, MemoryError, RecursionError) as exc:
            return {"ok": False, "kind": "syntax", "type": type(exc).__name__,
                    "message": _short(str(exc)), "line": first_line, "label": label}, b""
        self.cell_files[filename] = first_line
        self.running = (f"the code at {label} ran" if label.startswith("line ")  # a .py file
                        else f"{label} ran")
        try:
            self._student(exec, code, self.namespace)
            pngs = self._student(_open_figures_as_png)
        finally:
            self.running = ""
        spans, offset = [], 0
        for png in pngs:
            spans.append([offset, len(png)])
            offset += len(png)
        return {"ok": True, "images": spans}, b"".join(pngs)

    def op_has(self, request: dict, _blob: bytes):
        return {"ok": True, "value": str(request["name"]) in self.namespace}, b""

    def op_get(self, request: dict, _blob: bytes):
        name = str(request["name"])
        if name not in self.namespace:
            return {"ok": False, "kind": "missing", "name": name}, b""
        doc, blob, problem = self._encode(self.namespace[name], f"`{name}` is")
        if problem:
            return {"ok": False, "kind": "unsupported", "message": problem}, b""
        return {"ok": True, "value": doc}, blob

    def op_call(self, request: dict, blob: bytes):
        name = str(request["name"])
        if name not in self.namespace:
            return {"ok": False, "kind": "missing", "name": name}, b""
        args, kwargs = codec.decode(request["args"], blob, readonly=bool(request["readonly"]))
        function = self.namespace[name]
        self.running = f"the grader called {name}"
        try:
            if request.get("trace_memory"):
                result, peak = self._measured(function, args, kwargs)
            else:
                result, peak = self._student(function, *args, **kwargs), None
        finally:
            self.running = ""
        doc, result_blob, problem = self._encode(result, f"{name} returned")
        if problem:
            return {"ok": False, "kind": "unsupported", "message": problem}, b""
        reply = {"ok": True, "value": doc}
        if request.get("trace_memory"):
            reply["peak_bytes"] = peak
        if request.get("return_inputs"):
            shifted = len(result_blob)
            inputs, inputs_blob, problem = self._encode(
                [args, kwargs], f"after the call, an argument of {name} is")
            if problem:
                return {"ok": False, "kind": "unsupported", "message": problem}, b""
            reply["inputs"] = _shift_offsets(inputs, shifted)
            result_blob = bytes(result_blob) + bytes(inputs_blob)
        return reply, result_blob


def _warning_text(message, category, running: str, raised_at: str) -> str:
    """`RuntimeWarning while cell 9 (ex3_attention) ran: invalid value encountered in
    subtract (raised in softmax at line 6 of cell 4 (ex2_softmax))`, on one bounded line."""
    name = getattr(category, "__name__", "Warning")
    return _short(f"{name} while {running}: {message} (raised {raised_at})")


def _open_figures_as_png() -> list[bytes]:
    """The figures the cell left open, as PNG bytes, then closed (like the inline backend).

    Only when the student's code imported pyplot; a figure that cannot be drawn is skipped.
    """
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    pngs = []
    try:
        numbers = list(pyplot.get_fignums())
    except Exception:  # noqa: BLE001 - the student may have broken pyplot
        return []
    for number in numbers[:MAX_FIGURES_PER_CELL]:
        buffer = io.BytesIO()
        try:
            pyplot.figure(number).savefig(buffer, format="png", dpi=FIGURE_DPI)
        except Exception:  # noqa: BLE001 - a figure too large or broken: not shown
            continue
        pngs.append(bytes(buffer.getvalue()))
    try:
        pyplot.close("all")
    except Exception:  # noqa: BLE001
        pass
    return pngs


def _shift_offsets(doc, shift: int):
    """Move the blob offsets of an encoded value by `shift` (two values share one blob)."""
    if type(doc) is list:
        return [_shift_offsets(v, shift) for v in doc]
    if type(doc) is dict:
        (tag, body), = doc.items()
        if tag == "a":
            return {"a": [body[0], body[1], body[2] + shift, body[3]]}
        if tag == "g":
            return {"g": [body[0], body[1] + shift, body[2]]}
        if tag == "d":
            return {"d": [[k, _shift_offsets(v, shift)] for k, v in body]}
        return {tag: _shift_offsets(body, shift)} if tag == "t" else doc
    return doc
