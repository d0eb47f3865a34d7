"""The zygote: a clean, pre-imported, isolated Python that forks one worker per submission.

Started once per `SandboxPool` (shipped as source via stdin, see `pool.BOOTSTRAP`). It isolates
itself (`isolation.enter_zygote`), imports numpy and matplotlib (Agg) and draws one throwaway
heatmap so fonts and backends are loaded, then never runs student code. For each request on the
control socket it forks one worker, the init of a new PID namespace (unshare(CLONE_NEWPID) then
setns back, so a single fork suffices), which takes its own mount and IPC namespaces, rlimits
and uid and serves the trusted side directly over the socket it was handed. The zygote replies
with the worker's pid, watches it through a pidfd, kills it if the trusted side hangs up, and
when it has exited reports its wait status and CPU time on the worker's socket.
"""

from __future__ import annotations

import gc
import json
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
from dataclasses import dataclass

from . import codec, isolation
from .blocker import FORBIDDEN_PACKAGES, ImportBlocker
from .worker import Worker

THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")


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


def _show_nothing(*_args, **_kwargs):
    return None


def preload() -> None:
    """Import and warm up what an answer needs, once, before any fork."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.show = _show_nothing
    figure, axes = plt.subplots()
    image = axes.imshow(np.eye(3))  # (3, 3) heatmap: loads the colormap, fonts, Agg
    figure.colorbar(image, ax=axes)
    axes.set_title("warm-up")
    axes.set_xticks(range(3), labels=["a", "b", "c"])
    figure.canvas.draw()
    plt.close("all")
    np.ones((4, 4)) @ np.ones((4, 4))  # (4, 4): initialises BLAS


def _write(fd: int, message: dict) -> None:
    data = codec.pack(message)
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass


def _report(fd: int, message: dict) -> None:
    """Send a small message without ever blocking the zygote (a full socket drops it)."""
    try:
        with socket.fromfd(fd, socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.send(codec.pack(message), socket.MSG_DONTWAIT)
    except OSError:
        pass


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    real = os.path.realpath(path or ".")
    return any(real == root or real.startswith(root + os.sep) for root in roots)


def _worker_main(request: dict, channel_fd: int, out_fd: int, mode: str,
                 blocker: ImportBlocker, workdir: str) -> None:
    """In the forked worker: isolate, drop privileges, then serve the trusted side."""
    limits = request["limits"]
    uid = int(request["uid"])
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    if mode == "namespaces":
        isolation.unshare(isolation.CLONE_NEWNS | isolation.CLONE_NEWIPC)
        workdir = isolation.setup_child_mounts(int(limits["disk_mb"]), uid)
        tmpdir = "/tmp"
    else:
        os.setsid()
        tmpdir = workdir
    isolation.apply_limits(limits, isolation.address_space_bytes(), mode)
    if mode in ("namespaces", "uid"):
        isolation.drop_privileges(uid)
    isolation.die_with_parent()
    os.chdir(workdir)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    channel = os.dup(channel_fd)
    os.set_inheritable(channel, False)
    # Close everything else: above all the zygote's sockets to other students' workers.
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
    blocker.hidden_paths = tuple(request.get("hidden", ())) if mode != "namespaces" else ()
    blocker.degraded = mode != "namespaces"
    sys.path[:] = [entry for entry in sys.path if not _inside(entry, blocker.hidden_paths)]
    blocker.install_finder()
    blocker.install_audit_hook()
    Worker(channel, blocker, int(limits["max_transfer_bytes"]),
           int(limits["max_str_chars"])).serve()


@dataclass
class _Child:
    """A worker the zygote watches."""

    pid: int
    channel_fd: int  # the zygote's copy of the worker's socket: hang-ups and the exit report
    uid: int
    workdir: str  # degraded modes only: a host directory to remove
    pidfd: int = -1


class Zygote:
    def __init__(self, control: socket.socket, mode: str, blocker: ImportBlocker,
                 own_pid_namespace: int):
        self.control = control
        self.mode = mode
        self.blocker = blocker
        self.children: dict[int, _Child] = {}  # by pid
        self.poller = select.poll()
        self.poller.register(control, select.POLLIN)
        self.watched: dict[int, tuple[str, _Child]] = {}  # fd -> ("pidfd" | "channel", child)
        self.own_pid_namespace = own_pid_namespace

    def spawn(self, request: dict, channel_fd: int, out_fd: int) -> int:
        uid = int(request["uid"])
        workdir = ""
        if self.mode != "namespaces":
            workdir = tempfile.mkdtemp(prefix="sdpa-sandbox-work-")
            if self.mode == "uid":
                os.chown(workdir, uid, uid)
        else:
            isolation.unshare(isolation.CLONE_NEWPID)  # the next child is a new namespace's init
        try:
            pid = os.fork()
        except OSError:
            pid = -1
        if pid != 0 and self.mode == "namespaces":  # later children start from here again
            isolation.setns(self.own_pid_namespace, isolation.CLONE_NEWPID)
        if pid < 0:
            raise OSError("the zygote could not fork a worker")
        if pid == 0:
            try:
                _worker_main(request, channel_fd, out_fd, self.mode, self.blocker, workdir)
            except BaseException as exc:  # noqa: BLE001 - report set-up failures, then die
                _write(channel_fd, {"op": "setup-failed",
                                    "message": f"{type(exc).__name__}: {exc}"})
            os._exit(71)
        os.close(out_fd)
        child = _Child(pid, channel_fd, uid, workdir)
        self.children[pid] = child
        self.poller.register(channel_fd, 0)  # only POLLHUP/POLLERR: the requests are the worker's
        self.watched[channel_fd] = ("channel", child)
        try:
            child.pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            child.pidfd = -1
        if child.pidfd >= 0:
            self.poller.register(child.pidfd, select.POLLIN)
            self.watched[child.pidfd] = ("pidfd", child)
        return pid

    def reap(self, child: _Child) -> bool:
        """If the worker has exited: clean up after it, report, forget it."""
        try:
            done, status, usage = os.wait4(child.pid, os.WNOHANG)
        except ChildProcessError:
            done, status, usage = child.pid, -1, None
        if not done:
            return False
        if self.mode != "namespaces":
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except OSError:
                pass
            if self.mode == "uid":
                isolation.kill_uid(child.uid)
            shutil.rmtree(child.workdir, ignore_errors=True)
        cpu = usage.ru_utime + usage.ru_stime if usage is not None else 0.0
        _report(child.channel_fd, {"op": "exited", "status": status, "cpu_seconds": cpu})
        for fd in (child.channel_fd, child.pidfd):
            if fd in self.watched:
                self.poller.unregister(fd)
                del self.watched[fd]
            if fd >= 0:
                os.close(fd)
        del self.children[child.pid]
        return True

    def handle_request(self) -> None:
        try:
            data, fds, _flags, _addr = socket.recv_fds(self.control, 1 << 16, 4)
        except OSError:
            data, fds = b"", []
        if not data:  # the trusted process is gone: so are its workers
            for child in list(self.children.values()):
                try:
                    os.kill(child.pid, signal.SIGKILL)
                except OSError:
                    pass
            os._exit(0)
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            self.control.send(b'{"ok": false, "error": "expected two file descriptors"}')
            return
        try:
            pid = self.spawn(json.loads(data), fds[0], fds[1])
        except Exception as exc:  # noqa: BLE001 - the kit's failure, reported to the kit
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.control.send(json.dumps({"ok": False, "error": repr(exc)}).encode())
            return
        self.control.send(json.dumps({"ok": True, "pid": pid}).encode())

    def serve(self) -> None:
        polling = any(child.pidfd < 0 for child in self.children.values())
        while True:
            timeout = 200 if polling else None
            for fd, events in self.poller.poll(timeout):
                if fd == self.control.fileno():
                    self.handle_request()
                    continue
                kind, child = self.watched.get(fd, ("", None))
                if kind == "channel" and events & (select.POLLHUP | select.POLLERR):
                    try:
                        os.kill(child.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    self.poller.unregister(fd)  # keep the fd for the exit report
                    del self.watched[fd]
                elif kind == "pidfd":
                    self.reap(child)
            polling = False
            for child in list(self.children.values()):
                if child.pidfd < 0 and not self.reap(child):
                    polling = True


def main(config: dict) -> None:
    blocker = ImportBlocker()
    blocker.install_finder()
    control = socket.socket(fileno=int(config["control_fd"]))
    hidden = [str(p) for p in config.get("hidden", ())]
    try:
        # Opened before the chroot: the zygote's own root has no /proc.
        own_pid_namespace = (os.open("/proc/self/ns/pid", os.O_RDONLY)
                             if os.path.exists("/proc/self/ns/pid") else -1)
        mode, warnings, root = isolation.enter_zygote(str(config["isolation"]), hidden,
                                                      str(config.get("font_cache", "")))
        mplconfig = isolation.ZYGOTE_MPLCONFIGDIR if mode == "namespaces" else tempfile.mkdtemp(
            prefix="sdpa-sandbox-mpl-")
        os.environ["MPLCONFIGDIR"] = mplconfig
        preload()
        for name in list(sys.modules):
            if name.partition(".")[0] in FORBIDDEN_PACKAGES:
                del sys.modules[name]
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        zygote = Zygote(control, mode, blocker, own_pid_namespace)
    except BaseException as exc:  # noqa: BLE001 - tell the trusted side why, then stop
        control.send(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}).encode())
        raise
    gc.collect()
    gc.freeze()  # keep the pre-imported heap shared between the forks
    control.send(json.dumps({"ok": True, "mode": mode, "warnings": warnings,
                             "root": root, "pid": os.getpid()}).encode())
    zygote.serve()
