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
# Playwright's expectations give up after 5 s by default: on a loaded machine a formgrader
# table or a kernel's answer takes longer (the instructor's test once failed so). What they wait
# for shows at once when all is well, so a generous limit costs nothing then.
EXPECT_TIMEOUT_MS = 60_000
expect.set_options(timeout=EXPECT_TIMEOUT_MS)
