"""Headless Chromium for the browser tests: where it is, how it starts, and a skip (a failure under CI)
when scripts/install-browser.sh has not run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]
"""Without the background-networking flags Chromium keeps calling out to hosts this machine cannot reach."""


def require_browser() -> None:
    """Skip the test when Chromium or Playwright is missing; fail instead when CI is set."""
    missing = None
    if not CHROMIUM.exists():
        missing = "chromium is not installed (/usr/bin/chromium); run scripts/install-browser.sh"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "the playwright Python package is not installed; run scripts/install-browser.sh"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests: {missing} (CI is set, so this fails instead of skipping)")
        pytest.skip(missing)
