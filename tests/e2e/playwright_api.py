"""Playwright's sync API for the browser tests, or a skip of the module that imports it,
saying how to get it (the `e2e` extra; `make test` installs it)."""

from __future__ import annotations

import pytest

PLAYWRIGHT_MISSING = ("browser tests need the Python package playwright: pip install -e '.[e2e]' "
                      "(make test installs it)")

sync_api = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING,
                               exc_type=ImportError)  # a broken install skips too
expect = sync_api.expect
