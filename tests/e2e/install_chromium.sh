#!/bin/sh
# Install Debian's chromium for the browser tests (tests/e2e), when it is missing and this can
# be done: as root, with apt-get. Never fails: without chromium the browser tests are skipped
# and say why. (Playwright's own `playwright install` downloads a browser build, which cannot
# work on a closed network; the tests drive the system chromium instead.)
if [ -n "${SDPA_E2E_CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "browser tests: no chromium, and no root apt-get to install it; they will be skipped"
    exit 0
fi
log="${TMPDIR:-/tmp}/sdpa-e2e-apt.log"
echo "browser tests: installing Debian's chromium with apt-get (log: $log)"
export DEBIAN_FRONTEND=noninteractive
if timeout 900 apt-get update -qq >"$log" 2>&1 &&
    timeout 900 apt-get install -y -qq --no-install-recommends chromium fonts-liberation \
        >>"$log" 2>&1; then
    echo "browser tests: $(chromium --version 2>/dev/null || echo chromium) installed"
else
    echo "browser tests: could not install chromium (see $log); they will be skipped"
fi
exit 0
