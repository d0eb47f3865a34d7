#!/bin/sh
# The Debian packages some tests drive, installed by `make test` when missing and when this
# can be done (as root, with apt-get). Never fails: without them those tests skip and say why.
#   chromium, fonts-liberation  browser tests (tests/e2e). Playwright drives this system
#                               browser: its own browser download cannot work on a closed network.
#   postgresql                  the gradebook on PostgreSQL (tests/test_postgres_gradebook.py),
#                               which starts its own server on loopback in a temporary folder.
missing=""
if [ -z "${SDPA_E2E_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then
    missing="$missing chromium fonts-liberation"
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    missing="$missing postgresql"
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "test set-up: no root apt-get to install$missing; the tests that need them will skip"
    exit 0
fi
log="${TMPDIR:-/tmp}/sdpa-test-apt.log"
echo "test set-up: installing$missing with apt-get (log: $log)"
export DEBIAN_FRONTEND=noninteractive
if timeout 900 apt-get update -qq >"$log" 2>&1 &&
    timeout 900 apt-get install -y -qq --no-install-recommends $missing >>"$log" 2>&1; then
    echo "test set-up: installed$missing"
else
    echo "test set-up: could not install$missing (see $log); the tests that need them will skip"
fi
exit 0
