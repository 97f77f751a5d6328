#!/usr/bin/env bash
# Install what the viewer's browser tests need: Debian's chromium and the Playwright
# Python package (it drives the system browser; Playwright's own browser download is
# never used). Idempotent: does nothing when both are already there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"

if ! command -v chromium >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

if ! "$PYTHON" -c "import playwright" >/dev/null 2>&1; then
    "$PYTHON" -m pip install -q "playwright>=1.40"
fi

chromium --version 2>/dev/null | head -n 1
