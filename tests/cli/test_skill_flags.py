"""bench run's skill flags from the command line."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT, run_bench


def test_cli_refusal_is_one_line(tmp_path: Path) -> None:
    done = run_bench("run", str(ROOT / "tests" / "fixtures" / "tasks" / "reward-pass"), "--skill-mode", "with-skill",
                     "--dry-run", "--jobs-dir", str(tmp_path))
    assert done.returncode == 2
    assert "needs --skills-dir" in done.stderr and "Traceback" not in done.stderr
