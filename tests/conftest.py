"""The test run keeps its caches out of the home folder.

The sandbox's zygote keeps matplotlib's font list under $XDG_CACHE_HOME (else ~/.cache), and
so do matplotlib, Chromium and others: for the whole run, XDG_CACHE_HOME points at a temporary
folder, removed at the end, and the variable is put back as it was.
"""

from __future__ import annotations

import os
import shutil
import tempfile

_saved: dict[str, str | None] = {}


def pytest_configure(config):
    _saved["XDG_CACHE_HOME"] = os.environ.get("XDG_CACHE_HOME")
    _saved["folder"] = tempfile.mkdtemp(prefix="sdpa-test-cache-")
    os.environ["XDG_CACHE_HOME"] = _saved["folder"]


def pytest_unconfigure(config):
    if "folder" not in _saved:
        return
    shutil.rmtree(_saved.pop("folder"), ignore_errors=True)
    previous = _saved.pop("XDG_CACHE_HOME")
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous
