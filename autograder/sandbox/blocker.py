"""Import blocking inside the worker: the reference and the grader are never importable.

Two layers, both installed before any student code runs. A meta-path finder at the front of
`sys.meta_path` refuses the forbidden top-level packages whatever the spelling
(`importlib.import_module("sdpa" + "_ref")`, `__import__`, ...). An audit hook, which student code
cannot remove, refuses them again for import statements if the finder was taken out, and in
mode unsafe-none refuses to open files under the hidden paths. Every attempt is recorded.
Shipped into the sandbox as source: standard library only.
"""

from __future__ import annotations

import os
import sys

FORBIDDEN_PACKAGES = ("sdpa_ref", "autograder", "sdpa_course")
REFUSAL = "is not allowed in a submission"
# Without namespaces nothing else stops these, so the audit hook refuses them: new processes
# (which the hook cannot follow), signals (the grader may run as the same user), the network
# and loading native code (which could make system calls the hook never sees).
UNSAFE_MODE_REFUSALS = {
    "subprocess.Popen": "starting a process", "os.system": "starting a process",
    "os.exec": "starting a process", "os.posix_spawn": "starting a process",
    "os.spawn": "starting a process", "pty.spawn": "starting a process",
    "os.kill": "sending a signal", "os.killpg": "sending a signal",
    "signal.pthread_kill": "sending a signal",
    "socket.connect": "network access", "socket.bind": "network access",
    "socket.sendto": "network access", "socket.sendmsg": "network access",
    "ctypes.dlopen": "loading native code", "ctypes.dlsym": "loading native code",
}


def is_refusal(exc: BaseException) -> bool:
    """Whether `exc` is the error this module raises instead of a forbidden module."""
    return (type(exc) is ModuleNotFoundError and isinstance(exc.name, str)
            and exc.name in FORBIDDEN_PACKAGES and str(exc).endswith(REFUSAL))


class ImportBlocker:
    """Meta-path finder refusing FORBIDDEN_PACKAGES; `attempts` lists what was refused."""

    def __init__(self, hidden_paths: tuple[str, ...] = ()):
        self.attempts: list[str] = []
        self.hidden_paths = tuple(os.path.realpath(p) for p in hidden_paths)
        self.unsafe = False  # unsafe-none: the audit hook also enforces UNSAFE_MODE_REFUSALS
        self._in_hook = False

    def refuse(self, fullname: str):
        top = fullname.partition(".")[0]
        self.attempts.append(top)
        raise ModuleNotFoundError(f"importing '{top}' {REFUSAL}", name=top)

    # importlib.abc.MetaPathFinder protocol
    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in FORBIDDEN_PACKAGES:
            self.refuse(fullname)
        return None

    def invalidate_caches(self):
        pass

    def audit(self, event: str, args: tuple) -> None:
        if event == "import":
            name = args[0] if args and isinstance(args[0], str) else ""
            if name.partition(".")[0] in FORBIDDEN_PACKAGES:
                self.refuse(name)
        elif self.hidden_paths and event in ("open", "os.listdir", "os.scandir", "os.chdir"):
            self._check_path(args[0] if args else None)
        elif self.unsafe and event in UNSAFE_MODE_REFUSALS:
            raise PermissionError(13, f"{UNSAFE_MODE_REFUSALS[event]} is not allowed in a "
                                  "submission graded without namespace isolation")

    def _check_path(self, path) -> None:
        if self._in_hook or path is None or isinstance(path, int):
            return
        self._in_hook = True
        try:
            real = os.path.realpath(os.fsdecode(os.fspath(path)))
        except (TypeError, ValueError, OSError):
            return
        finally:
            self._in_hook = False
        for hidden in self.hidden_paths:
            if real == hidden or real.startswith(hidden + os.sep):
                raise PermissionError(13, "Permission denied", str(path))

    def install_finder(self) -> None:
        """Put the finder first on sys.meta_path and forget any forbidden module loaded."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        sys.meta_path.insert(0, self)
        for name in list(sys.modules):
            if name.partition(".")[0] in FORBIDDEN_PACKAGES:
                del sys.modules[name]

    def install_audit_hook(self) -> None:
        """Add the audit hook; Python offers no way to remove it again."""
        sys.addaudithook(self.audit)
