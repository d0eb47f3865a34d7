"""What every test of the kit runs under, for the whole session.

- The session gets its own temporary folder (TMPDIR) and its own cache, Jupyter and IPython
  folders, so the tests neither read nor fill the machine's. When the session ends, its
  temporary folder must hold nothing but pytest's `tmp_path` folders: anything else left
  there fails the session, by name. Neither the machine's temporary folder may have gained
  anything named like the kit's (`sdpa-*`, `dask-scratch-space`), which is where a process
  with a scrubbed environment (the sandbox's) would leave it, nor the home folder's cache
  anything at all: that fails the session under `SDPA_REQUIRE_ALL=1` (CI, where the run has
  the machine to itself) and is reported otherwise, since on a shared machine another program
  may have made it. A clean, passing session then removes its folders; otherwise it keeps
  them and says where.
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
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from required import required_everywhere

# Kit-made names that must not be left in the machine's temporary folder or the home cache.
KIT_LEFTOVERS = ("sdpa-", "sdpa_", "dask-scratch-space")
# What the session redirects into its own folder: variable -> sub-folder.
PRIVATE_DIRS = {
    "TMPDIR": "tmp",
    "XDG_CACHE_HOME": "cache",
    "JUPYTER_DATA_DIR": "jupyter-data",
    "JUPYTER_RUNTIME_DIR": "jupyter-runtime",
    "IPYTHONDIR": "ipython",
}
# Set for the whole session: variable -> value.
SESSION_SETTINGS = {"SDPA_COURSE_WARM_SANDBOX": "0"}
_STATE = pytest.StashKey[dict]()


def _home_cache() -> Path:
    return Path.home() / ".cache"


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


def _kit_entries(folder: Path) -> set[str]:
    try:
        return {p.name for p in folder.iterdir() if p.name.startswith(KIT_LEFTOVERS)}
    except OSError:
        return set()


def pytest_configure(config):
    system_tmp = Path(tempfile.gettempdir())
    root = Path(tempfile.mkdtemp(prefix="kit-tests-", dir=system_tmp))
    root.chmod(0o755)  # the PostgreSQL server runs as `postgres` and must reach its folder
    saved = {name: os.environ.get(name) for name in (*PRIVATE_DIRS, *SESSION_SETTINGS)}
    for name, sub in PRIVATE_DIRS.items():
        (root / sub).mkdir()
        os.environ[name] = str(root / sub)
    os.environ.update(SESSION_SETTINGS)
    (root / "tmp").chmod(0o1777)  # like /tmp: tests may run code as another user
    tempfile.tempdir = None  # read TMPDIR again
    config.stash[_STATE] = {
        "root": root, "saved": saved, "started": time.time(), "system_tmp": system_tmp,
        "system_tmp_kit": _kit_entries(system_tmp), "cache": _tree(_home_cache(), 2),
        "cwd": Path.cwd(), "cwd_entries": {p.name for p in Path.cwd().iterdir()},
    }


def _leftovers(state: dict) -> tuple[list[str], list[str]]:
    """(left in the session's own folders, left in folders the machine shares)."""
    # the released course the class-grading tests copy from, made once per session
    import grade_course_factory

    grade_course_factory.discard_released()
    own, left = [], []
    tmp = state["root"] / "tmp"
    for entry in sorted(tmp.iterdir()):
        if not entry.name.startswith("pytest-of-"):
            own.append(f"the session's temporary folder: {entry}")
    cwd = state["cwd"]
    for name in sorted({p.name for p in cwd.iterdir()} - state["cwd_entries"]):
        if name.startswith(KIT_LEFTOVERS):
            own.append(f"the working directory: {cwd / name}")
    for name in sorted(_kit_entries(state["system_tmp"]) - state["system_tmp_kit"]):
        path = state["system_tmp"] / name
        try:
            new = path.stat().st_ctime >= state["started"] - 1
        except OSError:
            continue
        if new:
            left.append(f"the machine's temporary folder: {path}")
    for name in sorted(_tree(_home_cache(), 2) - state["cache"]):
        left.append(f"the home folder's cache: {_home_cache() / name}")
    return own, left


def pytest_sessionfinish(session, exitstatus):
    state = session.config.stash.get(_STATE, None)
    if state is None:
        return
    own, shared = _leftovers(state)
    failing = own + shared if required_everywhere() else own
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        if failing:
            reporter.write_sep("=", "the tests left files behind", red=True)
            for line in failing:
                reporter.write_line(f"  {line}")
        if shared and not required_everywhere():
            reporter.write_sep("-", "new in folders this machine shares (this run's, or "
                                    "another program's: SDPA_REQUIRE_ALL=1 fails on them)")
            for line in shared:
                reporter.write_line(f"  {line}")
    if failing and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    state["keep"] = bool(failing) or session.exitstatus != 0
    if state["keep"] and reporter is not None:
        reporter.write_line(f"the session's temporary folders are kept in {state['root']}")


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
    if not state.get("keep", True):
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
