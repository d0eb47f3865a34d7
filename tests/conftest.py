"""What every test of the kit runs under, for the whole session.

- The session gets a folder of its own (`kit-tests-*` in the machine's temporary folder)
  holding its HOME, XDG_* folders, TMPDIR and Jupyter and IPython folders, so the tests
  neither read nor fill the machine's.
- When the session ends it fails the run, naming each, for anything left behind:
  - in its HOME, or in its TMPDIR except pytest's `tmp_path` folders;
  - in the working tree: `git status --ignored --porcelain` is compared with the session's
    start (Python's own bytecode caches aside);
  - among the processes: any process started by the session (a descendant of pytest, or one
    carrying the session's `SDPA_TEST_SESSION` mark in its environment) still alive 30 s
    after the session's end;
  - in /dev/shm: the entries a process of the session held (tests/leftovers.py claims them)
    that are still there;
  - in the machine's temporary folder: new entries named like the kit's (`sdpa-*`,
    `dask-scratch-space`), which is where a process with a scrubbed environment (the
    sandbox's) would leave them.
  The machine's folders are shared with other programs and other test runs: a new entry
  there that the session cannot tell is its own (in the machine's temporary folder, in
  /dev/shm, in the user's real home) fails the run only under `SDPA_REQUIRE_ALL=1` (CI,
  where the run has the machine to itself) and is reported otherwise.
- A passing session removes its folder. A failed one removes it too, saying so, unless
  `SDPA_KEEP_TEST_TMP=1` asks to keep it: then it says where it is.
- A test leaves `os.environ` as it found it (tests change it with `monkeypatch`): one that
  does not fails.
- `sdpa-course check` keeps no zygote warm (`SDPA_COURSE_WARM_SANDBOX=0`): a test would
  leave one running for ten minutes after the session; the tests of that warm zygote turn it
  on for themselves and stop it.
- `SDPA_REQUIRE_ALL=1` (set by `.ci/run`) turns every "not installed here" skip into a
  failure (`tests/required.py`); only PyTorch may be absent.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from leftovers import CLAIMED, SHARED_MEMORY, claim_shared_memory_of, process_ids
from required import required_everywhere

# Kit-made names that must not be left in the machine's temporary folder.
KIT_LEFTOVERS = ("sdpa-", "sdpa_", "dask-scratch-space")
# What the session redirects into its own folder: variable -> sub-folder.
PRIVATE_DIRS = {
    "HOME": "home",
    "TMPDIR": "tmp",
    "XDG_CONFIG_HOME": "xdg/config",
    "XDG_DATA_HOME": "xdg/data",
    "XDG_STATE_HOME": "xdg/state",
    "XDG_CACHE_HOME": "xdg/cache",
    "XDG_RUNTIME_DIR": "xdg/runtime",
    "JUPYTER_CONFIG_DIR": "jupyter-config",
    "JUPYTER_DATA_DIR": "jupyter-data",
    "JUPYTER_RUNTIME_DIR": "jupyter-runtime",
    "IPYTHONDIR": "ipython",
    "MPLCONFIGDIR": "matplotlib",
    "npm_config_cache": "npm",
    # pip's user agent runs `rustc --version` whenever rustc is on PATH: rustup's proxy then
    # writes its settings into RUSTUP_HOME (~/.rustup), here the session's own folder
    "RUSTUP_HOME": "rustup",
    # hypothesis keeps its examples in the working directory's .hypothesis/ otherwise
    "HYPOTHESIS_STORAGE_DIRECTORY": "hypothesis",
}
# Set for the whole session: variable -> value.
SESSION_SETTINGS = {"SDPA_COURSE_WARM_SANDBOX": "0"}
SESSION_MARK = "SDPA_TEST_SESSION"  # in every process the session starts with its environment
KEEP = "SDPA_KEEP_TEST_TMP"
# What Python itself writes in a working tree: not the tests' leftovers.
OWN_CACHES = ("__pycache__/", ".pytest_cache/", ".ruff_cache/")
PROCESS_GRACE_SECONDS = 30.0
_STATE = pytest.StashKey[dict]()


def _tree(folder: Path, depth: int) -> set[str]:
    """Paths under `folder` down to `depth` levels, relative to it (names only)."""
    found: set[str] = set()
    if depth == 0 or not folder.is_dir():
        return found
    try:
        entries = list(folder.iterdir())
    except OSError:
        return found
    for entry in entries:
        found.add(entry.name)
        if entry.is_dir() and not entry.is_symlink():
            found |= {f"{entry.name}/{sub}" for sub in _tree(entry, depth - 1)}
    return found


def _entries(folder: Path) -> set[str]:
    try:
        return {p.name for p in folder.iterdir()}
    except OSError:
        return set()


def _working_tree(checkout: Path) -> set[str] | None:
    """`git status --ignored --porcelain` of the checkout, lines as a set; None without git."""
    try:
        done = subprocess.run(["git", "status", "--ignored", "--porcelain"], cwd=checkout,
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return {line for line in done.stdout.splitlines()
            if not any(cache in line[3:] or line[3:].startswith(cache.rstrip("/"))
                       for cache in OWN_CACHES)}


def _real_homes() -> set[Path]:
    import pwd

    homes = {Path(os.path.expanduser("~"))}
    try:
        homes.add(Path(pwd.getpwuid(os.getuid()).pw_dir))
    except KeyError:
        pass
    return {home for home in homes if home.is_dir()}


def pytest_configure(config):
    system_tmp = Path(tempfile.gettempdir())
    root = Path(tempfile.mkdtemp(prefix="kit-tests-", dir=system_tmp))
    root.chmod(0o755)  # the PostgreSQL server runs as `postgres` and must reach its folder
    checkout = Path(__file__).resolve().parents[1]
    homes = _real_homes()
    saved = {name: os.environ.get(name)
             for name in (*PRIVATE_DIRS, *SESSION_SETTINGS, SESSION_MARK)}
    for name, sub in PRIVATE_DIRS.items():
        (root / sub).mkdir(parents=True)
        os.environ[name] = str(root / sub)
    (root / "xdg" / "runtime").chmod(0o700)  # as the XDG specification asks
    os.environ.update(SESSION_SETTINGS)
    os.environ[SESSION_MARK] = mark = secrets.token_hex(8)
    (root / "tmp").chmod(0o1777)  # like /tmp: tests may run code as another user
    tempfile.tempdir = None  # read TMPDIR again
    config.stash[_STATE] = {
        "root": root, "saved": saved, "started": time.time(), "mark": mark,
        "system_tmp": system_tmp, "system_tmp_entries": _entries(system_tmp),
        "shared_memory": _entries(SHARED_MEMORY),
        "homes": {home: _tree(home, 2) for home in homes},
        "checkout": checkout, "working_tree": _working_tree(checkout),
        "cwd": Path.cwd(), "cwd_entries": _entries(Path.cwd()),
    }


def _is_new(path: Path, state: dict) -> bool:
    try:
        return path.lstat().st_ctime >= state["started"] - 1
    except OSError:
        return False


def _session_processes(mark: str) -> list[tuple[int, str]]:
    """(pid, command line) of the live processes this session started: pytest's descendants,
    and those carrying the session's mark (started by one since gone), zombies aside."""
    me = os.getpid()
    parents, marked, lines = {}, set(), {}
    needle = f"{SESSION_MARK}={mark}".encode()
    for pid in process_ids():
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                lines[pid] = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fields[0] == "Z":
            continue
        parents[pid] = int(fields[1])
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if needle in environ.read().split(b"\0"):
                    marked.add(pid)
        except OSError:
            pass

    def descends(pid: int) -> bool:
        seen = set()
        while pid in parents and pid not in seen:
            seen.add(pid)
            pid = parents[pid]
            if pid == me:
                return True
        return False

    return sorted((pid, lines[pid][:200]) for pid in parents
                  if pid != me and (pid in marked or descends(pid)))


def _stop_session_pool() -> None:
    """The sandbox's default pool lives for the session (closed at exit): close it now."""
    pool = sys.modules.get("autograder.sandbox.pool")
    if pool is not None and pool._default_pool is not None:
        pool._default_pool.close()


def _leftovers(state: dict) -> tuple[list[str], list[str]]:
    """(left by this session, new in folders the machine shares that may be another's)."""
    # the released course the class-grading tests copy from, made once per session
    import grade_course_factory

    grade_course_factory.discard_released()
    _stop_session_pool()
    own, shared = [], []
    processes = _session_processes(state["mark"])
    deadline = time.monotonic() + PROCESS_GRACE_SECONDS
    while processes and time.monotonic() < deadline:
        time.sleep(0.5)
        processes = _session_processes(state["mark"])
    claim_shared_memory_of(pid for pid, _ in processes)
    own += [f"a process still running: {pid} {line}" for pid, line in processes]
    root = state["root"]
    for entry in sorted((root / "tmp").iterdir()):
        if not entry.name.startswith("pytest-of-"):
            own.append(f"the session's temporary folder: {entry}")
    own += [f"the session's home folder: {root / 'home' / name}"
            for name in sorted(_tree(root / "home", 2))]
    if state["working_tree"] is not None:
        now = _working_tree(state["checkout"]) or set()
        own += [f"the working tree (git status --ignored): {line}"
                for line in sorted(now - state["working_tree"])]
    cwd = state["cwd"]
    if cwd != state["checkout"]:
        own += [f"the working directory: {cwd / name}"
                for name in sorted(_entries(cwd) - state["cwd_entries"])]
    for name in sorted(_entries(state["system_tmp"]) - state["system_tmp_entries"]):
        path = state["system_tmp"] / name
        if path == root or not _is_new(path, state):
            continue
        if name.startswith(KIT_LEFTOVERS):
            own.append(f"the machine's temporary folder: {path}")
        else:
            shared.append(f"the machine's temporary folder: {path}")
    for name in sorted(_entries(SHARED_MEMORY) - state["shared_memory"]):
        path = SHARED_MEMORY / name
        if path in CLAIMED:
            own.append(f"/dev/shm (held by a process of this session): {path}")
        elif _is_new(path, state):
            shared.append(f"/dev/shm: {path}")
    for home, before in state["homes"].items():
        shared += [f"the user's home folder: {home / name}"
                   for name in sorted(_tree(home, 2) - before)]
    return own, shared


def pytest_sessionfinish(session, exitstatus):
    state = session.config.stash.get(_STATE, None)
    if state is None:
        return
    own, shared = _leftovers(state)
    failing = own + shared if required_everywhere() else own
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        if failing:
            reporter.write_sep("=", "the tests left things behind", red=True)
            for line in failing:
                reporter.write_line(f"  {line}")
        if shared and not required_everywhere():
            reporter.write_sep("-", "new in folders this machine shares (this run's, or "
                                    "another program's: SDPA_REQUIRE_ALL=1 fails on them)")
            for line in shared:
                reporter.write_line(f"  {line}")
    if failing and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    state["keep"] = os.environ.get(KEEP) == "1"
    if reporter is not None:
        if state["keep"]:
            reporter.write_line(f"the session's folder is kept ({KEEP}=1): {state['root']}")
        elif failing or session.exitstatus != 0:
            reporter.write_line(f"the session's folder {state['root']} is removed; "
                                f"{KEEP}=1 keeps it")


def pytest_unconfigure(config):
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    for name, value in state["saved"].items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    tempfile.tempdir = None
    if not state.get("keep", False):
        shutil.rmtree(state["root"], ignore_errors=True)


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTEST_CURRENT_TEST", None)  # pytest's own, set per test phase
    return env


@pytest.fixture(autouse=True)
def _environment_unchanged(request):
    """A test that changes os.environ without monkeypatch would change it for later tests."""
    before = _environment()
    yield
    after = _environment()
    if after != before:
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        for name in changed:
            if name in before:
                os.environ[name] = before[name]
            else:
                os.environ.pop(name, None)
        pytest.fail(f"{request.node.nodeid} changed os.environ for the tests after it "
                    f"({', '.join(changed)}): use monkeypatch.setenv", pytrace=False)


@pytest.fixture(scope="session")
def feedback_class(tmp_path_factory):
    """(course, ClassResult): the class of tests/feedback_students.py, graded once by the real
    engine for tests/test_feedback.py and the browser tests' feedback pages, which only read it."""
    from feedback_students import grade_feedback_class

    return grade_feedback_class(tmp_path_factory.mktemp("feedback-class") / "course")
