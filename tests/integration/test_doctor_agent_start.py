"""``bench doctor --agent-start``: install in a fresh sandbox and complete ACP initialize, no model call.

Each stage (install, launch, handshake, first model call) is one line; piped output is not wrapped.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.integration.test_agent_pipeline import fake_agent_file


def stage_lines(stdout: str) -> dict[str, str]:
    """``{stage: "ok ..."/"FAIL ..."/"skip ..."}`` from doctor's table rows for agent fake-acp."""
    found = {}
    for line in stdout.splitlines():
        match = re.match(r"agent\s+start fake-acp: (install|launch|handshake|first model call)"
                         r"(?: \(required\))?\s+(\S+)\s+(.*)$", line)
        if match:
            found[match[1]] = f"{match[2]} {match[3]}".strip()
    return found


@pytest.mark.docker
def test_agent_start_reports_each_stage_and_fails_on_the_broken_one(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    env = {"BENCHFLOW_AGENTS_DIR": str(agents)}

    def doctor(**extra: object):
        (agents / "fake-acp.toml").write_text(fake_agent_file(tmp_path, **extra).read_text())
        return run_bench("doctor", "--offline", "--agent-start", "fake-acp", env=env)

    good = doctor()
    assert good.returncode == 0, good.stdout + good.stderr
    stages = stage_lines(good.stdout)
    assert list(stages) == ["install", "launch", "handshake", "first model call"], good.stdout
    assert all(re.fullmatch(r"ok [\d.]+s.*", stages[s]) for s in ("install", "launch", "handshake")), stages
    assert "answered ACP initialize" in stages["handshake"]
    assert stages["first model call"] == "skip not exercised (no prompt is sent)"

    launch = doctor(launch="sh -c 'echo no adapter here >&2; exit 3'")
    assert launch.returncode == 1
    stages = stage_lines(launch.stdout)
    assert stages["install"].startswith("ok ") and stages["launch"].startswith("FAIL pipe_closed"), stages
    assert stages["handshake"] == stages["first model call"] == "skip skipped"

    install = doctor(install={"kind": "script", "script": "echo broken recipe >&2; exit 7"})
    assert install.returncode == 1
    stages = stage_lines(install.stdout)
    assert stages["install"].startswith("FAIL install_failure"), stages
    assert [stages[s] for s in ("launch", "handshake", "first model call")] == ["skip skipped"] * 3

    control = run_bench("doctor", "--offline", "--agent-start", "oracle", env=env)
    assert control.returncode == 1 and "nothing to install" in control.stdout
