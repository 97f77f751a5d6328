#!/usr/bin/env bash
# PostgreSQL for the hub tests (tests/integration/test_hub_*.py run over SQLite and PostgreSQL).
# Installs Debian's postgresql package and starts a dedicated cluster "benchflow_hub" that listens
# on 127.0.0.1:54329 only, with trust authentication for loopback connections (a throwaway test
# database on a test machine; never use these settings for a real hub). The tests connect as
# postgresql://postgres@127.0.0.1:54329/postgres (override: BENCHFLOW_TEST_POSTGRES_URL) and
# create a fresh database per test. Idempotent: a second run only checks it is up. Run as root.
set -euo pipefail

PORT="${BENCHFLOW_TEST_POSTGRES_PORT:-54329}"
CLUSTER=benchflow_hub

if ! command -v pg_createcluster >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi

VERSION="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
if ! pg_lsclusters -h | awk '{print $2}' | grep -qx "$CLUSTER"; then
    pg_createcluster "$VERSION" "$CLUSTER" --port "$PORT" \
        -- --auth-host=trust --auth-local=trust >/dev/null
fi
CONF="/etc/postgresql/$VERSION/$CLUSTER/conf.d/benchflow.conf"
if [ ! -f "$CONF" ]; then
    printf "listen_addresses = '127.0.0.1'\nmax_connections = 200\nfsync = off\n" >"$CONF"
fi
if ! pg_lsclusters -h | awk -v c="$CLUSTER" '$2 == c {print $4}' | grep -qx online; then
    pg_ctlcluster "$VERSION" "$CLUSTER" start
fi
for _ in $(seq 1 50); do
    if pg_isready -q -h 127.0.0.1 -p "$PORT"; then
        echo "postgresql $VERSION cluster $CLUSTER on 127.0.0.1:$PORT"
        exit 0
    fi
    sleep 0.2
done
echo "postgresql: cluster $CLUSTER did not become ready on 127.0.0.1:$PORT" >&2
exit 1
