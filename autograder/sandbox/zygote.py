"""The zygote: a clean, pre-imported, isolated Python that forks one worker per submission.

Started once per `SandboxPool` (shipped as source via stdin, see `pool.BOOTSTRAP`). It isolates
itself (`isolation.enter_zygote`), imports numpy and matplotlib (Agg) and draws one throwaway
heatmap so fonts and backends are loaded, then never runs student code: for each request on the
control socket it forks a monitor (C1) which forks the worker (C2). C2 gets its own namespaces,
rlimits and uid and serves the trusted side directly over the socket it was handed; C1 reports
C2's pid, waits for it, kills what it left behind and reports its exit status.
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


def _monitor(pid: int, channel_fd: int) -> tuple[int, float]:
    """Wait for the worker; kill it if the trusted side hangs up.

    Returns its wait status and the CPU seconds it used.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    poller = select.poll()
    poller.register(channel_fd, 0)  # only POLLHUP/POLLERR: the requests are the worker's
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, usage.ru_utime + usage.ru_stime
        for fd, events in poller.poll(None if pidfd is not None else 200):
            if fd == channel_fd and events & (select.POLLHUP | select.POLLERR):
                os.kill(pid, signal.SIGKILL)
                poller.unregister(channel_fd)


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    real = os.path.realpath(path or ".")
    return any(real == root or real.startswith(root + os.sep) for root in roots)


def _worker_main(request: dict, channel_fd: int, out_fd: int, mode: str,
                 blocker: ImportBlocker, workdir: str) -> None:
    """C2: isolate, drop privileges, then serve the trusted side until told to stop."""
    limits = request["limits"]
    uid = int(request["uid"])
    if mode == "namespaces":
        workdir = isolation.setup_child_mounts(int(limits["disk_mb"]), uid)
        tmpdir = "/tmp"
    else:
        os.setsid()
        tmpdir = workdir
    isolation.apply_limits(limits, isolation.address_space_bytes(), mode)
    if mode in ("namespaces", "uid"):
        isolation.drop_privileges(uid)
    os.chdir(workdir)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    channel = os.dup(channel_fd)
    os.set_inheritable(channel, False)
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
    sys.path[:] = [entry for entry in sys.path if not _inside(entry, blocker.hidden_paths)]
    blocker.install_finder()
    blocker.install_audit_hook()
    Worker(channel, blocker, int(limits["max_transfer_bytes"]),
           int(limits["max_str_chars"])).serve()


def _spawn(request: dict, channel_fd: int, out_fd: int, mode: str,
           blocker: ImportBlocker) -> None:
    """C1: runs as root in the zygote's namespaces; never returns."""
    isolation.reset_signals()
    uid = int(request["uid"])
    workdir = ""
    if mode == "namespaces":
        isolation.unshare(isolation.CLONE_NEWPID | isolation.CLONE_NEWNS | isolation.CLONE_NEWIPC)
    else:
        workdir = tempfile.mkdtemp(prefix="sdpa-sandbox-work-")
        if mode == "uid":
            os.chown(workdir, uid, uid)
    pid = os.fork()
    if pid == 0:
        try:
            _worker_main(request, channel_fd, out_fd, mode, blocker, workdir)
        except BaseException as exc:  # noqa: BLE001 - report set-up failures, then die
            _write(channel_fd, {"op": "setup-failed", "message": f"{type(exc).__name__}: {exc}"})
        os._exit(71)
    os.close(out_fd)
    _write(channel_fd, {"op": "spawned", "pid": pid})
    status, cpu_seconds = _monitor(pid, channel_fd)
    if mode != "namespaces":
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        if mode == "uid":
            isolation.kill_uid(uid)
        shutil.rmtree(workdir, ignore_errors=True)
    _write(channel_fd, {"op": "exited", "status": status, "cpu_seconds": cpu_seconds})


def main(config: dict) -> None:
    blocker = ImportBlocker()
    blocker.install_finder()
    control = socket.socket(fileno=int(config["control_fd"]))
    hidden = [str(p) for p in config.get("hidden", ())]
    try:
        mode, warnings, root = isolation.enter_zygote(str(config["isolation"]), hidden)
        mplconfig = isolation.ZYGOTE_MPLCONFIGDIR if mode == "namespaces" else tempfile.mkdtemp(
            prefix="sdpa-sandbox-mpl-")
        os.environ["MPLCONFIGDIR"] = mplconfig
        preload()
    except BaseException as exc:  # noqa: BLE001 - tell the trusted side why, then stop
        control.send(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}).encode())
        raise
    for name in list(sys.modules):
        if name.partition(".")[0] in FORBIDDEN_PACKAGES:
            del sys.modules[name]
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    gc.collect()
    gc.freeze()  # keep the pre-imported heap shared between the forks
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the monitors are reaped automatically
    control.send(json.dumps({"ok": True, "mode": mode, "warnings": warnings,
                             "root": root, "pid": os.getpid()}).encode())
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(control, 1 << 16, 4)
        except OSError:
            os._exit(0)
        if not data:
            os._exit(0)
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            control.send(b'{"ok": false, "error": "expected two file descriptors"}')
            continue
        request = json.loads(data)
        pid = os.fork()
        if pid == 0:
            try:
                control.close()
                _spawn(request, fds[0], fds[1], mode, blocker)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        control.send(b'{"ok": true}')
