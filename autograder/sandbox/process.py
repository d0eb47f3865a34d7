"""The trusted side's handle on one worker process: its socket, its output pipe, its pid.

Everything that can block does so under a deadline (poll, never select, so any descriptor number
works); everything read is validated by `codec`. A worker that is gone raises `WorkerLost`.
"""

from __future__ import annotations

import os
import select
import signal
import time

from . import codec
from .limits import Limits
from .pool import SandboxPool

CLOSE_SECONDS = 5.0
MAX_DRAIN_BYTES = 4 * 2**20


class OutputCapture:
    """Keeps the first `limit` bytes written, counts the rest."""

    def __init__(self, limit: int):
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += data[:room]
        self.dropped += max(0, len(data) - max(room, 0))

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[... {self.dropped} bytes dropped]"
        return text


class WorkerLost(Exception):
    """The worker process is gone; `status` is a CellOutcome status, `message` says why."""

    def __init__(self, status: str, message: str):
        self.status = status
        super().__init__(message)


class WorkerProcess:
    """One forked worker process and the two channels to it."""

    def __init__(self, pool: SandboxPool, limits: Limits, uid: int):
        self.limits = limits
        self.sock, self.out_fd, self.pid = pool.spawn(limits, uid)
        try:  # signals through a pidfd cannot hit a recycled pid
            self.pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            self.pidfd = -1
        self.sock.setblocking(False)
        os.set_blocking(self.out_fd, False)
        self.group_kill = pool.mode != "namespaces"
        self.buffer = bytearray()
        self.exit_status: int | None = None
        self.cpu_seconds = 0.0
        self.alive = True
        self.request_id = 0

    # -- low level --------------------------------------------------------------------------

    def _drain_output(self, sink: list[OutputCapture]) -> None:
        total = 0
        while self.out_fd >= 0 and total < MAX_DRAIN_BYTES:
            try:
                data = os.read(self.out_fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                os.close(self.out_fd)
                self.out_fd = -1
                return
            total += len(data)
            for output in sink:
                output.add(data)

    def _pop_frame(self) -> tuple[dict, bytes] | None:
        size = codec.HEADER.size
        if len(self.buffer) < size:
            return None
        json_len, blob_len = codec.parse_header(bytes(self.buffer[:size]),
                                                self.limits.max_transfer_bytes)
        end = size + json_len + blob_len
        if len(self.buffer) < end:
            return None
        message = codec.parse_json(bytes(self.buffer[size:size + json_len]))
        blob = bytes(self.buffer[size + json_len:end])
        del self.buffer[:end]
        return message, blob

    def _next_message(self, deadline: float, sink: list[OutputCapture] | None
                      ) -> tuple[dict | None, bytes]:
        """The next frame from the worker side; (None, b"") at end of stream.

        Raises TimeoutError at the deadline and codec.MalformedMessage on garbage.
        """
        sink = sink or []
        while True:
            frame = self._pop_frame()
            if frame is not None:
                return frame
            if self.sock is None:
                return None, b""
            readable = self._wait(deadline, select.POLLIN, sink)
            if readable:
                try:
                    data = self.sock.recv(1 << 20)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    self._drain_output(sink)
                    self.sock.close()
                    self.sock = None
                    self.alive = False
                else:
                    self.buffer += data

    def _wait(self, deadline: float, events: int, sink: list[OutputCapture]) -> bool:
        """Wait until the socket is ready for `events`, draining the output pipe meanwhile.

        poll, not select: a grading process may hold more than FD_SETSIZE descriptors.
        """
        poller = select.poll()
        poller.register(self.sock, events)
        if self.out_fd >= 0:
            poller.register(self.out_fd, select.POLLIN)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        ready = False
        for fd, _ in poller.poll(remaining * 1000):
            if fd == self.out_fd:
                self._drain_output(sink)
            else:
                ready = True
        return ready

    def _send(self, data: bytes, deadline: float, sink: list[OutputCapture]) -> None:
        view = memoryview(data)
        while view:
            if self._wait(deadline, select.POLLOUT, sink):
                try:
                    view = view[self.sock.send(view):]
                except BlockingIOError:
                    continue

    def signal(self, signum: int) -> None:
        if not self.pid or self.exit_status is not None:
            return
        try:
            if self.group_kill and signum == signal.SIGKILL:
                os.killpg(self.pid, signum)
            if self.pidfd >= 0:
                signal.pidfd_send_signal(self.pidfd, signum)
            else:
                os.kill(self.pid, signum)
        except OSError:
            pass

    # -- requests ---------------------------------------------------------------------------

    def exchange(self, message: dict, blob: bytes | bytearray, seconds: float,
                 sink: list[OutputCapture]) -> tuple[dict, bytes, bool]:
        """Send a request and wait for its reply: (reply, blob, interrupted).

        `interrupted` means the time limit passed and SIGINT was sent, but the worker answered.
        Raises WorkerLost if the worker is gone (killed here at the time limit, or dead).
        """
        if not self.alive or self.sock is None:
            raise WorkerLost("died", "the submission's process is not running")
        self.request_id += 1
        message = dict(message, id=self.request_id)
        deadline = time.monotonic() + seconds
        interrupted = False
        try:
            self._send(codec.pack(message, blob), deadline, sink)
        except TimeoutError:
            self.kill()
            raise WorkerLost("timeout", f"did not accept its input within {seconds:g} s") from None
        except OSError:  # the worker is gone: collect its exit status
            self._collect_exit(time.monotonic() + 1.0)
            raise self._death() from None
        while True:
            try:
                reply, reply_blob = self._next_message(deadline, sink)
            except TimeoutError:
                if not interrupted:
                    interrupted = True
                    self.signal(signal.SIGINT)
                    deadline = time.monotonic() + self.limits.interrupt_grace_seconds
                    continue
                self.kill()
                raise WorkerLost("timeout", f"timed out after {seconds:g} s") from None
            except codec.MalformedMessage as exc:
                self.kill()
                raise WorkerLost("died", f"the process sent a malformed reply ({exc})") from None
            if reply is None:
                raise self._death()
            op = reply.get("op")
            if op == "setup-failed":
                self.kill()
                raise RuntimeError(f"the sandbox worker could not start: {reply.get('message')}")
            if op == "exited":
                self._note_exit(reply)
            elif op == "reply" and reply.get("id") == self.request_id:
                self._drain_output(sink)
                return reply, reply_blob, interrupted

    def _note_exit(self, message: dict) -> None:
        status, cpu = message.get("status"), message.get("cpu_seconds")
        self.exit_status = status if type(status) is int else -1
        self.cpu_seconds = float(cpu) if type(cpu) in (int, float) else 0.0
        self.alive = False

    def _death(self) -> WorkerLost:
        self.alive = False
        status = self.exit_status
        if status is None or status < 0:
            return WorkerLost("died", "the process ended unexpectedly")
        # However it ended (SIGXCPU, its handler's exit, the hard limit's SIGKILL), a worker
        # that used up its CPU time was stopped by the CPU limit.
        if (self.cpu_seconds >= self.limits.cpu_seconds - 0.05
                or (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU)
                or (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 128 + signal.SIGXCPU)):
            return WorkerLost("timeout", f"ran past its CPU limit ({self.limits.cpu_seconds} s)")
        if os.WIFSIGNALED(status):
            signum = os.WTERMSIG(status)
            try:
                name = signal.Signals(signum).name
            except ValueError:
                name = str(signum)
            return WorkerLost("died", f"the process was killed by signal {name}")
        return WorkerLost("died", f"the process exited with code {os.WEXITSTATUS(status)}")

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.alive = False

    def _collect_exit(self, deadline: float) -> None:
        """Read until the zygote's exit report (or the end of the stream, or the deadline)."""
        try:
            while self.sock is not None:
                message, _ = self._next_message(deadline, None)
                if message is None:
                    return
                if message.get("op") == "exited":
                    self._note_exit(message)
                    return
        except (TimeoutError, codec.MalformedMessage):
            pass

    def close(self, wait: bool = True) -> None:
        """Kill the worker and everything it started; wait until the zygote confirms."""
        self.kill()
        if wait:
            self._collect_exit(time.monotonic() + CLOSE_SECONDS)
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.out_fd >= 0:
            os.close(self.out_fd)
            self.out_fd = -1
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1
