"""Installing agents and the ACP handshake (``initialize`` only, no model call) in Docker sandboxes.

The real-agent test installs ``claude-agent-acp`` from the npm registry. Sandboxes
here run with no network, and this engine has no bridge network, so the install
runs as an image build with network mode ``host`` (``SandboxSpec.build_network``):
the Dockerfile runs the registry's own install script, the result is a cached
image layer (later runs reuse it), and the handshake then happens in a
no-network sandbox started from that image.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from pathlib import Path

import httpx
import pytest

from benchflow.agents.acp_runtime import AcpAgent
from benchflow.agents.agent_config import AgentConfig
from benchflow.agents.base import AgentContext
from benchflow.agents.install import install_script
from benchflow.agents.registry import get_agent_config
from benchflow.agents.trajectory import AcpTrajectoryFile
from benchflow.errors import AgentError
from benchflow.sandbox import SandboxSpec, get_backend

pytestmark = pytest.mark.docker

FAKE = Path(__file__).resolve().parents[1] / "doubles" / "fake_acp_agent.py"
IMAGE = "benchflow/python:3.11-bookworm"


def config_of(**overrides) -> AgentConfig:
    data = {"name": "fake-acp", "launch": "python3 /opt/fake/fake_acp_agent.py", "install": {"kind": "none"},
            "gateway": {"api": "openai-completions"}, **overrides}
    return AgentConfig.model_validate(data)


def ctx_for(tmp_path: Path, env: dict[str, str] | None = None) -> AgentContext:
    trial = tmp_path / "trial"
    return AgentContext(task_name="t", workdir="/app", prompts=[], trial_dir=trial, env=env or {},
                        trajectory=AcpTrajectoryFile(trial / "trajectory" / "acp_trajectory.jsonl"))


async def started(spec: SandboxSpec):
    box = get_backend("docker").create(spec)
    await box.start()
    return box


def host_ca_bundle() -> Path | None:
    """The host's CA bundle: builds behind a TLS-intercepting proxy need it to reach the registry."""
    for candidate in (os.environ.get("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def spec_for(image: str | None = IMAGE, environment_dir: Path | None = None, cache_key: str = "acp-install",
             build_timeout_sec: float = 600, ca_bundle: Path | None = None) -> SandboxSpec:
    return SandboxSpec(name=f"acp-install-{uuid.uuid4().hex[:6]}", environment_dir=environment_dir,
                       cache_key=cache_key, image=image, network_mode="no-network", workdir="/app",
                       build_timeout_sec=build_timeout_sec, ca_bundle=ca_bundle,
                       labels={"benchflow.test": "acp-install"})


@pytest.fixture
async def sandbox():
    box = await started(spec_for())
    await box.put(FAKE, "/opt/fake/fake_acp_agent.py")
    try:
        yield box
    finally:
        await box.stop()


async def test_install_failure_is_its_own_category_and_logged(sandbox, tmp_path):
    config = config_of(install={"kind": "npm", "packages": ["left-pad@1.3.0"], "bins": ["left-pad"]})
    ctx = ctx_for(tmp_path)
    with pytest.raises(AgentError) as err:
        await AcpAgent(config).install(sandbox, ctx)
    assert err.value.category == "install_failure"
    assert "install failed" in str(err.value)
    assert (ctx.trial_dir / "agent" / "install-stdout.txt").is_file()


async def test_install_timeout_is_an_install_failure(sandbox, tmp_path):
    config = config_of(install={"kind": "script", "script": "echo started; sleep 30", "timeout_sec": 1})
    ctx = ctx_for(tmp_path)
    with pytest.raises(AgentError, match="timed out after 1s") as err:
        await AcpAgent(config).install(sandbox, ctx)
    assert err.value.category == "install_failure"


async def test_install_script_recipe_runs_as_root_into_the_prefix(sandbox, tmp_path):
    config = config_of(install={"kind": "script", "script": "id -u > /opt/benchflow/who; echo installed"})
    ctx = ctx_for(tmp_path)
    await AcpAgent(config).install(sandbox, ctx)
    assert "installed" in (ctx.trial_dir / "agent" / "install-stdout.txt").read_text()
    assert (await sandbox.exec(["cat", "/opt/benchflow/who"])).stdout.strip() == "0"


async def test_handshake_answers_initialize_without_a_session(sandbox, tmp_path):
    ctx = ctx_for(tmp_path)
    info = await AcpAgent(config_of()).handshake(sandbox, ctx)
    assert info["agentInfo"]["name"] == "fake-acp-agent" and info["protocolVersion"] == 1
    log = (ctx.trial_dir / "agent" / "fake_acp.txt").read_text()
    assert "got initialize" in log and "session/new" not in log


async def test_subscription_login_is_copied_only_with_host_login_for_the_agent_user_without_a_key(
        sandbox, tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".fake").mkdir(parents=True)
    (home / ".fake" / "login.json").write_text('{"token": "t"}')
    monkeypatch.setenv("HOME", str(home))
    login = {"host_files": ["~/.fake/login.json"], "container_dir": ".fake", "replaces_env": ["FAKE_API_KEY"]}
    agent = AcpAgent(config_of(subscription=login))
    await agent.handshake(sandbox, ctx_for(tmp_path / "a"))  # no --host-login: never copied
    await agent.handshake(sandbox, dataclasses.replace(ctx_for(tmp_path / "b", {"FAKE_API_KEY": "set"}),
                                                       host_login=True))  # a key stands in for it
    missing = await sandbox.exec(["test", "-e", "/home/agent/.fake/login.json"])
    assert missing.return_code == 1
    await agent.handshake(sandbox, dataclasses.replace(ctx_for(tmp_path / "c"), host_login=True))
    stat = await sandbox.exec(["stat", "-c", "%U %a", "/home/agent/.fake/login.json"])
    assert stat.stdout.strip() == "agent 600"


async def test_handshake_with_a_dying_agent_is_a_closed_pipe(sandbox, tmp_path):
    ctx = ctx_for(tmp_path, {"FAKE_ACP_SCRIPT": '{"on": {"initialize": "exit"}}'})
    with pytest.raises(AgentError) as err:
        await AcpAgent(config_of()).handshake(sandbox, ctx)
    assert err.value.category == "pipe_closed"


def _npm_registry_reachable() -> bool:
    try:
        return httpx.head("https://registry.npmjs.org/npm", timeout=10, follow_redirects=True).status_code < 500
    except httpx.HTTPError:
        return False


@pytest.mark.slow
async def test_real_claude_agent_acp_installs_from_npm_and_completes_initialize(tmp_path):
    if not _npm_registry_reachable():
        pytest.skip("the npm registry is unreachable from this machine")
    config = get_agent_config("claude-agent-acp")
    env_dir = tmp_path / "environment"
    env_dir.mkdir()
    (env_dir / "install.sh").write_text(install_script(config))
    (env_dir / "Dockerfile").write_text(f"FROM {IMAGE}\nCOPY install.sh /tmp/benchflow-install.sh\n"
                                        "RUN bash /tmp/benchflow-install.sh\n")
    spec = spec_for(image=None, environment_dir=env_dir, cache_key=f"agent-{config.name}-{config.install.version}",
                    build_timeout_sec=config.install.timeout_sec, ca_bundle=host_ca_bundle())
    box = await started(spec)
    try:
        ctx = ctx_for(tmp_path)
        info = await AcpAgent(config).handshake(box, ctx)
        assert info["protocolVersion"] == 1
        assert "claude" in info["agentInfo"]["name"].lower()
        assert (await box.exec(["sh", "-c", "id -un"], user="agent")).stdout.strip() == "agent"
    finally:
        await box.stop()
