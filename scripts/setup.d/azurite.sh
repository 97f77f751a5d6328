#!/usr/bin/env bash
# Azurite (the Azure Storage emulator, npm package `azurite`) for the `bench traj upload --direct`
# tests (tests/integration/test_traj_direct_azurite.py). Installs a pinned version globally with npm;
# the test fixture starts `azurite-blob` itself on a free loopback port with a temporary folder and
# waits until it answers, so nothing is started here. Idempotent: a second run only checks the
# version. Run as root (a global npm install).
set -euo pipefail

VERSION="${BENCHFLOW_TEST_AZURITE_VERSION:-3.37.0}"

if ! command -v npm >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
if command -v azurite-blob >/dev/null 2>&1 && [ "$(azurite-blob --version 2>/dev/null)" = "$VERSION" ]; then
    echo "azurite $VERSION already installed"
    exit 0
fi
npm install -g --no-audit --no-fund --loglevel=error "azurite@$VERSION" >/dev/null
echo "azurite $(azurite-blob --version) installed at $(command -v azurite-blob)"
