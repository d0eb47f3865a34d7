"""Fixtures of the browser tests: Debian's Chromium driven by Playwright, a real `jupyter lab`
on loopback serving a graded course, and a screenshot folder per test: in the session's
temporary folder (gone with it), or under `SDPA_E2E_SCREENSHOTS` when set, to keep them.

They skip, saying why, when Chromium or the Python `playwright` package is missing (they fail
instead under `SDPA_REQUIRE_ALL=1`, as in CI); `make test` installs both
(tests/install_system_packages.sh, the `e2e` extra).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from required import unavailable

# Chromium's background services (updates, sync, field trials, QUIC) try the network, which is
# closed here; the sandbox needs privileges a root CI run does not give it.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic",
]
VIEWPORT = {"width": 1280, "height": 900}


def chromium_path() -> str | None:
    configured = os.environ.get("SDPA_E2E_CHROMIUM")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    for name in ("chromium", "chromium-browser"):
        if found := shutil.which(name):
            return found
    return None


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory) -> Path:
    """Where the tests' screenshots go: SDPA_E2E_SCREENSHOTS, or the session's temporary
    folder (never the working tree)."""
    chosen = os.environ.get("SDPA_E2E_SCREENSHOTS")
    return Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="session")
def playwright_driver():
    from playwright_api import sync_api

    with sync_api.sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="session")
def chromium_executable() -> str:
    path = chromium_path()
    if path is None:
        unavailable("browser tests need Debian's chromium at /usr/bin/chromium (or "
                    "SDPA_E2E_CHROMIUM): `apt-get install chromium`, which make test tries "
                    "as root; Playwright's own browser download cannot work here")
    return path


@pytest.fixture(scope="session")
def browser(playwright_driver, chromium_executable, tmp_path_factory):
    """Headless Chromium with a fresh user-data dir, shared by the tests of a run."""
    context = playwright_driver.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium-profile")),
        executable_path=chromium_executable, headless=True, args=CHROMIUM_ARGS,
        viewport=VIEWPORT,
    )
    yield context
    context.close()


@pytest.fixture(scope="session")
def graded_course(chromium_executable, playwright_driver, tmp_path_factory):
    """A kit course with a released assignment and a graded class (see class_course)."""
    from class_course import make_graded_course

    return make_graded_course(tmp_path_factory.mktemp("e2e") / "course")


@pytest.fixture(scope="session")
def lab(graded_course, tmp_path_factory):
    """`jupyter lab` on 127.0.0.1 with a token, rooted at the course, stopped at the end."""
    from lab_server import start_lab_server

    server = start_lab_server(graded_course.root, tmp_path_factory.mktemp("jupyter-state"))
    yield server
    server.stop()


@pytest.fixture
def page(browser):
    page = browser.new_page()
    page.set_default_timeout(60_000)  # as the expectations' (playwright_api)
    yield page
    page.close()


@pytest.fixture
def steps(page, lab, request, screenshots):
    """Named steps with a screenshot each, in <screenshots>/<test name>/."""
    from browser_steps import Steps

    folder = screenshots / request.node.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    recorder = Steps(page, folder,
                     context=lambda: f"jupyter lab log (last lines):\n{lab.log_tail(25)}")
    request.config.stash.setdefault(_RECORDERS, []).append(recorder)
    return recorder


_RECORDERS = pytest.StashKey[list]()


def pytest_terminal_summary(terminalreporter, config):
    """Where each browser test left its screenshots, and how long each step took."""
    recorders = config.stash.get(_RECORDERS, [])
    if recorders:
        terminalreporter.write_sep("-", "browser test screenshots (PNG) and step times")
        for recorder in recorders:
            terminalreporter.write_line(f"{recorder.folder}: {len(recorder.taken)} PNG")
            total = sum(seconds for _, seconds in recorder.timings)
            steps = "; ".join(f"{title} {seconds:.1f}s" for title, seconds in recorder.timings)
            terminalreporter.write_line(f"  steps done in {total:.1f}s: {steps}")
