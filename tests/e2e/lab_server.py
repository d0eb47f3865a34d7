"""A real `jupyter lab` server on loopback, for the browser tests: started, waited for, stopped.

Everything the server would otherwise read from or write to the user's home (config, runtime
files, lab settings and workspaces, IPython's profile) lives in a private state folder, so a
test run neither depends on nor changes the machine's Jupyter set-up.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

# Lab settings: a fresh user would dismiss the news prompt and the update check by hand (they
# pop up over the notebook and try the network). Every cell stays attached to the page, so a
# cell's place on the page is its index in the notebook (JupyterLab's documented mode
# "without side effects"; the default attaches cells lazily as they scroll into view).
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False,
    },
    # the preferred kernel starts by itself: a busy machine can open the notebook before
    # the kernel specs are listed, and JupyterLab would then ask which kernel with a dialog
    # that blocks every cell (a student ticks "Always start the preferred kernel" once)
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "windowingMode": "none", "autoStartDefaultKernel": True,
    },
}


def _runtime_port(runtime: Path) -> int | None:
    """The port the server bound, from the runtime file it writes once listening (the folder
    is this server's own)."""
    for info in runtime.glob("jpserver-*.json"):
        try:
            return int(json.loads(info.read_text())["port"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # not completely written yet
    return None


@dataclass
class LabServer:
    root_dir: Path
    port: int
    token: str
    process: subprocess.Popen
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        """An address on the server; the token logs the browser in on its first visit."""
        separator = "&" if "?" in path else "?"
        return f"{self.base_url}/{path.lstrip('/')}{separator}token={self.token}"

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the server's log that are not routine `[I ...]` lines."""
        kept = [line for line in self.log_text().splitlines() if not line.startswith("[I ")]
        return "\n".join(kept[-lines:])

    def stop(self, timeout: float = 15.0) -> None:
        if self.process.poll() is not None:
            return
        # Its own process group: the kernels it started go with it.
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout)


def _private_environment(state: Path) -> dict[str, str]:
    settings = state / "lab-settings"
    for name, values in LAB_SETTINGS.items():
        plugin, file_name = name.rsplit("/", 1)
        (settings / plugin).mkdir(parents=True, exist_ok=True)
        (settings / plugin / file_name).write_text(json.dumps(values))
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)  # nbgrader shells out to `alembic` from here
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    env.update({
        "JUPYTER_CONFIG_DIR": str(state / "config"),
        "JUPYTER_RUNTIME_DIR": str(state / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(state / "workspaces"),
        "IPYTHONDIR": str(state / "ipython"),
        "MPLCONFIGDIR": str(state / "matplotlib"),
        "JUPYTER_PLATFORM_DIRS": "1",
    })
    env.pop("JUPYTER_TOKEN", None)
    return env


def start_lab_server(root_dir: Path, state: Path, *, timeout: float = 90.0) -> LabServer:
    """Start `jupyter lab` on 127.0.0.1 serving `root_dir` (also its working directory, where
    nbgrader's formgrader reads the course's nbgrader_config.py); return once it answers."""
    state.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(24)
    log_path = state / "jupyter-lab.log"
    # port 0: the server binds a port of the system's choosing and names it in its runtime file
    command = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", "--ServerApp.port=0", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root_dir}",
        "--ServerApp.allow_root=True",  # CI runs as root; the server is on loopback only
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=root_dir, env=_private_environment(state), stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    server = LabServer(root_dir, 0, token, process, log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with status {process.returncode}:\n"
                               f"{server.log_tail()}")
        if not server.port:
            server.port = _runtime_port(state / "runtime") or 0
            if not server.port:
                time.sleep(0.2)
                continue
        try:
            with urllib.request.urlopen(server.url("api/status"), timeout=2) as response:
                if response.status == 200:
                    return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)  # polling the server's own readiness endpoint, not waiting on the UI
    server.stop()
    raise RuntimeError(f"jupyter lab did not answer within {timeout:.0f} s:\n{server.log_tail()}")
