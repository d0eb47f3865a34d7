"""Playwright's sync API for the browser tests, or a skip of the module that imports it,
saying how to get it (the `e2e` extra; `make test` installs it). A broken install (any
ImportError) skips too, showing the error; under `SDPA_REQUIRE_ALL=1` (CI) it fails."""

from __future__ import annotations

from required import unavailable

PLAYWRIGHT_MISSING = ("browser tests need the Python package playwright: pip install -e '.[e2e]' "
                      "(make test installs it)")

try:
    from playwright import sync_api
except ImportError as err:
    unavailable(f"{PLAYWRIGHT_MISSING}; importing it failed: {err}")

expect = sync_api.expect
