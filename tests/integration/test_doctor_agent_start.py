"""``bench doctor --agent-start``: install in a fresh sandbox and complete ACP initialize, no model call."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.integration.test_agent_pipeline import fake_agent_file


@pytest.mark.docker
def test_agent_start_passes_for_a_working_agent_and_fails_for_a_broken_one(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "fake-acp.toml").write_text(fake_agent_file(tmp_path).read_text())
    env = {"BENCHFLOW_AGENTS_DIR": str(agents)}
    good = run_bench("doctor", "--offline", "--agent-start", "fake-acp", env=env)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "answered ACP initialize" in good.stdout

    broken = fake_agent_file(tmp_path, launch="sh -c 'echo no adapter here >&2; exit 3'")
    (agents / "fake-acp.toml").write_text(broken.read_text())
    bad = run_bench("doctor", "--offline", "--agent-start", "fake-acp", env=env)
    assert bad.returncode == 1
    assert "start fake-acp" in bad.stdout and "FAIL" in bad.stdout

    control = run_bench("doctor", "--offline", "--agent-start", "oracle", env=env)
    assert control.returncode == 1 and "nothing to install" in control.stdout
