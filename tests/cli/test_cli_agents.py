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
