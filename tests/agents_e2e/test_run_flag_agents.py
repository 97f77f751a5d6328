"""Real agents under the agent-side run flags of ``bench run``: ``--codex-apps-policy`` (codex-acp) and
``--self-gen-no-internet`` (claude-agent-acp, codex-acp), installed from their registries into the cached
agent layer and driven by a scripted provider on loopback (``tests/doubles/scripted_*.py``), which keeps
every request it got: what tools the agent offered its model is what the flags change."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchflow.demo import HELLO_WORLD
from tests.agents_e2e.test_builtin_agents_e2e import PROVIDERS, _registries_reachable  # noqa: F401 - a fixture
from tests.conftest import FIXTURE_TASKS, run_bench

pytestmark = [pytest.mark.agents_e2e, pytest.mark.docker, pytest.mark.slow]

CREATOR = FIXTURE_TASKS.parent / "skills" / "skill-creator"
SELF_GEN = ["--skill-mode", "self-gen", "--skill-creator-dir", str(CREATOR)]


def _run(agent: str, api: str, task: Path, jobs: Path, *flags: str) -> tuple[Path, dict, list]:
    provider = PROVIDERS[api]
    with provider.server() as upstream:
        done = run_bench("run", str(task), "-s", "docker", "--jobs-dir", str(jobs), "-a", agent, "-m", provider.model,
                         "--ca-bundle", "host", "--retry-attempts", "0", "--timeout-multiplier", "0.5", *flags,
                         env=provider.env(upstream.url), timeout=1500)
        calls = list(upstream.calls)
    results = list(jobs.rglob("result.json"))
    assert len(results) == 1, done.stderr[-3000:] + done.stdout[-2000:]
    return results[0].parent, json.loads(results[0].read_text()), calls


def _offered(calls: list) -> set[str]:
    """Every tool the agent offered its model (a function's name, or a built-in tool's type)."""
    return {tool.get("name") or tool.get("type") for call in calls if call.kind in ("tool_call", "final")
            for tool in call.body.get("tools") or []}


def test_codex_apps_are_off_in_a_scored_codex_trial_and_proven_off_by_codex_itself(tmp_path):
    trial, result, _ = _run("codex-acp", "openai-responses", HELLO_WORLD, tmp_path / "disabled")
    assert result["error"] is None and result["rewards"]["reward"] == 1.0
    receipt = json.loads((trial / "codex_apps_policy.json").read_text())
    assert (receipt["requested"], receipt["applied"], receipt["mechanism"]) == (
        "automatic", "disabled", "managed_requirements")
    assert receipt["effective_apps"] is False and receipt["override_probe"] == "cli_true_remains_false"
    assert receipt["requirements_created"] is True and len(receipt["requirements_sha256"]) == 64
    assert receipt["native_version"].count(".") == 2
    assert json.loads((trial / "config.json").read_text())["codex_apps_policy"] == "disabled"

    trial, result, _ = _run("codex-acp", "openai-responses", HELLO_WORLD, tmp_path / "inherit",
                            "--codex-apps-policy", "inherit")
    assert result["rewards"]["reward"] == 1.0
    assert json.loads((trial / "codex_apps_policy.json").read_text()) == {
        "requested": "inherit", "applied": "inherit", "mechanism": "inherited"}


def test_an_image_whose_requirements_allow_apps_refuses_the_codex_trial(tmp_path):
    task = tmp_path / "hello-apps-on"
    shutil.copytree(HELLO_WORLD, task)
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN mkdir -p /etc/codex && "
                                                   "printf '[features]\\napps = true\\n' > /etc/codex/requirements.toml\n")
    trial, result, calls = _run("codex-acp", "openai-responses", task, tmp_path / "jobs")
    assert result["rewards"] is None and result["error_category"] == "sandbox_setup"
    assert "Codex Apps policy disabled could not be enforced: Codex still reports Apps on" in result["error"]
    assert "--codex-apps-policy inherit" in result["error"]
    assert calls == []  # the agent never started: no model call
    receipt = json.loads((trial / "codex_apps_policy.json").read_text())
    assert receipt["applied"] == "disabled" and "refused" in receipt


@pytest.mark.parametrize(("agent", "api", "web_tools"), [
    ("claude-agent-acp", "anthropic-messages", {"WebSearch", "WebFetch"}),
    ("codex-acp", "openai-responses", {"web_search"}),
])
def test_self_gen_no_internet_takes_the_agent_s_web_tools_away(tmp_path, agent, api, web_tools):
    trial, result, calls = _run(agent, api, HELLO_WORLD, tmp_path / "open", *SELF_GEN)
    assert result["rewards"]["reward"] == 1.0 and web_tools <= _offered(calls)  # offered without the flag

    trial, result, calls = _run(agent, api, HELLO_WORLD, tmp_path / "closed", *SELF_GEN, "--self-gen-no-internet")
    assert result["rewards"]["reward"] == 1.0, result["error"]
    offered = _offered(calls)
    assert offered and not web_tools & offered, offered  # the same agent, its other tools, no web
    config = json.loads((trial / "config.json").read_text())
    assert config["self_gen_no_internet"] is True and config["skill_mode"] == "self-gen"
