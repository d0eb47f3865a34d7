"""The zygote: a clean, pre-imported, isolated Python that forks one worker per submission.

Started once per `SandboxPool` (shipped as compiled code via stdin, see `pool.BOOTSTRAP`). It
imports numpy, which every answer needs, and not matplotlib: importing matplotlib and pyplot
and drawing a figure took about 0.6 s of CPU at every zygote's start (most of a cold `check`)
and made every fork larger, while grading leaves out the lesson's picture (`autograder.
skipping`) and few answers draw. A cell that imports it does so in its worker (Agg, from
`MPLBACKEND`); the private root allowlists it all the same (`ANSWER_DISTRIBUTIONS`).
In mode ``namespaces`` it then decides its private root from what that import loaded
(`rootfs.plan`), enters new namespaces (`isolation.enter_zygote`) and forks the zygote
proper, the init of the new PID namespace, which builds the root, pivots into it and never
runs student code; the first process only waits, as the trusted side's handle on it, so that
killing either takes every worker along.

For each request on a control socket the zygote forks one worker, the init of a new PID
namespace (unshare(CLONE_NEWPID) then setns back, so one fork suffices). The worker joins its
submission's cgroups, isolates itself (`isolation`), says "ready" (the trusted side learns its
pid from the socket's credentials) and serves the trusted side directly over the socket it
was handed. The zygote closes its own copy of that socket, watches the worker through a
pidfd, kills it when the trusted side closes the worker's report pipe, and when it has
exited writes its wait status and CPU time to that pipe, which student code never held.

Besides the pool's own control socket, the zygote serves channels the pool attached for
grading processes it forked (request "attach", one socket passed): each asks for workers the
same way. The end of an attached channel only closes it (that process's workers die with
their report pipes); the end of the pool's own socket ends the zygote and every worker.

A zygote kept warm (`warm`: config "listen_fd" and "idle_seconds") also accepts channels on a
listening socket, from this user only, greeting each with its ready message; the end of the
pool's own socket then only closes it, and the zygote ends once it has served no channel and
no worker for "idle_seconds", or when a channel asks it to ("stop").
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import select
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
from dataclasses import dataclass

from . import codec, isolation, kernel, landlock, rootfs, seccomp
from .blocker import FORBIDDEN_PACKAGES, ImportBlocker
from .worker import Worker

FORBIDDEN_DISTRIBUTIONS = ("sdpa-course",)
# Installed distributions answers may import: the private root binds them and what they
# require, whether or not the zygote imported them (numpy is, before `preload` even runs;
# matplotlib is not).
ANSWER_DISTRIBUTIONS = ("numpy", "matplotlib")
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")
SETUP_FAILED = 71


def student_environment(workdir: str, tmpdir: str) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": tmpdir,
        "USER": "student",
        "LOGNAME": "student",
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": os.path.join(workdir, ".matplotlib"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update({name: "1" for name in THREAD_VARIABLES})
    return env


def preload() -> None:
    """Import and warm up what every answer needs, once, before any fork."""
    import numpy as np  # deferred: only the zygote imports it, never the grader's own process

    np.ones((4, 4)) @ np.ones((4, 4))  # (4, 4): initialises BLAS


def _write(fd: int, message: dict) -> None:
    data = codec.pack(message)
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    real = os.path.realpath(path or ".")
    return any(real == root or real.startswith(root + os.sep) for root in roots)


@dataclass
class Setup:
    """What every worker of this zygote needs to know about it."""

    mode: str
    spare_uids: bool = False  # root: each submission gets a spare uid of the zygote's namespace
    held: tuple[str, ...] = ()  # runtime trees under the root's /tmp, bound into each worker's
    landlock_abi: int = 0


def _worker_main(request: dict, fds: list[int], setup: Setup, blocker: ImportBlocker,
                 workdir: str) -> None:
    """In the forked worker: join the cgroups, isolate, drop privileges, then serve."""
    limits = request["limits"]
    uid = int(request["uid"])
    channel_fd, out_fd, cgroup_fds = fds[0], fds[1], fds[3:]
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for fd in cgroup_fds:  # first: every process the submission starts is counted there
        os.write(fd, b"0")
        os.close(fd)
    tmpdir = workdir
    if setup.mode == isolation.NAMESPACES:
        isolation.isolate_worker(int(limits["disk_mb"]), list(setup.held),
                                 uid if setup.spare_uids else 0)
        isolation.become_student(uid, setup.spare_uids)
        workdir, tmpdir = isolation.WORKDIR, "/tmp"
    else:
        os.setsid()
    isolation.apply_limits(limits, isolation.address_space_bytes(), setup.mode)
    if setup.mode == isolation.NAMESPACES:
        isolation.confine(setup.landlock_abi)
        isolation.check_confined(uid, setup.spare_uids)
    if kernel.LINUX:
        kernel.die_with_parent(signal.SIGKILL)
    os.chdir(workdir)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    channel = os.dup(channel_fd)
    os.set_inheritable(channel, False)
    # Close everything else: the zygote's sockets to other workers above all.
    keep = sorted({0, 1, 2, channel})
    for low, high in zip(keep, keep[1:] + [os.sysconf("SC_OPEN_MAX")], strict=True):
        os.closerange(low + 1, high)
    os.environ.clear()
    os.environ.update(student_environment(workdir, tmpdir))
    os.umask(0o077)
    try:
        sys.stdout.reconfigure(line_buffering=True)
        sys.stderr.reconfigure(line_buffering=True)
    except (AttributeError, ValueError):
        pass
    blocker.unsafe = setup.mode != isolation.NAMESPACES
    blocker.hidden_paths = tuple(request.get("hidden", ())) if blocker.unsafe else ()
    if blocker.hidden_paths:
        sys.path[:] = [entry for entry in sys.path if not _inside(entry, blocker.hidden_paths)]
    blocker.install_finder()
    blocker.install_audit_hook()
    # Before any student code: the trusted side takes this message's credentials as our pid.
    _write(channel, {"op": "ready", "pidns": os.stat("/proc/self/ns/pid").st_ino
                     if kernel.LINUX else 0})
    Worker(channel, blocker, int(limits["max_transfer_bytes"]),
           int(limits["max_str_chars"])).serve()


@dataclass
class _Child:
    """A worker the zygote watches."""

    pid: int
    report_fd: int  # the trusted side reads the exit report here; its hang-up kills the worker
    workdir: str  # unsafe-none only: a host directory to remove
    pidfd: int = -1


class Zygote:
    def __init__(self, control: socket.socket, setup: Setup, blocker: ImportBlocker,
                 own_pid_namespace: int, listener: socket.socket | None = None,
                 idle_seconds: float = 0.0):
        self.control = control  # the pool's own: its end is the zygote's (unless kept warm)
        self.controls = {control.fileno(): control}  # and the channels attached since
        self.setup = setup
        self.blocker = blocker
        self.children: dict[int, _Child] = {}  # by pid
        self.poller = select.poll()
        self.poller.register(control, select.POLLIN)
        self.watched: dict[int, tuple[str, _Child]] = {}  # fd -> ("pidfd" | "report", child)
        self.own_pid_namespace = own_pid_namespace
        self.listener = listener  # kept warm: `check`s connect here
        self.idle_seconds = idle_seconds
        self.hello = b""  # the ready message, for each channel accepted on the listener
        if listener is not None:
            self.poller.register(listener, select.POLLIN)

    def spawn(self, request: dict, fds: list[int]) -> int:
        namespaces = self.setup.mode == isolation.NAMESPACES
        workdir = "" if namespaces else tempfile.mkdtemp(prefix="sdpa-sandbox-work-")
        if namespaces:
            kernel.unshare(kernel.CLONE_NEWPID)  # the next child is a new namespace's init
        try:
            pid = os.fork()
        except OSError:
            pid = -1
        if pid != 0 and namespaces:  # later children start from here again
            kernel.setns(self.own_pid_namespace, kernel.CLONE_NEWPID)
        if pid < 0:
            if workdir:
                shutil.rmtree(workdir, ignore_errors=True)
            raise OSError("the zygote could not fork a worker")
        if pid == 0:
            try:
                _worker_main(request, fds, self.setup, self.blocker, workdir)
            except BaseException as exc:  # noqa: BLE001 - report set-up failures, then die
                _write(fds[0], {"op": "setup-failed",
                                "message": f"{type(exc).__name__}: {exc}"})
            os._exit(SETUP_FAILED)
        for index, fd in enumerate(fds):
            if index != 2:
                os.close(fd)
        child = _Child(pid, fds[2], workdir)
        os.set_blocking(child.report_fd, False)
        self.children[pid] = child
        self.poller.register(child.report_fd, 0)  # POLLERR: the trusted side let go of it
        self.watched[child.report_fd] = ("report", child)
        try:
            child.pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            child.pidfd = -1
        if child.pidfd >= 0:
            self.poller.register(child.pidfd, select.POLLIN)
            self.watched[child.pidfd] = ("pidfd", child)
        return pid

    def _forget(self, fd: int) -> None:
        if fd in self.watched:
            self.poller.unregister(fd)
            del self.watched[fd]

    def reap(self, child: _Child) -> bool:
        """If the worker has exited: clean up after it, report, forget it."""
        try:
            done, status, usage = os.wait4(child.pid, os.WNOHANG)
        except ChildProcessError:
            done, status, usage = child.pid, -1, None
        if not done:
            return False
        if self.setup.mode != isolation.NAMESPACES:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except OSError:
                pass
            shutil.rmtree(child.workdir, ignore_errors=True)
        cpu = usage.ru_utime + usage.ru_stime if usage is not None else 0.0
        try:
            os.write(child.report_fd, json.dumps({"status": status, "cpu_seconds": cpu}).encode())
        except OSError:
            pass
        for fd in (child.report_fd, child.pidfd):
            self._forget(fd)
            if fd >= 0:
                os.close(fd)
        del self.children[child.pid]
        return True

    def attach(self, fds: list[int]) -> None:
        """Serve one more control channel (a grading process's)."""
        if len(fds) != 1:
            raise ValueError(f"attach expects one socket, got {len(fds)} descriptors")
        channel = socket.socket(fileno=fds[0])
        self.controls[channel.fileno()] = channel
        self.poller.register(channel, select.POLLIN)

    def accept(self) -> None:
        """A `check` connecting to this warm zygote: served if it is this user."""
        try:
            channel, _ = self.listener.accept()
        except OSError:
            return
        try:
            uid = struct.unpack("3i", channel.getsockopt(
                socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]
            if uid != os.getuid():  # another user, seen from our namespace
                raise OSError("not this zygote's user")
            channel.setblocking(True)
            channel.send(self.hello)
        except OSError:
            channel.close()
            return
        self.controls[channel.fileno()] = channel
        self.poller.register(channel, select.POLLIN)

    def _stop(self) -> None:
        """Kill every worker and end the zygote (its PID namespace goes with it)."""
        for child in list(self.children.values()):
            try:
                os.kill(child.pid, signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)

    def handle_request(self, control: socket.socket) -> None:
        try:
            data, fds, _flags, _addr = socket.recv_fds(control, 1 << 16, 8)
        except OSError:
            data, fds = b"", []
        own = control is self.control and self.listener is None
        if not data and not own:  # an attached process is gone (or the warm zygote's first)
            self.poller.unregister(control)
            del self.controls[control.fileno()]
            control.close()
            return
        if not data:  # the trusted process is gone: so are its workers
            self._stop()
        try:
            request = json.loads(data)
            if request.get("op") == "stop" and self.listener is not None:
                self._stop()
            if request.get("op") == "attach":
                self.attach(fds)
                control.send(json.dumps({"ok": True}).encode())
                return
            if len(fds) != 3 + int(request.get("cgroup_fds", 0)):
                raise ValueError(f"expected {3 + int(request.get('cgroup_fds', 0))} file "
                                 f"descriptors, got {len(fds)}")
            pid = self.spawn(request, fds)
        except Exception as exc:  # noqa: BLE001 - the kit's failure, reported to the kit
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            control.send(json.dumps({"ok": False, "error": repr(exc)}).encode())
            return
        control.send(json.dumps({"ok": True, "pid": pid}).encode())

    def _idle_timeout_ms(self, idle_since: float) -> int | None:
        """How long to wait before ending for idleness (kept warm, nothing served), or None."""
        if self.listener is None or self.controls or self.children:
            return None
        return max(0, int((idle_since + self.idle_seconds - time.monotonic()) * 1000))

    def serve(self) -> None:
        polling = False
        idle_since = time.monotonic()
        while True:
            timeout = self._idle_timeout_ms(idle_since)
            if timeout == 0:
                self._stop()
            if polling:
                timeout = 200 if timeout is None else min(200, timeout)
            events_ready = self.poller.poll(timeout)
            if self.controls or self.children:
                idle_since = time.monotonic()
            for fd, events in events_ready:
                if self.listener is not None and fd == self.listener.fileno():
                    self.accept()
                    continue
                if fd in self.controls:
                    self.handle_request(self.controls[fd])
                    continue
                kind, child = self.watched.get(fd, ("", None))
                if kind == "report" and events & (select.POLLERR | select.POLLHUP):
                    try:
                        os.kill(child.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    self._forget(fd)  # keep the fd: the report may still be written
                elif kind == "pidfd":
                    self.reap(child)
            polling = False
            for child in list(self.children.values()):
                if child.pidfd < 0 and not self.reap(child):
                    polling = True


def _ask_for_maps(control: socket.socket) -> bool:
    """Have the trusted side write our uid and gid maps; return whether spare uids exist."""
    control.send(json.dumps({"op": "map"}).encode())
    raw = control.recv(1 << 16)
    answer = json.loads(raw) if raw else {"ok": False, "error": "the trusted side is gone"}
    if not answer.get("ok"):
        raise isolation.Unavailable(str(answer.get("error")))
    return bool(answer.get("spare_uids"))


def _become_init() -> None:
    """Fork the zygote proper, init of the new PID namespace; this process waits for it."""
    pid = os.fork()
    if pid == 0:
        kernel.die_with_parent(signal.SIGKILL)
        return
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # above all the control socket
    _, status = os.waitpid(pid, 0)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _forget_forbidden_modules() -> None:
    for name in list(sys.modules):
        if name.partition(".")[0] in FORBIDDEN_PACKAGES:
            del sys.modules[name]


def main(config: dict) -> None:
    marks = {"started": time.monotonic()}  # CLOCK_MONOTONIC: the trusted side's clock too
    gc.disable()  # while importing: a tenth of the time went to collections finding nothing
    blocker = ImportBlocker()
    blocker.install_finder()
    control = socket.socket(fileno=int(config["control_fd"]))
    hidden = [str(p) for p in config.get("hidden", ())]
    setup = Setup(str(config["isolation"]))
    try:
        before = set(sys.modules)
        preload()
        marks["preloaded"] = time.monotonic()
        imported = set(sys.modules) - before
        _forget_forbidden_modules()
        own_pid_namespace = -1
        if setup.mode == isolation.NAMESPACES:
            layout = rootfs.plan(imported, hidden, FORBIDDEN_PACKAGES, FORBIDDEN_DISTRIBUTIONS,
                                 ANSWER_DISTRIBUTIONS)
            marks["planned"] = time.monotonic()
            answers = []
            isolation.enter_zygote(lambda: answers.append(_ask_for_maps(control)))
            setup.spare_uids = answers[0]
            _become_init()
            own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
            try:
                rootfs.enter(rootfs.build(layout))
            except OSError as exc:
                raise isolation.Unavailable(f"could not build the private root ({exc})") from None
            setup.held = tuple(sorted(os.listdir("/tmp")))
            setup.landlock_abi = landlock.abi_version()
        importlib.invalidate_caches()
        sys.path_importer_cache.clear()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        listener = (socket.socket(fileno=int(config["listen_fd"]))
                    if config.get("listen_fd") is not None else None)
        zygote = Zygote(control, setup, blocker, own_pid_namespace, listener,
                        float(config.get("idle_seconds") or 0.0))
    except isolation.Unavailable as exc:
        control.send(json.dumps({"ok": False, "unavailable": str(exc)}).encode())
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001 - tell the trusted side why, then stop
        control.send(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}).encode())
        raise
    gc.collect()
    gc.freeze()  # keep the pre-imported heap shared between the forks
    gc.enable()  # for the workers: student code collects as Python always does
    marks["ready"] = time.monotonic()
    ready = {"ok": True, "mode": setup.mode, "pid": os.getpid(), "landlock": setup.landlock_abi,
             "seccomp": setup.mode == isolation.NAMESPACES and seccomp.available(),
             "spare_uids": setup.spare_uids}
    zygote.hello = json.dumps({**ready, "warm": True}).encode()
    control.send(json.dumps({**ready, "marks": marks}).encode())
    zygote.serve()
