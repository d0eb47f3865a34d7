"""`SandboxPool`: owns one zygote and hands out isolated worker processes forked from it.

A pool can be shared by many `Sandbox` objects (threads included) in one grading process; each
worker is a fresh fork of a zygote that never ran student code, so one student's monkeypatching
cannot reach another. Without an explicit pool, sandboxes share a lazily started default pool.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from .blocker import FORBIDDEN_PACKAGES
from .limits import Limits

# Shipped in dependency order and exec'd as the package `_sdpa_sandbox` inside the zygote, so
# the worker never needs the `autograder` package importable there.
SANDBOX_MODULES = ("blocker", "codec", "isolation", "worker", "zygote")
BOOTSTRAP = """\
import json, sys, types
payload = json.loads(sys.stdin.buffer.read())
package = types.ModuleType("_sdpa_sandbox")
package.__path__ = []
sys.modules["_sdpa_sandbox"] = package
for name in payload["order"]:
    module = types.ModuleType("_sdpa_sandbox." + name)
    module.__package__ = "_sdpa_sandbox"
    sys.modules[module.__name__] = module
    setattr(package, name, module)
    exec(compile(payload["modules"][name], "<sandbox " + name + ">", "exec"), module.__dict__)
del payload
sys.modules["_sdpa_sandbox.zygote"].main(json.loads(sys.argv[1]))
"""
ZYGOTE_START_SECONDS = 120.0
FIRST_UID = 1_000_000
UID_RANGE = 2**31 - 2 - FIRST_UID
KIT_DIRECTORIES = ("source", "solutions", "tests", "release", "submitted", "autograded",
                   "feedback", ".git")
_warned: set[str] = set()


def _sandbox_sources() -> dict[str, str]:
    here = Path(__file__).parent
    return {name: (here / f"{name}.py").read_text() for name in SANDBOX_MODULES}


def find_hidden_paths(extra: Iterable[str | os.PathLike] = ()) -> list[str]:
    """Paths student code must not read: the forbidden packages, the kit's course material
    when running from a checkout, and `extra` (course directory, gradebook)."""
    paths: list[str] = []
    for name in FORBIDDEN_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        locations = list(spec.submodule_search_locations or []) or [spec.origin]
        for location in locations:
            if location:
                paths.append(os.path.realpath(location))
                checkout = Path(location).resolve().parent
                if (checkout / "pyproject.toml").is_file():
                    paths += [str(checkout / d) for d in KIT_DIRECTORIES]
    paths += [os.path.realpath(p) for p in extra]
    return sorted(set(paths))


def _font_cache_directory() -> str:
    """A directory, private to this user, where the zygote keeps matplotlib's font list.

    Building that list takes a good part of the zygote's start; with namespaces it is mounted
    where student code cannot enter (mode 0700, owned by root), so no student can poison it.
    """
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    directory = base / "sdpa-course" / "sandbox-matplotlib"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o700)
    except OSError:
        return ""
    return str(directory)


def _zygote_environment() -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/",
           "MPLBACKEND": "Agg"}
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS"):
        env[name] = "1"
    return env


class SandboxPool:
    """One zygote shared by many sandboxes; a context manager.

    isolation: "auto" (namespaces where possible, else degrade with a warning), "namespaces"
    (fail if unavailable) or "none" (rlimits and process groups only, e.g. for tests).
    hidden_paths: extra files or directories to hide (course directory, gradebook).
    """

    def __init__(self, *, isolation: str = "auto",
                 hidden_paths: Iterable[str | os.PathLike] = ()):
        if isolation not in ("auto", "namespaces", "none"):
            raise ValueError(f"isolation must be 'auto', 'namespaces' or 'none', not {isolation!r}")
        self.isolation = isolation
        self.hidden = find_hidden_paths(hidden_paths)
        self.mode = ""
        self.warnings: list[str] = []
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._owner = os.getpid()
        self._closed = False
        self._root = ""
        self._pending: tuple[subprocess.Popen, socket.socket] | None = None

    def __enter__(self) -> SandboxPool:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def start(self, wait: bool = True) -> None:
        """Start the zygote now rather than at the first submission.

        With wait=False the zygote boots (about half a second of imports) while the caller goes
        on, e.g. reading the submission; the first `spawn` waits for it.
        """
        with self._lock:
            if wait:
                self._ensure_started()
            elif self._pending is None and not self._running():
                self._begin_launch()

    def _running(self) -> bool:
        return (self._owner == os.getpid() and self._process is not None
                and self._process.poll() is None)

    def _ensure_started(self) -> None:
        if self._closed:
            raise RuntimeError("this SandboxPool is closed")
        if self._owner != os.getpid():  # inherited across fork: the zygote is the parent's
            self._process, self._control, self._pending, self._root = None, None, None, ""
            self._owner = os.getpid()
        if self._pending is not None:
            self._finish_launch()
        if self._running():
            return
        self._stop_zygote()
        self._begin_launch()
        self._finish_launch()

    def _begin_launch(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        config = {"control_fd": theirs.fileno(), "isolation": self.isolation,
                  "hidden": self.hidden, "font_cache": _font_cache_directory()}
        process = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOTSTRAP, json.dumps(config)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=[theirs.fileno()], env=_zygote_environment(), cwd="/",
            start_new_session=True)
        theirs.close()
        payload = {"order": list(SANDBOX_MODULES), "modules": _sandbox_sources()}
        process.stdin.write(json.dumps(payload).encode())
        process.stdin.close()
        self._pending = (process, ours)

    def _finish_launch(self) -> None:
        process, ours = self._pending
        self._pending = None
        ours.settimeout(ZYGOTE_START_SECONDS)
        try:
            raw = ours.recv(1 << 16)
        except OSError:
            raw = b""
        ready = json.loads(raw) if raw else {"ok": False, "error": "the zygote exited"}
        if not ready.get("ok"):
            process.kill()
            detail = process.stderr.read().decode(errors="replace")[-2000:]
            process.wait()
            ours.close()
            raise RuntimeError(f"the sandbox could not start: {ready.get('error')}\n{detail}")
        process.stderr.close()
        # The zygote's private root is mounted on this (host) directory; removing it now would
        # detach that mount, so it goes when the zygote stops.
        self._root = ready.get("root") or ""
        ours.settimeout(30.0)
        self._process, self._control = process, ours
        self.mode = ready["mode"]
        self.warnings = list(ready["warnings"])
        for text in self.warnings:
            if text not in _warned:
                _warned.add(text)
                warnings.warn(text, RuntimeWarning, stacklevel=5)

    def spawn(self, limits: Limits, uid: int) -> tuple[socket.socket, int, int]:
        """Fork a worker; return (its socket, the read end of its output pipe, its pid)."""
        request = json.dumps({"uid": uid, "limits": asdict(limits),
                              "hidden": self.hidden}).encode()
        with self._lock:
            for attempt in range(2):
                self._ensure_started()
                ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                out_read, out_write = os.pipe()
                try:
                    socket.send_fds(self._control, [request], [theirs.fileno(), out_write])
                    reply = self._control.recv(1 << 16)
                except OSError:
                    reply = b""
                finally:
                    theirs.close()
                    os.close(out_write)
                answer = json.loads(reply) if reply else {}
                if answer.get("ok") and type(answer.get("pid")) is int:
                    return ours, out_read, answer["pid"]
                ours.close()
                os.close(out_read)
                self._stop_zygote()
                if attempt:
                    raise RuntimeError(f"the sandbox zygote could not fork a worker: {reply!r}")
        raise AssertionError("unreachable")

    @staticmethod
    def new_uid() -> int:
        """A spare uid for one submission (random, so concurrent pools rarely collide)."""
        return FIRST_UID + secrets.randbelow(UID_RANGE)

    def _stop_zygote(self) -> None:
        if self._pending is not None:
            try:
                self._finish_launch()
            except RuntimeError:
                pass
        if self._control is not None:
            self._control.close()
        if self._process is not None:
            try:
                self._process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process, self._control = None, None
        if self._root:
            try:
                os.rmdir(self._root)
            except OSError:
                pass
            self._root = ""

    def close(self) -> None:
        """Stop the zygote (workers already forked keep running until their sandbox closes)."""
        with self._lock:
            self._closed = True
            if self._owner == os.getpid():
                self._stop_zygote()


_default_pool: SandboxPool | None = None
_default_lock = threading.Lock()


def default_pool() -> SandboxPool:
    """The process-wide pool used by sandboxes created without one."""
    global _default_pool
    with _default_lock:
        if _default_pool is None or _default_pool._owner != os.getpid():
            _default_pool = SandboxPool()
            atexit.register(_default_pool.close)
        return _default_pool
