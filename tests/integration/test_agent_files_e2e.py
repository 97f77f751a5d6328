"""Agent files as users bring them, run for real on Docker.

An agent file in the reference's registry schema (contracts §5.1) runs unchanged:
its ``install_cmd`` as plain bash (a failing step in the middle is not fatal), its
``launch_cmd`` as a bash command line, its ``env_mapping`` giving the agent the
gateway's URL, key and model under its own names. The agent is the test double
``tests/doubles/fake_acp_agent.py``; its model calls go to the test double
``tests/doubles/fake_model_server.py`` through the job's gateway.

An install that exits non-zero is attempted once (no retry), and its one-line
error carries the cause from the install log and, for a certificate failure,
the ``--ca-bundle host`` fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomli_w

from tests.conftest import ROOT, run_bench
from tests.doubles.fake_model_server import FakeModelServer
from tests.taskgen import PASS_IF_HELLO, make_task

PYTHON_IMAGE = "FROM benchflow/python:3.11-bookworm\nWORKDIR /app\n"
UPSTREAM_KEY = "sk-proj-UPSTREAMSECRET" + "r" * 30


def reference_agent_file(tmp: Path, install_cmd: str | None = None) -> Path:
    source = (ROOT / "tests" / "doubles" / "fake_acp_agent.py").read_text()
    install = install_cmd if install_cmd is not None else (
        # $NOT_SET_ANYWHERE and `false;` would stop a `set -eu` script; the reference runs plain bash
        "echo \"installing for ${NOT_SET_ANYWHERE}\"; false; mkdir -p /opt/benchflow && "
        f"cat > /opt/benchflow/fake_acp_agent.py <<'BENCHFLOW_EOF'\n{source}\nBENCHFLOW_EOF\n")
    entry = {
        "name": "fake-reference-agent", "description": "TEST DOUBLE: scripted ACP agent, reference schema",
        "install_cmd": install,
        # a bash command line: the gateway's standard variables are dropped, the mapped ones used
        "launch_cmd": ("unset OPENAI_BASE_URL OPENAI_API_KEY; export OPENAI_BASE_URL=\"$MY_URL\" "
                       "OPENAI_API_KEY=\"$MY_KEY\" OPENAI_MODEL=\"$MY_MODEL\"; "
                       "exec python3 /opt/benchflow/fake_acp_agent.py"),
        "protocol": "acp", "api_protocol": "openai-completions",
        "env_mapping": {"BENCHFLOW_PROVIDER_BASE_URL": "MY_URL", "BENCHFLOW_PROVIDER_API_KEY": "MY_KEY",
                        "BENCHFLOW_PROVIDER_MODEL": "MY_MODEL"},
        "supports_acp_set_model": False, "skill_paths": ["$HOME/.fake/skills"],
    }
    path = tmp / "my-agent.toml"
    path.write_text(tomli_w.dumps(entry))
    return path


@pytest.mark.docker
def test_a_reference_schema_agent_file_runs_unchanged(tmp_path: Path) -> None:
    with FakeModelServer() as upstream:
        steps = [{"op": "ask_model", "api": "openai", "prompt": "say hello"},
                 {"op": "tool", "id": "tc_hello", "write": {"path": "hello.txt", "content": "hello"}},
                 {"op": "message", "text": "done"}]
        make_task(tmp_path / "tasks", "hello", dockerfile=PYTHON_IMAGE, network="no-network", test=PASS_IF_HELLO)
        jobs = tmp_path / "jobs"
        done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs),
                         "-a", str(reference_agent_file(tmp_path)), "-m", "gpt-4o-mini",
                         "--fresh-install",  # the install runs (and logs) even when an earlier test cached its layer
                         "--agent-env", f"FAKE_ACP_SCRIPT={json.dumps({'prompts': [steps]})}",
                         env={"OPENAI_API_KEY": UPSTREAM_KEY, "OPENAI_BASE_URL": upstream.url + "/v1"})
        assert done.returncode == 0, done.stderr + done.stdout
        assert [r["body"]["model"] for r in upstream.requests] == ["gpt-4o-mini"]  # MY_MODEL reached the agent
        assert upstream.requests[0]["headers"]["authorization"] == f"Bearer {UPSTREAM_KEY}"
    trial = next(jobs.rglob("result.json")).parent
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"]["reward"] == 1.0, result.get("error")
    assert result["n_tool_calls"] == 1 and result["agent_result"]["n_input_tokens"] > 0
    assert "installing for" in (trial / "agent" / "install-stdout.txt").read_text()


@pytest.mark.docker
def test_a_failing_install_is_tried_once_and_says_why(tmp_path: Path) -> None:
    failing = ("echo 'npm error code UNABLE_TO_GET_ISSUER_CERT_LOCALLY' >&2; "
               "echo 'npm error request to https://registry.npmjs.org/fake failed, reason: "
               "unable to get local issuer certificate' >&2; "
               "echo 'npm error A complete log of this run can be found in: /root/.npm/_logs/x-debug-0.log' >&2; "
               "exit 1")
    make_task(tmp_path / "tasks", "hello", dockerfile=PYTHON_IMAGE, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs),
                     "-a", str(reference_agent_file(tmp_path, install_cmd=failing)), "--retry-attempts", "2")
    assert done.returncode == 1, done.stderr + done.stdout
    results = [json.loads(p.read_text()) for p in jobs.rglob("result.json")]
    assert [r["attempt"] for r in results] == [1], "a deterministic install failure was retried"
    error = results[0]["error"]
    assert results[0]["error_category"] == "install_failure"
    assert error.splitlines()[0] == error
    assert "the install exited with code 1: npm error request to https://registry.npmjs.org/fake failed" in error
    assert "rerun with --ca-bundle host" in error
