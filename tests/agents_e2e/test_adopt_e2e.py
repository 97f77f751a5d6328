"""``bench eval adopt SOURCE`` on a host without the Codex CLI: the conversion runs through BenchFlow's
agent layer. The real codex-acp (or claude-agent-acp, named by ``$BENCHFLOW_ADOPT_AGENT``), installed
from npm into the cached agent layer, works in a no-network sandbox holding the source and the
scaffold; its model calls go through the job's gateway to a scripted provider
(``tests/doubles/scripted_*.py``), which scripts it to write the package's parity record (and a link
leading out of the package). The package comes back to the host's ``benchmarks/``, and
``bench eval adopt NAME --verify`` scores it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.agents_e2e.test_builtin_agents_e2e import PROVIDERS, UPSTREAM_KEYS, _registries_reachable  # noqa: F401
from tests.conftest import run_bench
from tests.doubles.scripted_common import Work

pytestmark = [pytest.mark.agents_e2e, pytest.mark.docker, pytest.mark.slow]

AGREEING = {"conversion_parity": {"tasks": [{"task_id": "t1", "criteria_results": [
    {"criterion_id": "passes", "original_verdict": "pass", "adapted_verdict": "pass"}]}]},
    "reward_distribution_parity": {"samples": [{"task_id": "t1", "legacy_reward": 1.0, "converted_reward": 1.0}]}}


def _path_without_codex() -> str:
    """This PATH less every folder holding a ``codex``: the host has no Codex CLI."""
    return os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not shutil.which("codex", path=d))


@pytest.mark.parametrize(("agent", "api"), [("codex-acp", "openai-responses"),
                                            ("claude-agent-acp", "anthropic-messages")])
def test_without_codex_on_the_host_an_agent_converts_in_a_sandbox_and_the_gate_reads_the_package(
        tmp_path: Path, agent: str, api: str):
    """codex-acp by default; another agent through $BENCHFLOW_ADOPT_AGENT."""
    work = tmp_path / "repo"
    source = work / "upstream-bench"
    source.mkdir(parents=True)
    (source / "README.md").write_text("Upstream bench: one task, scored pass/fail.\n")
    package = "/app/benchmarks/upstream-bench"
    script = Work(command=(f"cd {package} && test -f /app/source/README.md && "
                           f"printf '%s' '{json.dumps(AGREEING)}' > parity_experiment.json && "
                           "mkdir -p tasks/t1 && echo 'Solve t1.' > tasks/t1/instruction.md && "
                           "ln -s /etc/passwd leak"),
                  summary="Converted; parity recorded.")
    provider = PROVIDERS[api]
    chosen = {} if agent == "codex-acp" else {"BENCHFLOW_ADOPT_AGENT": agent}
    upstream = provider.server(work=script)
    with upstream:
        done = run_bench("eval", "adopt", "./upstream-bench", "--model", provider.model, cwd=work,
                         env={**provider.env(upstream.url), **chosen, "PATH": _path_without_codex()}, timeout=1500)
        calls = list(upstream.calls)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    assert f"no 'codex' on PATH, so agent {agent} runs it in a BenchFlow sandbox" in done.stderr

    # the scripted model was asked by the agent, through the gateway, with the conversion prompt
    kinds = [c.kind for c in calls]
    assert "tool_call" in kinds and "final" in kinds[kinds.index("tool_call"):], kinds
    first = next(c for c in calls if c.kind == "tool_call")
    assert "Adopt a benchmark into BenchFlow: upstream-bench" in json.dumps(first.body)
    assert first.model == provider.model

    # the package is on the host: the scaffold, the agent's work, no link that led out
    bench = work / "benchmarks" / "upstream-bench"
    assert json.loads((bench / "parity_experiment.json").read_text()) == AGREEING
    assert (bench / "tasks" / "t1" / "instruction.md").read_text() == "Solve t1.\n"
    assert (bench / "parity_test.py").is_file() and (bench / "benchmark.yaml").is_file()
    assert not (bench / "leak").exists() and not (bench / "leak").is_symlink()
    assert "left out of benchmarks/upstream-bench: leak (absolute or empty symbolic link)" in done.stdout
    assert not [p for p in bench.parent.iterdir() if p.name != "upstream-bench"]  # no staging folder left

    # the trial is kept as a job: its verifier found every file the guide asks for
    (result_file,) = (work / "jobs").glob("adopt-upstream-bench-*/*/result.json")
    result = json.loads(result_file.read_text())
    assert result["error"] is None and result["rewards"]["reward"] == 1.0
    blob = "".join(p.read_text(errors="replace") for p in (work / "jobs").rglob("*") if p.is_file())
    assert not any(key in blob for key in UPSTREAM_KEYS.values())

    gate = run_bench("eval", "adopt", "upstream-bench", "--verify", cwd=work)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert gate.stdout.splitlines()[0] == "verdict: parity-confirmed"
