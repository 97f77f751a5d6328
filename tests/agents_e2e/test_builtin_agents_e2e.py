"""Every built-in agent, installed for real, solves the bundled hello task against a scripted provider.

For each built-in registry entry: ``bench run`` of ``benchflow.demo`` hello-world with
``--ca-bundle host`` installs the agent from its registry (npm / PyPI) into the cached
agent layer, launches it in a no-network sandbox, drives it over ACP, and its model
calls go through the job's gateway and the socket bridge to a scripted provider server
(``tests/doubles/scripted_*.py``) on loopback, which answers with a tool call doing the
task's work and then finishes the turn. The trial must score reward 1 with the tool
call in ``acp_trajectory.jsonl``, every model call in ``llm_trajectory.jsonl`` and
usage and cost in ``result.json``.

An agent that cannot be installed from the registries reachable here is skipped with
that reason (never passed). A built-in whose registry entry still has a defect this test
found is an expected failure, not run (it would only wait out the task's timeout); the
check looks at the entry itself, so the test runs again as soon as the entry is fixed.

Marked ``agents_e2e`` (and ``docker``): ``pytest -m agents_e2e`` runs only these. The
first run installs each agent (about a minute each); later runs start from the cached
layers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchflow.agents.agent_config import AgentConfig
from benchflow.agents.registry import _builtin
from benchflow.demo import HELLO_WORLD
from tests.conftest import run_bench
from tests.doubles.scripted_anthropic import ScriptedAnthropic
from tests.doubles.scripted_common import ScriptedServer
from tests.doubles.scripted_gemini import ScriptedGemini
from tests.doubles.scripted_openai import ScriptedOpenAI

pytestmark = [pytest.mark.agents_e2e, pytest.mark.docker, pytest.mark.slow]

UPSTREAM_KEYS = {"anthropic": "sk-ant-api03-SCRIPTED" + "a" * 40, "openai": "sk-proj-SCRIPTED" + "o" * 40,
                 "gemini": "AIzaSCRIPTED" + "g" * 27}
REACHABLE_HOSTS = {"registry.npmjs.org", "pypi.org", "files.pythonhosted.org", "deb.debian.org"}


@dataclass(frozen=True)
class Provider:
    """The scripted upstream for one gateway API, the host variables pointing the gateway at it, a model."""

    server: type[ScriptedServer]
    model: str
    env: Callable[[str], dict[str, str]]


PROVIDERS = {
    "anthropic-messages": Provider(ScriptedAnthropic, "claude-haiku-4-5-20251001", lambda url: {
        "ANTHROPIC_API_KEY": UPSTREAM_KEYS["anthropic"], "ANTHROPIC_BASE_URL": url}),
    # gpt-5.2 is one of the models codex-acp lists (session/set_model refuses others) and has a price
    "openai-responses": Provider(ScriptedOpenAI, "gpt-5.2", lambda url: {
        "OPENAI_API_KEY": UPSTREAM_KEYS["openai"], "OPENAI_BASE_URL": url + "/v1"}),
    "openai-completions": Provider(ScriptedOpenAI, "gpt-5.2", lambda url: {
        "OPENAI_API_KEY": UPSTREAM_KEYS["openai"], "OPENAI_BASE_URL": url + "/v1"}),
    "gemini": Provider(ScriptedGemini, "gemini-2.5-flash", lambda url: {
        "GEMINI_API_KEY": UPSTREAM_KEYS["gemini"], "GOOGLE_GEMINI_BASE_URL": url}),
}

def cannot_install_here(config: AgentConfig) -> str | None:
    """Why ``config`` cannot be installed from the registries reachable here, or None."""
    if getattr(config, "unavailable_reason", ""):  # the registry entry says so itself
        return f"{config.name}: {config.unavailable_reason}"
    hosts = sorted(set(re.findall(r"https?://([^/\s'\"]+)", config.install.script)) - REACHABLE_HOSTS)
    if hosts:
        return (f"{config.name} installs from {', '.join(hosts)} (not a package registry), which this "
                "machine cannot reach: only the npm, PyPI and Debian registries")
    return None


def _cases() -> list:
    cases = []
    for config in _builtin():
        marks = []
        reason = cannot_install_here(config)
        if reason:
            marks.append(pytest.mark.skip(reason=reason))
        cases.append(pytest.param(config, id=config.name, marks=marks))
    return cases


@pytest.fixture(scope="module", autouse=True)
def _registries_reachable() -> None:
    """The installs need the npm registry (through the host's CA bundle, as ``--ca-bundle host`` gives builds)."""
    import os
    import ssl
    import urllib.request

    bundle = os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt"
    context = ssl.create_default_context(cafile=bundle if Path(bundle).is_file() else None)
    try:
        urllib.request.urlopen("https://registry.npmjs.org/npm", timeout=15, context=context).close()
    except OSError as exc:
        reason = f"the npm registry is unreachable from this machine ({exc})"
        if os.environ.get("CI"):
            pytest.fail(f"agents_e2e: {reason} (CI is set, so this fails instead of skipping)")
        pytest.skip(reason)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("config", _cases())
def test_builtin_agent_solves_hello_world_through_the_gateway(config: AgentConfig, tmp_path: Path) -> None:
    _solves_hello_world(config, config.name, tmp_path)


def test_an_acp_registry_agent_is_installed_from_its_entry_and_solves_hello_world(tmp_path: Path, monkeypatch) -> None:
    """``-a acp:<id>@<version>``: the entry (from a stand-in of the registry's GitHub endpoints) names the
    built-in Claude adapter's npm package; bench installs it from the entry, launches the command npx would,
    and wires it as the built-in."""
    from benchflow.agents.registry import get_agent_config
    from tests.doubles.acp_registry_double import AcpRegistryDouble

    (package,) = get_agent_config("claude-agent-acp").install.packages
    version = package.rpartition("@")[2]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with AcpRegistryDouble() as registry:
        registry.publish({"id": "claude-acp", "name": "Claude", "version": version, "description": "Claude Code",
                          "distribution": {"npx": {"package": package}}})
        for key, value in registry.env().items():
            monkeypatch.setenv(key, value)
        config = get_agent_config(f"acp:claude-acp@{version}")
        assert config.install.packages == [package] and config.launch == "/opt/benchflow/bin/acp-claude-acp"
    _solves_hello_world(config, f"acp:claude-acp@{version}", tmp_path)  # the pinned entry is cached by now


def _solves_hello_world(config: AgentConfig, agent: str, tmp_path: Path) -> None:
    if config.gateway is None or config.gateway.api not in PROVIDERS:
        pytest.fail(f"{config.name}: no scripted provider for gateway api "
                    f"{getattr(config.gateway, 'api', None)!r}; add one to tests/doubles")
    provider = PROVIDERS[config.gateway.api]
    jobs = tmp_path / "jobs"
    with provider.server() as upstream:
        done = run_bench("run", str(HELLO_WORLD), "-s", "docker", "--jobs-dir", str(jobs), "--fresh",
                         "-a", agent, "-m", provider.model, "--ca-bundle", "host", "--retry-attempts", "0",
                         # against a scripted model a working agent is done in seconds: a stuck one fails in 60 s
                         "--timeout-multiplier", "0.5", env=provider.env(upstream.url), timeout=1500)
        calls = list(upstream.calls)
    trials = [p.parent for p in jobs.rglob("result.json")]
    assert len(trials) == 1, done.stderr[-3000:] + done.stdout[-2000:]
    trial = trials[0]
    result = json.loads((trial / "result.json").read_text())
    assert result["error"] is None, f"{result['error_category']}: {result['error']}"
    assert done.returncode == 0, done.stderr[-3000:]

    # the scripted model was asked, answered with the tool call, and was told the result
    kinds = [c.kind for c in calls]
    assert "tool_call" in kinds and "final" in kinds[kinds.index("tool_call"):], kinds
    # the agent ran that tool call in the sandbox, and the task's own verifier scored the work
    events = lines(trial / "trajectory" / "acp_trajectory.jsonl")
    tool_calls = [e for e in events if e["type"] == "tool_call"]
    assert any(e.get("status") == "completed" and "hello.txt" in json.dumps(e) for e in tool_calls), tool_calls
    assert result["n_tool_calls"] >= 1
    assert result["rewards"]["reward"] == 1.0

    # every model call the provider got went through the gateway and is in llm_trajectory.jsonl
    exchanges = lines(trial / "trajectory" / "llm_trajectory.jsonl")
    forwarded = [x for x in exchanges if x["response"]["status_code"] == 200]
    assert len(forwarded) == len(calls), ([x["request"]["path"] for x in exchanges], [c.path for c in calls])
    assert sorted(x["request"]["path"] for x in forwarded) == sorted(c.path for c in calls)

    # usage as the provider reported it, priced
    usage = result["agent_result"]
    assert usage["usage_source"] == "provider_response"
    assert usage["n_input_tokens"] > 0 and usage["n_output_tokens"] > 0
    assert usage["cost_usd"] is not None and usage["cost_usd"] > 0, usage

    # the provider key stayed on the host
    blob = "".join(p.read_text(errors="replace") for p in jobs.rglob("*") if p.is_file())
    assert not any(key in blob for key in UPSTREAM_KEYS.values())
