"""sandbox.mcp_servers reach an ACP agent in session/new; a stdio server runs inside the sandbox
with its env and cwd (Docker, the fake ACP agent)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS, run_bench
from tests.integration.test_agent_pipeline import fake_agent_file

pytestmark = pytest.mark.docker


def test_task_mcp_servers_are_passed_to_the_acp_agent(tmp_path: Path) -> None:
    task = tmp_path / "tasks" / "mcp-servers"
    shutil.copytree(FIXTURE_TASKS / "mcp-servers", task)
    steps = [{"op": "report_mcp"}, {"op": "mcp_stdio"}, {"op": "message", "text": "done"}]
    agent = fake_agent_file(tmp_path, env={"FAKE_ACP_SCRIPT": json.dumps({"prompts": [steps]})})
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(task), "-s", "docker", "--jobs-dir", str(jobs), "-a", str(agent))
    assert done.returncode == 0, done.stderr + done.stdout
    trial = next(jobs.rglob("result.json")).parent
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"] == {"reward": 1.0}, "the stdio MCP server did not run with its env and cwd"
    events = [json.loads(line) for line in (trial / "trajectory" / "acp_trajectory.jsonl").read_text().splitlines()]
    text = "".join(e.get("text", "") for e in events if e["type"] == "agent_message")
    listed = json.loads(text.split("mcp:", 1)[1].split("mcp_stdio:")[0])
    assert [s["name"] for s in listed] == ["notes", "remote"]
    assert listed[0]["command"] == "sh" and listed[0]["args"][2] == "/tmp"
    assert listed[0]["_meta"] == {"benchflow": {"tools": ["read_note"]}}
    assert listed[1] == {"name": "remote", "type": "http", "url": "http://127.0.0.1:9/mcp",
                         "headers": [{"name": "X-Team", "value": "benchflow"}]}
