"""Run a snippet in a fresh interpreter: what a module loads or sets up at start shows only there."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def python_prints(code: str) -> str:
    """What ``code`` prints in a new interpreter started in the repository (it must exit 0)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
