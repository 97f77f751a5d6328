#!/usr/bin/env bash
# The other tools whose formats `bench traj export` writes, for its tests (tests/unit/test_interop_*.py),
# kept out of the test environment itself:
#   - Harbor 0.25.0's ATIF models and validator. Harbor needs Python 3.12+; its trajectory models need only
#     pydantic, so the wheel is unpacked (not installed) and the tests put it at the end of sys.path.
#   - inspect_ai, installed into a folder of its own (it pins boto3/botocore below what agentcore needs, so it
#     cannot share the environment); the tests read the logs in a child interpreter with that folder appended
#     to sys.path.
# Both go to $BENCHFLOW_TEST_TOOLS (default: <venv>/test-tools). Idempotent: a second run only checks.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
TOOLS="${BENCHFLOW_TEST_TOOLS:-$("$PYTHON" -c 'import sys; print(sys.prefix)')/test-tools}"
HARBOR_VERSION="${BENCHFLOW_TEST_HARBOR_VERSION:-0.25.0}"
INSPECT_VERSION="${BENCHFLOW_TEST_INSPECT_VERSION:-0.3.285}"

harbor="$TOOLS/harbor-$HARBOR_VERSION"
if [ -f "$harbor/harbor/models/trajectories/trajectory.py" ]; then
    echo "harbor $HARBOR_VERSION already unpacked at $harbor"
else
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    "$PYTHON" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
        --python-version 3.12 -d "$scratch" "harbor==$HARBOR_VERSION"
    rm -rf "$harbor.partial" && mkdir -p "$harbor.partial"
    "$PYTHON" -m zipfile -e "$scratch"/harbor-"$HARBOR_VERSION"-*.whl "$harbor.partial"
    rm -rf "$harbor" && mv "$harbor.partial" "$harbor"
    echo "harbor $HARBOR_VERSION unpacked at $harbor"
fi

inspect="$TOOLS/inspect_ai-$INSPECT_VERSION"
if [ -d "$inspect/inspect_ai" ]; then
    echo "inspect_ai $INSPECT_VERSION already installed at $inspect"
else
    rm -rf "$inspect.partial"
    "$PYTHON" -m pip install -q --disable-pip-version-check --target "$inspect.partial" "inspect_ai==$INSPECT_VERSION"
    rm -rf "$inspect" && mv "$inspect.partial" "$inspect"
    echo "inspect_ai $INSPECT_VERSION installed at $inspect"
fi
