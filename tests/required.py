"""A test that needs something not installed here: skipped, or failed where it is required.

`.ci/run` sets `SDPA_REQUIRE_ALL=1`: there every component the README's `make test` installs
(Chromium, Playwright, PostgreSQL, Dask, the build backend) must be present, so its absence
fails the test instead of skipping it. Only PyTorch may be absent (`tests/test_ref_torch.py`).
"""

from __future__ import annotations

import os

import pytest

REQUIRE_ALL = "SDPA_REQUIRE_ALL"


def required_everywhere() -> bool:
    return os.environ.get(REQUIRE_ALL) == "1"


def unavailable(reason: str) -> None:
    """Skip the test (or module, at import) because `reason`; fail it under SDPA_REQUIRE_ALL."""
    if required_everywhere():
        pytest.fail(f"{reason} ({REQUIRE_ALL}=1: nothing required may be missing)",
                    pytrace=False)
    pytest.skip(reason, allow_module_level=True)
