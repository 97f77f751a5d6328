"""``bench run --sandbox agentcore`` and ``bench sandbox list|cleanup`` end to end, against the AgentCore, ECR and
registry double (tests/doubles/agentcore_api_double.py: the image really pushed to a loopback registry and pulled
from it, each runtime session a container on the local engine). AgentCore enforces no ``no-network``, so the
tasks here ask for ``public``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

pytestmark = pytest.mark.docker


def test_oracle_run_scores_one_and_leaves_no_runtime(tmp_path: Path, agentcore_double) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO, network="public")
    jobs = tmp_path / "jobs"
    env = agentcore_double.env() | {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    before = len(agentcore_double.double.requests)
    done = run_bench("run", str(tmp_path / "tasks"), "--sandbox", "agentcore", "--jobs-dir", str(jobs), env=env)
    assert done.returncode == 0, done.stderr
    assert "Outcomes: 1 scored (1 passed, 0 failed), 0 unscored, 0 errored" in done.stdout
    result = json.loads(next(jobs.rglob("result.json")).read_text())
    assert result["rewards"] == {"reward": 1.0} and result["environment"] == "agentcore"
    made = [op for op, _ in agentcore_double.double.requests[before:]]
    assert made.count("CreateAgentRuntime") == made.count("DeleteAgentRuntime") == 1
    listed = run_bench("sandbox", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [row for row in json.loads(listed.stdout) if row["sandbox"] == "agentcore"] == []


def test_a_no_network_task_is_refused_with_the_reason(tmp_path: Path, agentcore_double) -> None:
    make_task(tmp_path / "tasks", "closed", solve=WRITE_HELLO, test=PASS_IF_HELLO, network="no-network")
    done = run_bench("run", str(tmp_path / "tasks"), "--sandbox", "agentcore", "--jobs-dir", str(tmp_path / "jobs"),
                     env=agentcore_double.env() | {"BENCHFLOW_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "'no-network' is not enforced on --sandbox agentcore" in done.stderr and "Traceback" not in done.stderr


def test_sandbox_list_and_cleanup_find_what_a_dead_run_left(tmp_path: Path, agentcore_double, monkeypatch) -> None:
    from benchflow.sandbox import SandboxSpec, get_backend

    for name, value in agentcore_double.env().items():
        monkeypatch.setenv(name, value)
    backend = get_backend("agentcore")
    env_dir = tmp_path / "environment"
    env_dir.mkdir()
    (env_dir / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    box = backend.create(SandboxSpec(name="left", environment_dir=env_dir, cache_key="left", network_mode="public",
                                     labels={"benchflow.job": f"left-{tmp_path.name}", "benchflow.trial": "t1"}))
    box.labels["benchflow.pid"] = "999999999"  # as if a killed run had made it
    asyncio.run(box.start())
    try:
        env = agentcore_double.env()
        listed = run_bench("sandbox", "list", "--json", env=env)
        assert listed.returncode == 0, listed.stderr
        rows = [row for row in json.loads(listed.stdout) if row["id"] == box.sandbox_id]
        assert [(row["sandbox"], row["trial"], row["owner_alive"]) for row in rows] == [("agentcore", "t1", False)]
        cleaned = run_bench("sandbox", "cleanup", "--id", box.sandbox_id, env=env)
        assert cleaned.returncode == 0, cleaned.stderr
        assert not backend.exists(box.sandbox_id)
    finally:
        asyncio.run(box.stop())


def test_a_run_without_credentials_is_refused_in_one_line(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO, network="public")
    done = run_bench("run", str(tmp_path / "tasks"), "--sandbox", "agentcore", "--jobs-dir", str(tmp_path / "jobs"),
                     env={"BENCHFLOW_AGENTCORE_ROLE_ARN": "", "AWS_REGION": ""})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "BENCHFLOW_AGENTCORE_ROLE_ARN" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_model_calling_agent_reaches_the_gateway_over_the_emulated_stream(tmp_path: Path, agentcore_double) -> None:
    """An ACP agent in an AgentCore sandbox: its ACP session and the model bridge's binary frames travel over the
    stdin emulation (FIFO writes by one-shot commands) and the followed output files."""
    from tests.doubles.fake_model_server import FakeModelServer
    from tests.integration.test_agent_pipeline import (
        PYTHON_IMAGE,
        UPSTREAM_KEY,
        fake_agent_file,
    )
    from tests.integration.test_model_bridge import (
        ASK_AND_DUMP_ENV,
        PASS_IF_ANSWERED,
        sandbox_env,
        trial_dirs,
    )

    make_task(tmp_path / "tasks", "ask", dockerfile=PYTHON_IMAGE, network="public", test=PASS_IF_ANSWERED)
    jobs = tmp_path / "jobs"
    with FakeModelServer() as upstream:
        done = run_bench("run", str(tmp_path / "tasks"), "-s", "agentcore", "--jobs-dir", str(jobs), "-j", "1",
                         "-a", str(fake_agent_file(tmp_path)), "-m", "gpt-4o-mini", "--retry-attempts", "0",
                         "--agent-env", f"FAKE_ACP_SCRIPT={json.dumps({'prompts': [ASK_AND_DUMP_ENV]})}",
                         env={"OPENAI_API_KEY": UPSTREAM_KEY, "OPENAI_BASE_URL": upstream.url + "/v1",
                              "BENCHFLOW_CACHE": str(tmp_path / "cache"), **agentcore_double.env()})
    assert done.returncode == 0, done.stderr + done.stdout
    assert len(upstream.requests) == 1
    [trial] = trial_dirs(jobs)
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"]["reward"] == 1.0, result.get("error")
    assert sandbox_env(trial)["OPENAI_API_KEY"].startswith("sk-benchflow-")
