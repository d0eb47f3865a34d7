"""The trusted side's handle on one worker process: its socket, output pipe, report pipe, pid.

Everything that can block does so under a deadline (poll, never select, so any descriptor number
works); everything read is validated by `codec`, and nothing the worker sends can raise out of
here but `WorkerLost` (a frame that is not a reply to the current request is dropped). The
worker's pid comes from the kernel (the credentials of its "ready" message, sent before any
student code ran); its exit status and CPU time from the zygote, over a pipe student code
never held. Its `gauge` (`MemoryGauge`) is opened on it as soon as it is ready, before any
student code ran.

Time limits are charged as the time the worker's main thread ran or chose to wait: the time it
spent runnable but waiting for a processor (its run delay in /proc/PID/schedstat), which other
submissions or the machine's load took from it, is given back, up to a hard deadline (the
submission's budget). A real endless loop runs, so it is charged in full.
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import socket
import struct
import time

from . import codec
from .cgroups import SubmissionCgroup
from .gauge import MemoryGauge
from .limits import Limits
from .pool import SandboxPool

CLOSE_SECONDS = 5.0
READY_SECONDS = 60.0
MAX_DRAIN_BYTES = 4 * 2**20
MAX_REPORT_BYTES = 4096
GRACE_STRETCH = 10  # a starved interrupt may wait up to this many grace periods
_CREDENTIALS = struct.Struct("iII")  # struct ucred: pid, uid, gid


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


class RunDelay:
    """Seconds a process spent runnable but waiting for a processor, from the kernel's
    schedstat (0 where the kernel does not keep it: limits are then plain wall-clock)."""

    def __init__(self, pid: int):
        self.path = f"/proc/{pid}/schedstat"

    def seconds(self) -> float:
        try:
            with open(self.path, "rb") as stat:
                return int(stat.read().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            return 0.0


class _Charge:
    """How long a request has been charged: wall-clock time minus the run delay it suffered."""

    def __init__(self, delay: RunDelay):
        self.delay = delay
        self.began = time.monotonic()
        self.delay_before = delay.seconds()

    def seconds(self) -> float:
        return (time.monotonic() - self.began) - (self.delay.seconds() - self.delay_before)


def _exit_report(raw: bytes) -> tuple[int, float]:
    """(wait status or -1, CPU seconds) from the zygote's report, whatever its bytes."""
    try:
        report = json.loads(raw.decode())
    except (UnicodeDecodeError, ValueError, RecursionError):
        return -1, 0.0
    if type(report) is not dict:
        return -1, 0.0
    status, cpu = report.get("status"), report.get("cpu_seconds")
    status = status if type(status) is int and 0 <= status <= 0xFFFF else -1
    cpu = float(cpu) if type(cpu) is float and math.isfinite(cpu) and cpu >= 0 else 0.0
    return status, cpu


class WorkerProcess:
    """One forked worker process and the channels to it."""

    def __init__(self, pool: SandboxPool, limits: Limits, uid: int,
                 cgroup: SubmissionCgroup | None = None, spawned: tuple | None = None):
        """`spawned`: the channels of a worker `pool.prefork` forked for this uid and cgroup
        (it has run nothing yet); otherwise one is forked now."""
        self.limits = limits
        self.cgroup = cgroup
        self.oom_kills_before = cgroup.oom_kills() if cgroup is not None else 0
        self.sock, self.out_fd, self.report_fd = spawned or pool.spawn(limits, uid, cgroup)
        self.buffer = bytearray()
        self.exit_status: int | None = None
        self.cpu_seconds = 0.0
        self.alive = True
        self.request_id = 0
        self.pid, self.pidfd = 0, -1
        self.gauge: MemoryGauge | None = None
        os.set_blocking(self.out_fd, False)
        os.set_blocking(self.report_fd, False)
        try:
            self._await_ready()
        except BaseException:
            self.close(wait=False)
            raise
        self.sock.setblocking(False)
        self.group_kill = pool.mode != "namespaces"
        self.run_delay = RunDelay(self.pid)
        # Opened now, before any student code ran (see `gauge`).
        self.gauge = MemoryGauge(self.pid)

    # -- start ------------------------------------------------------------------------------

    def _await_ready(self) -> None:
        """Read the worker's first message, "ready", and its sender's pid as the kernel gives
        it; then open a pidfd on that pid and check it is still the same process."""
        deadline = time.monotonic() + READY_SECONDS
        pid = 0
        self.sock.settimeout(READY_SECONDS)
        while True:
            frame = self._pop_frame()
            if frame is not None:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError("the sandbox worker did not start in time")
            self.sock.settimeout(remaining)
            try:
                data, ancillary, _, _ = self.sock.recvmsg(
                    1 << 16, socket.CMSG_SPACE(_CREDENTIALS.size))
            except OSError:
                data, ancillary = b"", []
            if not data:
                self._collect_exit(time.monotonic() + CLOSE_SECONDS)
                raise RuntimeError(f"the sandbox worker exited while starting "
                                   f"(status {self.exit_status})")
            for level, kind, payload in ancillary:
                if (level, kind) == (socket.SOL_SOCKET, socket.SCM_CREDENTIALS) and not pid:
                    pid = _CREDENTIALS.unpack(payload[:_CREDENTIALS.size])[0]
            self.buffer += data
        message, _ = frame
        if message.get("op") == "setup-failed":
            raise RuntimeError(f"the sandbox worker could not start: {message.get('message')}")
        if message.get("op") != "ready" or pid <= 0:
            raise RuntimeError(f"the sandbox worker sent {message.get('op')!r} before 'ready'")
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 0)
        self.pid = pid
        try:  # signals through a pidfd cannot hit a recycled pid
            self.pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            raise RuntimeError("the sandbox worker exited while starting") from None
        except (AttributeError, OSError):
            self.pidfd = -1
        try:  # still the process that said "ready" (not a pid recycled in between)?
            same = os.stat(f"/proc/{pid}/ns/pid").st_ino == message.get("pidns")
        except OSError:
            same = self.pidfd >= 0  # no view of it: the pidfd opened at once is the best
        if not same:
            raise RuntimeError("the sandbox worker exited while starting")

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
        for fd, _ in poller.poll(min(remaining, 3600.0) * 1000):
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
            else:  # a kernel without pidfds (before Linux 5.3)
                os.kill(self.pid, signum)
        except OSError:
            pass

    # -- requests ---------------------------------------------------------------------------

    def _deadline(self, charge: _Charge, seconds: float, hard: float) -> float:
        """When `charge` will have reached `seconds` at the soonest, never after `hard`."""
        return min(time.monotonic() + max(seconds - charge.seconds(), 0.0), hard)

    def exchange(self, message: dict, blob: bytes | bytearray, seconds: float,
                 sink: list[OutputCapture], hard_deadline: float = math.inf
                 ) -> tuple[dict, bytes, bool]:
        """Send a request and wait for its reply: (reply, blob, interrupted).

        The request may be charged `seconds` (see the module docstring) and never runs past
        `hard_deadline`; then SIGINT, and SIGKILL if it does not answer within the grace
        period. `interrupted` means SIGINT was sent but the worker answered. Raises WorkerLost
        if the worker is gone (killed here at the time limit, or dead).
        """
        if not self.alive or self.sock is None:
            raise WorkerLost("died", "the submission's process is not running")
        self.request_id += 1
        message = dict(message, id=self.request_id)
        charge = _Charge(self.run_delay)
        limit, deadline = seconds, min(time.monotonic() + seconds, hard_deadline)
        interrupted = False
        try:
            self._send(codec.pack(message, blob), deadline, sink)
        except TimeoutError:
            self.kill()
            raise WorkerLost("timeout", f"did not accept its input within {seconds:g} s") from None
        except OSError:  # the worker is gone: collect its exit status
            self._finish()
            raise self._death() from None
        while True:
            try:
                reply, reply_blob = self._next_message(deadline, sink)
            except TimeoutError:
                now = time.monotonic()
                if now < hard_deadline and charge.seconds() < limit - 0.01:
                    deadline = self._deadline(charge, limit, hard_deadline)
                    continue  # it was kept from a processor: give that time back
                if not interrupted:
                    interrupted = True
                    self.signal(signal.SIGINT)
                    grace = self.limits.interrupt_grace_seconds
                    charge, limit = _Charge(self.run_delay), grace
                    hard_deadline = now + grace * GRACE_STRETCH
                    deadline = now + grace
                    continue
                self.kill()
                self._finish()
                raise WorkerLost("timeout", f"timed out after {seconds:g} s") from None
            except codec.MalformedMessage as exc:
                self.kill()
                self._finish()
                raise WorkerLost("died", f"the process sent a malformed reply ({exc})") from None
            if reply is None:
                self._finish()
                raise self._death()
            if reply.get("op") == "reply" and reply.get("id") == self.request_id:
                self._drain_output(sink)
                return reply, reply_blob, interrupted
            # Anything else (a stale reply, a forged "ready" or "exited") is student noise.

    # -- the end ----------------------------------------------------------------------------

    def _finish(self) -> None:
        """The worker is gone or going: make sure it is dead, then read the zygote's report."""
        self.kill()
        self._collect_exit(time.monotonic() + CLOSE_SECONDS)

    def _collect_exit(self, deadline: float) -> None:
        """Read the zygote's exit report (it comes once the worker has been reaped)."""
        if self.report_fd < 0 or self.exit_status is not None:
            return
        raw = bytearray()
        poller = select.poll()
        poller.register(self.report_fd, select.POLLIN)
        while len(raw) < MAX_REPORT_BYTES:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not poller.poll(remaining * 1000):
                break
            try:
                data = os.read(self.report_fd, MAX_REPORT_BYTES)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                break
            raw += data
        if raw:
            self.exit_status, self.cpu_seconds = _exit_report(bytes(raw))
        self.alive = False

    def _death(self) -> WorkerLost:
        self.alive = False
        status = self.exit_status
        if self.cgroup is not None and self.cgroup.oom_kills() > self.oom_kills_before:
            return WorkerLost("memory-limit", "ran past the submission's memory limit")
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

    def close(self, wait: bool = True) -> None:
        """Kill the worker and everything it started; with `wait`, until the zygote confirms."""
        self.kill()
        if wait:
            self._collect_exit(time.monotonic() + CLOSE_SECONDS)
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.gauge is not None:
            self.gauge.close()
        for name in ("out_fd", "report_fd", "pidfd"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)
