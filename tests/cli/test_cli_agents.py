"""``bench agents`` / ``bench agent list`` / ``bench agent show`` as a user types them."""

from __future__ import annotations

import pytest

SECRET = "sk-ant-verysecretvalue1234567890"


@pytest.fixture
def env(tmp_path):
    folder = tmp_path / "agents"
    folder.mkdir()
    return {"BENCHFLOW_AGENTS_DIR": str(folder), "HOME": str(tmp_path), "ANTHROPIC_API_KEY": SECRET,
            "OPENAI_API_KEY": "", "BENCHFLOW_DOTENV_PATH": str(tmp_path / "no.env")}


def test_agents_table_lists_builtins_and_credentials_without_values(bench, env):
    result = bench("agents", env=env)
    assert result.returncode == 0, result.stderr
    for name in ("claude-agent-acp", "codex-acp", "gemini", "opencode", "openhands", "goose", "qwen-code"):
        assert name in result.stdout
    assert "ANTHROPIC_API_KEY (environment)" in result.stdout
    assert "missing: OPENAI_API_KEY" in result.stdout
    assert SECRET not in result.stdout + result.stderr
    assert "oracle" in result.stdout and "nop" in result.stdout


def test_agent_list_is_the_same_table(bench, env):
    assert bench("agent", "list", env=env).stdout == bench("agents", env=env).stdout


def test_show_one_agent_in_detail(bench, env, tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / ".credentials.json").write_text("{}")
    for argv in (("agents", "claude"), ("agent", "show", "claude-agent-acp")):
        result = bench(*argv, env=env)
        assert result.returncode == 0, result.stderr
        out = result.stdout
        assert "@agentclientprotocol/claude-agent-acp@0.40.0" in out
        assert "/opt/benchflow/bin/claude-agent-acp" in out
        assert "ANTHROPIC_API_KEY (environment)" in out and "~/.claude/.credentials.json (file)" in out
        assert SECRET not in out


def test_user_agent_file_is_listed(bench, env, tmp_path):
    (tmp_path / "agents" / "mine.toml").write_text(
        'name = "my-agent"\nlaunch = "mine --acp"\n[install]\nkind = "none"\n[gateway]\napi = "gemini"\n')
    assert "my-agent" in bench("agents", env=env).stdout
    assert "mine --acp" in bench("agents", "my-agent", env=env).stdout


def test_unknown_agent_exits_2_listing_known_names(bench, env):
    result = bench("agent", "show", "nosuch", env=env)
    assert result.returncode == 2
    assert "unknown agent 'nosuch'" in result.stderr and "claude-agent-acp" in result.stderr
    assert "Traceback" not in result.stderr


def test_broken_user_file_exits_2_naming_file_and_field(bench, env, tmp_path):
    bad = tmp_path / "agents" / "bad.toml"
    bad.write_text('name = "b"\nlaunch = "b"\ncolour = "red"\n[install]\nkind = "none"\n[gateway]\napi = "gemini"\n')
    result = bench("agents", env=env)
    assert result.returncode == 2
    assert "bad.toml" in result.stderr and "colour" in result.stderr


def test_piped_table_keeps_every_identifier_whole_on_one_line(bench, env):
    # a pipe is not a terminal: however narrow COLUMNS says the screen is, nothing wraps
    result = bench("agents", env={**env, "COLUMNS": "40"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for name in ("claude-agent-acp", "harvey-lab-harness", "@agentclientprotocol/claude-agent-acp@0.40.0",
                 "ANTHROPIC_API_KEY (environment)"):
        assert any(name in line for line in lines), name
    row = next(line for line in lines if "claude-agent-acp" in line)
    assert "ready" in row and "@agentclientprotocol/claude-agent-acp@0.40.0" in row


def test_unavailable_agents_are_marked_with_the_reason(bench, env):
    out = bench("agents", env=env).stdout
    assert "mimo is unavailable: its package @mimo-ai/cli@0.1.4" in out
    row = next(line for line in out.splitlines() if line.startswith("│ mimo "))
    assert "unavailable" in row


def test_json_lists_and_shows(bench, env):
    import json

    listed = json.loads(bench("agents", "--json", env=env).stdout)
    assert json.loads(bench("agent", "list", "--json", env=env).stdout) == listed
    by_name = {a["name"]: a for a in listed}
    assert {"pi-acp", "deepagents", "mimo", "openclaw", "harvey-lab-harness"} <= set(by_name)
    assert by_name["claude-agent-acp"]["credentials_found"] == [{"name": "ANTHROPIC_API_KEY", "source": "environment"}]
    assert by_name["mimo"]["available"] is False and "npm registry" in by_name["mimo"]["unavailable_reason"]
    shown = json.loads(bench("agent", "show", "claude", "--json", env=env).stdout)
    assert shown["name"] == "claude-agent-acp" and shown["install"]["packages"] == [
        "@agentclientprotocol/claude-agent-acp@0.40.0"]
    blob = json.dumps(listed) + json.dumps(shown)
    assert SECRET not in blob


def test_show_in_the_reference_schema_loads_back_as_an_agent_file(bench, env, tmp_path):
    import tomllib

    result = bench("agent", "show", "codex", "--format", "reference", env=env)
    assert result.returncode == 0, result.stderr
    entry = tomllib.loads(result.stdout)
    assert entry["name"] == "codex-acp" and "@agentclientprotocol/codex-acp@1.6.0" in entry["install_cmd"]
    assert entry["env_mapping"] == {"BENCHFLOW_PROVIDER_BASE_URL": "OPENAI_BASE_URL",
                                    "BENCHFLOW_PROVIDER_API_KEY": "OPENAI_API_KEY"}
    saved = tmp_path / "codex-ref.toml"
    saved.write_text(result.stdout)
    again = bench("agents", str(saved), "--format", "reference", "--json", env=env)
    assert again.returncode == 0, again.stderr
    import json

    assert json.loads(again.stdout)["install_cmd"] == entry["install_cmd"]


def test_reference_schema_file_refused_key_exits_2(bench, env, tmp_path):
    bad = tmp_path / "ref.toml"
    bad.write_text('name = "r"\ninstall_cmd = "true"\nlaunch_cmd = "r"\nprotocol = "cli"\n')
    result = bench("agent", "show", str(bad), env=env)
    assert result.returncode == 2
    assert f"{bad}: key protocol: 'cli' agents are not supported" in result.stderr
    assert "Traceback" not in result.stderr
    unknown = bench("agent", "show", "nosuch", "--format", "yaml", env=env)
    assert unknown.returncode == 2 and "--format yaml" in unknown.stderr
