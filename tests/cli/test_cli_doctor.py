"""``bench doctor``: required checks, credentials by name only, JSON, exit codes."""

from __future__ import annotations

import json

import pytest


@pytest.mark.docker
def test_doctor_passes_with_a_working_engine_and_never_prints_secret_values(bench):
    secret = "sk-ant-doctor-test-0123456789abcdef"
    result = bench("doctor", "--offline", "--json", env={"ANTHROPIC_API_KEY": secret})
    assert result.returncode == 0, result.stdout + result.stderr
    assert secret not in result.stdout + result.stderr
    report = json.loads(result.stdout)
    checks = {(c["group"], c["name"]): c for c in report["checks"]}
    assert report["ok"] is True
    docker = checks[("sandbox", "docker")]
    assert docker["required"] and docker["status"] == "ok" and "Docker engine" in docker["detail"]
    assert checks[("credentials", "ANTHROPIC_API_KEY")]["detail"] == "set in the environment"
    assert checks[("python", "python")]["status"] == "ok"
    assert not [c for c in report["checks"] if c["group"] == "network" and c["name"] != "probes"]
    assert {("sandbox", "local"), ("sandbox", "remote-docker")} <= set(checks)


def test_doctor_exits_1_when_the_required_sandbox_does_not_work(bench):
    result = bench("doctor", "--offline", "--sandbox", "remote-docker",
                   env={"BENCHFLOW_REMOTE_DOCKER_HOST": "unix:///nonexistent/benchflow.sock"})
    assert result.returncode == 1
    assert "remote-docker (required)" in result.stdout and "FAIL" in result.stdout
    assert "A required check failed." in result.stdout


def test_doctor_reads_credentials_from_dotenv_by_name(bench, tmp_path):
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-proj-dotenvvalue0123456789abcd\n")
    result = bench("doctor", "--offline", "--json", "--sandbox", "local", cwd=tmp_path,
                   env={"OPENAI_API_KEY": ""})
    assert "sk-proj-dotenvvalue" not in result.stdout
    checks = {(c["group"], c["name"]): c for c in json.loads(result.stdout)["checks"]}
    assert checks[("credentials", "OPENAI_API_KEY")]["detail"].endswith(".env")


def test_doctor_refuses_an_unknown_sandbox(bench):
    result = bench("doctor", "--offline", "--sandbox", "nope")
    assert result.returncode == 2 and "--sandbox nope" in result.stderr


def test_agent_start_is_repeatable_and_checks_each_agent(bench):
    result = bench("doctor", "--offline", "--json", "--sandbox", "local",
                   "--agent-start", "oracle", "--agent-start", "nop", "--agent-start", "oracle")
    assert result.returncode == 1, result.stdout + result.stderr
    started = [c for c in json.loads(result.stdout)["checks"] if c["group"] == "agent"]
    assert [c["name"] for c in started] == ["start oracle", "start nop"]
    assert all(c["required"] and c["status"] == "fail" and "nothing to install" in c["detail"] for c in started)
