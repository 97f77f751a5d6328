#!/usr/bin/env bash
# Install everything the test suite needs, then run the whole suite.
#   - a virtualenv in .venv with BenchFlow and its test dependencies
#   - a Docker engine (started offline) with the base images the fixture tasks use,
#     and a second engine on another socket for the remote-docker tests
#   - Chromium for the viewer's browser tests
# Idempotent: a second run only checks what is already there.
# Extra arguments go to pytest (e.g. scripts/test.sh tests/unit -x).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'

bash scripts/docker-engine.sh
bash scripts/docker-engine.sh --remote
if [ -f scripts/install-browser.sh ]; then
  bash scripts/install-browser.sh
fi
# Real components some suites use (PostgreSQL, Azurite, a Ray cluster, podman, gVisor): one
# idempotent script each, which installs and, where a server is needed, starts it.
for setup in scripts/setup.d/*.sh; do
  [ -f "$setup" ] && bash "$setup"
done

# The suite includes the agents_e2e tests (tests/agents_e2e): every built-in agent installed from
# npm/PyPI into a cached image layer solves the hello task against a scripted provider. The first
# run on a machine installs them (a few minutes); later runs start from the cached layers.
# Leave them out with: scripts/test.sh -m "not agents_e2e".
# The suite waits on engines and subprocesses far more than it computes: four pytest workers, each
# taking whole files (tests in one file share module fixtures and run in order), keep two cores busy.
# Tests marked `serial` (timing-sensitive under load: a fork bomb filling its sandbox, a Ray cluster,
# every backend's conformance suite) run afterwards, alone. With arguments (a selection of yours),
# one parallel pass runs exactly that selection.
# pytest exits 5 when no test ran: that is a failure too (unless the other pass ran tests).
PYTEST=(.venv/bin/python -m pytest -q)
WORKERS=(-n "${BENCHFLOW_TEST_WORKERS:-4}" --dist loadfile)
if [ "$#" -gt 0 ]; then
  exec "${PYTEST[@]}" "${WORKERS[@]}" "$@"
fi
set +e
"${PYTEST[@]}" "${WORKERS[@]}" -m "not serial"; parallel=$?
"${PYTEST[@]}" -m serial; alone=$?
set -e
if [ "$parallel" -eq 5 ] && [ "$alone" -eq 5 ]; then exit 5; fi
[ "$parallel" -eq 5 ] && parallel=0
[ "$alone" -eq 5 ] && alone=0
[ "$parallel" -ne 0 ] && exit "$parallel"
exit "$alone"
