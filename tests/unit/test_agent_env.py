"""What an agent process gets: environment, gateway variables, credential files, install script."""

from __future__ import annotations

import subprocess

import pytest

from benchflow.agents.agent_env import (
    check_effort,
    credential_file_script,
    format_model,
    gateway_env,
    gateway_env_from,
    process_env,
)
from benchflow.agents.install import install_script
from benchflow.agents.registry import get_agent_config
from benchflow.errors import ConfigError


def test_gateway_env_maps_onto_the_agents_own_variables():
    claude = get_agent_config("claude-agent-acp")
    env = gateway_env(claude, base_url="http://127.0.0.1:9/__benchflow/t1/", api_key="k1", model="claude-x")
    assert env == {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/__benchflow/t1", "ANTHROPIC_AUTH_TOKEN": "k1",
                   "ANTHROPIC_MODEL": "claude-x"}
    openhands = get_agent_config("openhands")
    assert gateway_env(openhands, base_url="u", api_key="k", model="gpt-5")["LLM_MODEL"] == "benchflow/gpt-5"


def test_gateway_env_from_the_gateways_route_variables():
    route_vars = {"ANTHROPIC_BASE_URL": "http://gw/anthropic", "ANTHROPIC_API_KEY": "trial-key",
                  "OPENAI_BASE_URL": "http://gw/openai/v1", "OPENAI_API_KEY": "trial-key",
                  "BENCHFLOW_PROVIDER_BASE_URL": "http://gw/openrouter/v1", "BENCHFLOW_PROVIDER_API_KEY": "trial-key",
                  "BENCHFLOW_PROVIDER_MODEL": "qwen/qwen3-coder"}
    claude = gateway_env_from(get_agent_config("claude"), route_vars, "claude-x")
    assert claude["ANTHROPIC_BASE_URL"] == "http://gw/anthropic" and claude["ANTHROPIC_AUTH_TOKEN"] == "trial-key"
    hands = gateway_env_from(get_agent_config("openhands"), route_vars, "openrouter/qwen/qwen3-coder")
    assert (hands["LLM_BASE_URL"], hands["LLM_MODEL"]) == ("http://gw/openrouter/v1", "qwen/qwen3-coder")
    assert hands["OPENAI_BASE_URL"] == "http://gw/openai/v1"  # the gateway's own variables stay
    assert gateway_env_from(get_agent_config("gemini"), {}, "m") == {}


def test_model_format_keeps_provider_prefixed_ids():
    opencode = get_agent_config("opencode")
    assert format_model(opencode, "openai/gpt-5") == "openai/gpt-5"
    assert format_model(get_agent_config("codex-acp"), "gpt-5") == "gpt-5"


def test_process_env_layers_and_effort_variable():
    openhands = get_agent_config("openhands")
    env = process_env(openhands, {"LLM_API_KEY": "k", "PATH": "/custom"}, user="agent", model="openai/gpt-5",
                      effort="high")
    assert env["HOME"] == "/home/agent" and env["PATH"] == "/custom"
    assert env["LLM_MODEL"] == "openai/gpt-5" and env["LLM_REASONING_EFFORT"] == "high"
    assert process_env(get_agent_config("goose"), {}, user=None, model=None, effort=None)["HOME"] == "/root"


def test_effort_is_refused_where_the_agent_has_none():
    check_effort(get_agent_config("claude"), "max")
    with pytest.raises(ConfigError, match="no effort setting"):
        check_effort(get_agent_config("gemini"), "high")
    check_effort(get_agent_config("codex"), "max")
    with pytest.raises(ConfigError, match="accepts"):
        check_effort(get_agent_config("codex"), "minimal")  # codex-acp 1.6's levels: low … max


def test_credential_file_script_writes_json_escaped_value(tmp_path):
    codex = get_agent_config("codex-acp")
    home = str(tmp_path)
    script, stdin = credential_file_script(codex, {"OPENAI_API_KEY": 'sk-"quoted"\\x'}, home)
    assert b"sk-" in stdin and "sk-" not in script  # the value travels on stdin only
    subprocess.run(["bash", "-c", script], input=stdin, check=True)
    auth = tmp_path / ".codex" / "auth.json"
    import json

    assert json.loads(auth.read_text()) == {"OPENAI_API_KEY": 'sk-"quoted"\\x'}
    assert oct(auth.stat().st_mode & 0o777) == "0o600"
    assert credential_file_script(get_agent_config("opencode"), {}, home) is None


@pytest.mark.parametrize("name", ["claude-agent-acp", "openhands", "goose", "opencode"])
def test_install_scripts_are_valid_bash(name):
    script = install_script(get_agent_config(name))
    assert subprocess.run(["bash", "-n", "-c", script]).returncode == 0
    assert "/opt/benchflow" in script
