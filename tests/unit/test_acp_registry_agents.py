"""``-a acp:<id>[@<version>]``: an agent of the ACP registry, read as Harbor's ACP runner reads it, against a
stand-in of GitHub's raw files and commits API (``tests/doubles/acp_registry_double.py``)."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from benchflow.agents.install import install_script
from benchflow.agents.registry import get_agent_config
from benchflow.errors import ConfigError
from tests.conftest import run_bench
from tests.doubles.acp_registry_double import AcpRegistryDouble

CLAUDE_PACKAGE = "@agentclientprotocol/claude-agent-acp"


def _entry(agent_id: str, version: str, **distribution) -> dict:
    return {"id": agent_id, "name": agent_id.title(), "version": version, "description": "an agent",
            "license": "MIT", "license_url": "https://example.org/license", "distribution": distribution}


@pytest.fixture
def registry(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    with AcpRegistryDouble(per_page_cap=2) as double:
        for key, value in double.env().items():
            monkeypatch.setenv(key, value)
        yield double


def test_the_tip_of_main_is_the_agent_and_a_builtin_with_its_package_lends_the_wiring(registry) -> None:
    registry.publish(_entry("claude-acp", "0.39.0", npx={"package": f"{CLAUDE_PACKAGE}@0.39.0"}))
    registry.publish(_entry("claude-acp", "0.40.0", npx={"package": f"{CLAUDE_PACKAGE}@0.40.0", "args": ["--x y"],
                                                         "env": {"MODE": "acp"}}))
    config = get_agent_config("acp:claude-acp")
    assert config.name == "claude-acp"
    assert config.install.kind == "npm" and config.install.packages == [f"{CLAUDE_PACKAGE}@0.40.0"]
    assert config.launch == "/opt/benchflow/bin/acp-claude-acp '--x y'"
    assert config.env["MODE"] == "acp"
    builtin = get_agent_config("claude-agent-acp")
    assert config.gateway == builtin.gateway and config.model == builtin.model and config.api_key_env == builtin.api_key_env
    assert "wired as the built-in claude-agent-acp" in config.description


def test_an_older_version_is_found_in_the_file_s_history_then_read_from_the_cache(registry) -> None:
    for version in ("1.0.0", "1.1.0", "1.2.0", "1.3.0", "2.0.0"):  # five commits: three pages of two
        registry.publish(_entry("pyagent", version, uvx={"package": "pyagent"}))
    config = get_agent_config("acp:pyagent@1.0.0")
    assert config.install.kind == "pip" and config.install.packages == ["pyagent==1.0.0"]
    assert config.install.bins == ["pyagent"] and config.launch == "/opt/benchflow/bin/pyagent"
    pages = [query for path, query, _ in registry.requests if path == "/api/commits"]
    assert [q.split("page=")[-1] for q in pages] == ["1", "2", "3"]
    asked = len(registry.requests)
    assert get_agent_config("acp:pyagent@1.0.0") == config  # pinned: the cached entry, no request
    assert len(registry.requests) == asked


def test_an_agent_no_builtin_knows_gets_openai_compatible_variables(registry) -> None:
    registry.publish(_entry("stranger", "3.1.0", uvx={"package": "stranger-acp@3.1.0", "args": ["serve"]}))
    config = get_agent_config("acp:stranger")
    assert config.install.packages == ["stranger-acp==3.1.0"] and config.launch.endswith("/stranger-acp serve")
    assert config.gateway.api == "openai-completions" and config.gateway.base_url_env == ["OPENAI_BASE_URL"]


@pytest.mark.parametrize(("spec", "arrange", "says"), [
    ("acp:nobody", None, "not in the ACP registry"),
    ("acp:pyagent@9.9.9", "pyagent", "has no version 9.9.9 of pyagent"),
    ("acp:Bad_Id", None, "acp:<id>[@<version>]"),
    ("acp:pyagent@", None, "version after '@' is empty"),
    ("acp:maconly", "maconly", "no distribution a Linux sandbox can run (binary for darwin-aarch64"),
])
def test_what_cannot_be_resolved_is_one_line_naming_the_agent(registry, spec, arrange, says) -> None:
    if arrange == "pyagent":
        registry.publish(_entry("pyagent", "1.0.0", uvx={"package": "pyagent"}))
    if arrange == "maconly":
        registry.publish(_entry("maconly", "1.0.0", binary={"darwin-aarch64": {
            "archive": "https://example.org/a.tar.gz", "cmd": "./a"}}))
    with pytest.raises(ConfigError) as caught:
        get_agent_config(spec)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_a_github_token_goes_in_the_header_only(registry, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "t" * 36)
    registry.publish(_entry("pyagent", "1.0.0", uvx={"package": "pyagent"}))
    get_agent_config("acp:pyagent@1.0.0")
    assert {auth for *_, auth in registry.requests} == {"Bearer ghp_" + "t" * 36}
    cached = list((tmp_path / "cache").rglob("agent.json"))
    assert cached and all("ghp_" not in p.read_text() for p in cached)


def test_a_binary_distribution_installs_the_archive_for_this_machine_checked_against_its_sha256(
        registry, tmp_path) -> None:
    program = b"#!/bin/sh\necho acp-binary-agent \"$@\"\n"
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        info = tarfile.TarInfo("bin/agent")
        info.size, info.mode = len(program), 0o755
        tar.addfile(info, io.BytesIO(program))
    (tmp_path / "agent.tar.gz").write_bytes(archive.getvalue())
    good = hashlib.sha256(archive.getvalue()).hexdigest()
    arch = subprocess.run(["uname", "-m"], capture_output=True, text=True).stdout.strip()
    key = "linux-aarch64" if arch in ("aarch64", "arm64") else "linux-x86_64"

    def install(agent_id: str, sha: str) -> tuple[subprocess.CompletedProcess, object, Path]:
        registry.publish(_entry(agent_id, "1.0.0", binary={key: {
            "archive": f"file://{tmp_path}/agent.tar.gz", "cmd": "./bin/agent", "args": ["--acp"], "sha256": sha}}))
        config = get_agent_config(f"acp:{agent_id}")
        prefix = tmp_path / agent_id
        script = install_script(config).replace("P=/opt/benchflow", f"P={prefix}")
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
        return done, config, prefix

    done, config, prefix = install("binagent", good)
    assert done.returncode == 0, done.stderr
    launch = config.launch.replace("/opt/benchflow", str(prefix))
    assert subprocess.run(["sh", "-c", launch], capture_output=True, text=True).stdout == "acp-binary-agent --acp\n"
    done, _, prefix = install("tampered", "0" * 64)
    assert done.returncode != 0 and "does not match the registry's sha256" in done.stderr
    assert not (prefix / "bin" / "acp-tampered").exists()


def test_bench_agents_shows_a_registry_agent(registry) -> None:
    registry.publish(_entry("claude-acp", "0.40.0", npx={"package": f"{CLAUDE_PACKAGE}@0.40.0"}))
    done = run_bench("agents", "acp:claude-acp@0.40.0", "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["name"] == "claude-acp" and shown["install"]["packages"] == [f"{CLAUDE_PACKAGE}@0.40.0"]
    done = run_bench("agents", "acp:nobody")
    assert done.returncode == 2 and "not in the ACP registry" in done.stderr


def test_the_cache_is_the_registry_s_own(registry, tmp_path) -> None:
    registry.publish(_entry("pyagent", "1.0.0", uvx={"package": "pyagent"}))
    get_agent_config("acp:pyagent@1.0.0")
    (cached,) = (tmp_path / "cache").rglob("agent.json")
    assert json.loads(cached.read_text())["version"] == "1.0.0"
    assert Path(cached).parts[-3:] == ("pyagent", "1.0.0", "agent.json")
