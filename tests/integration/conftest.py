"""Fixtures shared by the integration tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A private BenchFlow cache (``BENCHFLOW_CACHE``): local sandboxes and layers stay in the test's tmp."""
    root = tmp_path / "cache"
    monkeypatch.setenv("BENCHFLOW_CACHE", str(root))
    return root
