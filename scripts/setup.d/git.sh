#!/usr/bin/env bash
# The git CLI, which `bench run -d` / `--source-repo` fetch tasks with (benchflow/datasets/git_fetch.py)
# and the dataset tests use to build local repositories (tests/registry_repos.py). Idempotent: a
# machine that has git is left alone. Run as root (apt-get).
set -euo pipefail

if command -v git >/dev/null 2>&1; then
    echo "git already installed ($(git --version))"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends git ca-certificates >/dev/null
git --version
