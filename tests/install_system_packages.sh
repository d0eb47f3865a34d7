#!/bin/sh
# The Debian packages some tests drive, installed by `make test` when missing and when this
# can be done (as root, with apt-get). Elsewhere it never fails: without them those tests skip
# and say why. Under SDPA_REQUIRE_ALL=1 (set by .ci/run) nothing required may be missing: it
# fails when it cannot install them, and so would the tests (tests/required.py).
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
if [ "${SDPA_REQUIRE_ALL:-}" = 1 ]; then
    give_up="SDPA_REQUIRE_ALL=1: the tests need them"
    status=1
else
    give_up="the tests that need them will skip"
    status=0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "test set-up: no root apt-get to install$missing; $give_up" >&2
    exit $status
fi
log="${TMPDIR:-/tmp}/sdpa-test-apt.log"
echo "test set-up: installing$missing with apt-get (log: $log)"
export DEBIAN_FRONTEND=noninteractive
if timeout 900 apt-get update -qq >"$log" 2>&1 &&
    timeout 900 apt-get install -y -qq --no-install-recommends $missing >>"$log" 2>&1; then
    echo "test set-up: installed$missing"
    rm -f "$log"  # kept only when it has something to say
else
    echo "test set-up: could not install$missing (see $log); $give_up" >&2
    [ "$status" = 1 ] && tail -n 20 "$log" >&2
    exit $status
fi
exit 0
