"""The agent registry: built-in data, user files, lookups, credential discovery."""

from __future__ import annotations

import pytest

from benchflow.agents import registry
from benchflow.agents.agent_config import AgentConfig
from benchflow.agents.registry import (
    find_credentials,
    get_agent_config,
    list_agents,
    resolve_agent,
)
from benchflow.errors import ConfigError

REQUIRED = {"claude-agent-acp", "codex-acp", "gemini", "opencode", "openhands", "goose", "qwen-code"}

MINIMAL = """
name = "{name}"
launch = "my-agent --acp"
[install]
kind = "pip"
packages = ["my-agent==1.0"]
[gateway]
api = "openai-completions"
base_url_env = ["OPENAI_BASE_URL"]
"""


@pytest.fixture(autouse=True)
def empty_user_dir(tmp_path, monkeypatch):
    folder = tmp_path / "user-agents"
    folder.mkdir()
    monkeypatch.setenv("BENCHFLOW_AGENTS_DIR", str(folder))
    return folder


def test_builtins_cover_the_required_agents_with_pinned_installs():
    agents = {c.name: c for c in list_agents()}
    assert REQUIRED <= set(agents)
    for config in agents.values():
        assert config.launch and config.gateway.api
        for pkg in config.install.packages:
            assert "@" in pkg.lstrip("@") or "==" in pkg, pkg


def test_aliases_resolve_to_their_agent():
    assert get_agent_config("claude").name == "claude-agent-acp"
    assert get_agent_config("codex").name == "codex-acp"


def test_unknown_name_lists_known_ones_and_exits_2():
    with pytest.raises(ConfigError) as err:
        get_agent_config("nosuch")
    assert err.value.exit_code == 2
    assert "claude-agent-acp" in str(err.value) and "oracle" in str(err.value)


def test_user_folder_adds_and_overrides(empty_user_dir):
    (empty_user_dir / "mine.toml").write_text(MINIMAL.format(name="my-agent"))
    (empty_user_dir / "gemini.toml").write_text(MINIMAL.format(name="gemini"))
    agents = {c.name: c for c in list_agents()}
    assert agents["my-agent"].install.packages == ["my-agent==1.0"]
    assert agents["gemini"].launch == "my-agent --acp"


def test_agent_file_path_and_tables_form(tmp_path):
    single = tmp_path / "one.toml"
    single.write_text(MINIMAL.format(name="solo"))
    assert get_agent_config(str(single)).name == "solo"
    tables = tmp_path / "many.toml"
    tables.write_text('[agents.a]\nlaunch = "a"\n[agents.a.install]\nkind = "none"\n'
                      '[agents.a.gateway]\napi = "gemini"\n')
    registry_dir = tmp_path / "reg"
    registry_dir.mkdir()
    (registry_dir / "many.toml").write_text(tables.read_text())
    assert [c.name for c in registry._user(registry_dir)] == ["a"]


def test_resolve_agent_returns_an_acp_agent(tmp_path):
    path = tmp_path / "solo.toml"
    path.write_text(MINIMAL.format(name="solo"))
    agent = resolve_agent(str(path))
    assert (agent.name, agent.is_control, agent.needs_oracle) == ("solo", False, False)


@pytest.mark.parametrize(("text", "field"), [
    ("typo = 1\n" + MINIMAL.format(name="x"), "typo"),
    (MINIMAL.format(name="x") + "typo = 1\n", "gateway.typo"),
    (MINIMAL.format(name="x").replace("my-agent==1.0", "my-agent"), "install"),
    (MINIMAL.format(name="Bad Name"), "name"),
    ('name = "x"\nlaunch = "x"\n[install]\nkind = "none"\n', "gateway"),
])
def test_bad_user_files_name_file_and_field(tmp_path, text, field):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        get_agent_config(str(path))
    message = str(err.value)
    assert str(path) in message and f"field {field}" in message


def test_invalid_toml_is_a_config_error(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("name = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        get_agent_config(str(path))


def test_credentials_report_name_and_source_never_value(tmp_path):
    config = get_agent_config("claude-agent-acp")
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text("{}")
    found = find_credentials(config, environ={"ANTHROPIC_API_KEY": "sk-ant-secret-value"}, home=home)
    assert [(c.name, c.source) for c in found] == [("ANTHROPIC_API_KEY", "environment"),
                                                   ("~/.claude/.credentials.json", "file")]
    assert "sk-ant-secret-value" not in repr(found)


def test_credentials_from_dotenv(tmp_path):
    dotenv = tmp_path / ".env"
    dotenv.write_text("# keys\nexport GEMINI_API_KEY='abc'\nGOOGLE_API_KEY=\n")
    found = find_credentials(get_agent_config("gemini"), environ={"BENCHFLOW_DOTENV_PATH": str(dotenv)},
                             home=tmp_path)
    assert [(c.name, c.source) for c in found] == [("GEMINI_API_KEY", f".env ({dotenv})")]


def test_schema_is_strict_at_every_level():
    with pytest.raises(ValueError):
        AgentConfig.model_validate({"name": "x", "launch": "x", "install": {"kind": "none", "extra": 1},
                                    "gateway": {"api": "gemini"}})
