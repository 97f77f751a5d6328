"""Agent files in the reference's registry schema (contracts §5.1) load, map onto ours, or are refused
with a reason naming the file and the key; ours print back in the reference's schema."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import tomli_w

from benchflow.agents.agent_env import credential_file_script, format_model, gateway_env_from
from benchflow.agents.reference_schema import REFERENCE_KEYS, to_reference
from benchflow.agents.registry import get_agent_config, list_agents, resolve_agent
from benchflow.errors import ConfigError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
BUILTINS_0_7 = ("claude-agent-acp", "codex-acp", "gemini", "opencode", "mimo", "pi-acp", "openclaw", "openhands",
                "harvey-lab-harness", "deepagents")
GATEWAY = {"BENCHFLOW_PROVIDER_NAME": "openai", "BENCHFLOW_PROVIDER_BASE_URL": "http://gw/openai/v1",
           "BENCHFLOW_PROVIDER_API_KEY": "trial-key", "BENCHFLOW_PROVIDER_MODEL": "gpt-4o",
           "BENCHFLOW_PROVIDER_PROTOCOL": "openai-completions", "ANTHROPIC_BASE_URL": "http://gw/anthropic"}


@pytest.fixture(autouse=True)
def empty_user_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHFLOW_AGENTS_DIR", str(tmp_path / "none"))


@pytest.mark.parametrize("name", BUILTINS_0_7)
def test_each_reference_builtin_entry_loads(name):
    config = get_agent_config(str(FIXTURES / f"{name}.toml"))
    assert config.name == name and config.protocol == "acp"
    assert config.install.kind == "script" and config.install.script.startswith("bash -c ")


def test_every_reference_key_is_honoured():
    path = FIXTURES / "every-key.toml"
    import tomllib

    assert set(tomllib.loads(path.read_text())) == set(REFERENCE_KEYS)  # the fixture really has them all
    config = get_agent_config(str(path))
    # install_cmd runs as plain bash: a failing step in the middle does not stop it (ours runs set -eu)
    assert shlex.split(config.install.script) == ["bash", "-c", "echo installing; false; echo a failed step in "
                                                  "the middle is not fatal in the reference"]
    assert config.install.timeout_sec == 600
    assert shlex.split(config.launch) == ["bash", "-c", "export AGENT_MODE=acp; exec my-agent --stdio"]
    assert config.api_key_env == ["MY_API_KEY"] and config.home_dirs == [".my-agent"]
    assert config.model.default == "my-model-1" and config.model.format == "provider/model"
    assert (config.model.via, config.model.config_id) == ("config_option", "model_id")
    assert (config.effort.via, config.effort.config_id) == ("config_option", "reasoning")
    assert config.subscription.host_files == ["~/.my-agent/login.json"]
    assert config.subscription.container_dir == ".my-agent" and config.subscription.replaces_env == ["MY_API_KEY"]
    assert config.reference.skill_paths == ["$HOME/.my-agent/skills", "$WORKSPACE/skills"]
    assert config.reference.task_mcp_transport == "native-config"
    env = gateway_env_from(config, GATEWAY, "gpt-4o")
    assert (env["MY_BASE_URL"], env["MY_KEY"], env["MY_MODEL"]) == ("http://gw/openai/v1", "trial-key",
                                                                     "benchflow/gpt-4o")
    script, stdin = credential_file_script(config, {"MY_API_KEY": "k-123"}, "/home/agent")
    assert "/home/agent/.my-agent/key" in script and stdin == b"k-123\0"  # template "" = the raw value


def test_env_owned_model_and_anthropic_mapping():
    config = get_agent_config(str(FIXTURES / "claude-agent-acp.toml"))
    assert config.gateway.api == "anthropic-messages" and config.model.via == "env"
    env = gateway_env_from(config, GATEWAY, "claude-x")
    assert env["ANTHROPIC_AUTH_TOKEN"] == "trial-key" and env["ANTHROPIC_MODEL"] == "gpt-4o"
    assert config.subscription.host_files == ["~/.claude/.credentials.json"]


def test_empty_api_protocol_follows_the_mapped_url_variable():
    assert get_agent_config(str(FIXTURES / "gemini.toml")).gateway.api == "gemini"
    assert get_agent_config(str(FIXTURES / "deepagents.toml")).gateway.api == "openai-completions"


def test_format_templates_become_literal_json():
    codex = get_agent_config(str(FIXTURES / "codex-acp.toml"))
    assert codex.credential_files[0].template == '{"OPENAI_API_KEY": "{value}"}'
    mimo = get_agent_config(str(FIXTURES / "mimo.toml"))
    assert mimo.credential_files[0].template == '{"provider": {"xiaomi": {"options": {"apiKey": "{env:XIAOMI_API_KEY}"}}}}'


def test_registered_provider_model_ids():
    config = get_agent_config(str(FIXTURES / "pi-acp.toml"))
    assert format_model(config, "gpt-4o", "openai") == "openai/gpt-4o"
    assert format_model(config, "vllm/Qwen/Qwen3", "vllm") == "vllm/Qwen/Qwen3"


@pytest.mark.parametrize(("extra", "key", "words"), [
    ({"protocol": "cli"}, "protocol", "not supported"),
    ({"protocol": "session-factory", "session_factory": "m:f"}, "protocol", "ACP"),
    ({"session_factory": "pkg.mod:make"}, "session_factory", "in-process"),
    ({"env_mapping": {"BENCHFLOW_PROVIDER_NAME": "X"}}, "env_mapping.BENCHFLOW_PROVIDER_NAME", "launch_cmd"),
    ({"env_mapping": {"OPENAI_BASE_URL": "X"}}, "env_mapping.OPENAI_BASE_URL", "BENCHFLOW_PROVIDER_"),
    ({"api_protocol": "grpc"}, "api_protocol", "not one of"),
    ({"colour": "red"}, "colour", "remove it"),
    ({"install": {"kind": "none"}}, "install", "one schema"),
    ({"credential_files": [{"path": "{home}/k", "env_source": "K", "template": "{key}"}]},
     "credential_files[0].template", "{value}"),
    ({"subscription_auth": {"replaces_env": "K", "detect_file": "~/.a/x",
                            "files": [{"host_path": "~/.a/x", "container_path": "{home}/.a/x"},
                                      {"host_path": "~/.b/y", "container_path": "{home}/.b/y"}]}},
     "subscription_auth.files", "one folder"),
    ({"install_timeout": -1}, "install_timeout", "positive"),
])
def test_refused_keys_name_file_key_and_fix(tmp_path, extra, key, words):
    path = tmp_path / "agent.toml"
    path.write_text(tomli_w.dumps({"name": "x", "install_cmd": "true", "launch_cmd": "x --acp", **extra}))
    with pytest.raises(ConfigError) as err:
        get_agent_config(str(path))
    message = str(err.value)
    assert err.value.exit_code == 2 and "\n" not in message
    assert message.startswith(f"{path}: key {key}: ") and words in message


def test_reference_tables_form_names_the_table(tmp_path):
    path = tmp_path / "many.toml"
    path.write_text(tomli_w.dumps({"agents": {"a": {"install_cmd": "", "launch_cmd": "a", "protocol": "cli"}}}))
    with pytest.raises(ConfigError, match=r"key agents\.a\.protocol: "):
        get_agent_config(str(path))


@pytest.mark.parametrize("name", [*BUILTINS_0_7, "every-key"])
def test_reference_output_loads_back_to_the_same_agent(tmp_path, name):
    config = get_agent_config(str(FIXTURES / f"{name}.toml"))
    again = tmp_path / f"{name}.toml"
    again.write_text(tomli_w.dumps(to_reference(config)))
    assert get_agent_config(str(again)) == config


def test_builtins_print_in_the_reference_schema_and_load_back(tmp_path):
    for config in list_agents():
        entry = to_reference(config)
        assert set(entry) <= set(REFERENCE_KEYS)
        path = tmp_path / f"{config.name}.toml"
        path.write_text(tomli_w.dumps(entry))
        back = get_agent_config(str(path))
        assert (back.name, back.gateway, back.model.default) == (config.name, config.gateway, config.model.default)
        # the install is the very script this version runs for the built-in
        from benchflow.agents.install import install_script

        if config.install.kind != "none":
            assert shlex.split(back.install.script)[2] == install_script(config)


def test_unavailable_builtins_say_why_and_are_refused():
    for name in ("mimo", "openclaw", "harvey-lab-harness", "goose", "pi-acp", "openhands"):
        config = get_agent_config(name)
        assert config.unavailable_reason
        with pytest.raises(ConfigError, match=f"agent {name} cannot run here: "):
            resolve_agent(name)
    for name in ("deepagents", "claude-agent-acp", "codex-acp", "opencode"):
        assert not get_agent_config(name).unavailable_reason
        assert all("@" in p.lstrip("@") or "==" in p for p in get_agent_config(name).install.packages)
