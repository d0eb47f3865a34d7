#!/bin/sh
# Install Debian's PostgreSQL server for the gradebook tests (tests/test_postgres_gradebook.py),
# when it is missing and this can be done: as root, with apt-get. Never fails: without a server
# those tests are skipped and say why. The tests start their own server on loopback (initdb
# in a temporary folder); the cluster Debian's package may create is not used.
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "postgres tests: no PostgreSQL server, and no root apt-get to install it; they will be skipped"
    exit 0
fi
log="${TMPDIR:-/tmp}/sdpa-postgres-apt.log"
echo "postgres tests: installing Debian's postgresql with apt-get (log: $log)"
export DEBIAN_FRONTEND=noninteractive
if timeout 900 apt-get update -qq >"$log" 2>&1 &&
    timeout 900 apt-get install -y -qq --no-install-recommends postgresql >>"$log" 2>&1; then
    echo "postgres tests: $(ls -d /usr/lib/postgresql/*/bin | head -n 1) installed"
else
    echo "postgres tests: could not install postgresql (see $log); they will be skipped"
fi
exit 0
