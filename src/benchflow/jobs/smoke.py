"""``bench eval smoke``: the bundled hello-world task once per credentialed agent, one at a time.

Each agent first goes through ``bench doctor --agent-start``'s stages (install, launch, handshake;
see :mod:`.stages`); only if they pass does it run hello-world, whose result gives the
first-model-call stage: FAIL on an agent or provider error, ok when the agent reported model
usage, not exercised when the run finished without any.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchflow.errors import ConfigError, SandboxUnavailable

from .layout import TrialPaths
from .stages import Stage, finish


@dataclass
class SmokeRow:
    agent: str
    model: str | None
    reward: float | None
    seconds: float
    trajectory: str | None
    error: str | None = None
    stages: list[Stage] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.reward == 1.0


def smoke_targets(agents: list[str]) -> list[tuple[str, str | None]]:
    """(agent, model) pairs: the named ones (``NAME`` or ``NAME=MODEL``), else every agent with a credential."""
    from benchflow.agents.registry import (
        find_credentials,
        get_agent_config,
        list_agents,
    )

    if agents:
        out = []
        for item in agents:
            name, _, model = item.partition("=")
            get_agent_config(name)  # unknown names fail here, listing the known ones
            out.append((name, model or None))
        return out
    return [(config.name, config.model.default) for config in list_agents() if find_credentials(config)]


def run_smoke(agents: list[str], *, sandbox: str, jobs_dir: Path, timeout_sec: float,
              on_row: Callable[[SmokeRow], None] = lambda _r: None) -> list[SmokeRow]:
    """Run each agent on hello-world in its own job; returns one row per agent.

    Raises:
        SandboxUnavailable: the sandbox cannot run here (checked before any run).
        ConfigError: no agent to smoke.
    """
    from benchflow.demo import HELLO_WORLD
    from benchflow.sandbox import get_backend

    from .api import run_async
    from .public import make_spec

    ok, reason = get_backend(sandbox).available()
    if not ok:
        raise SandboxUnavailable(f"--sandbox {sandbox} cannot run here: {reason} (see bench doctor)")
    targets = smoke_targets(agents)
    if not targets:
        raise ConfigError("no agent has a credential on this machine (see bench agents); "
                          "name one with --agent NAME[=MODEL]")
    stamp = dt.datetime.now().strftime("%Y-%m-%d__%H-%M-%S")
    rows = []
    for name, model in targets:
        started = time.monotonic()
        stages = _start_stages(name, sandbox, timeout_sec)
        failed = next((stage for stage in stages if stage.failed), None)
        if failed:
            rows.append(SmokeRow(name, model, None, time.monotonic() - started, None,
                                 f"{failed.name} failed", stages))
            on_row(rows[-1])
            continue
        options = {"agent": name, "sandbox": sandbox, "jobs_dir": str(jobs_dir / stamp / name), "fresh": True,
                   "max_retries": 0, **({"model": model} if model else {})}
        run_started = time.monotonic()
        try:
            spec = make_spec(str(HELLO_WORLD), **options)
            outcome = asyncio.run(asyncio.wait_for(run_async(spec), timeout_sec))
            trial = next(outcome.job_dir.glob("hello-world__*"), None)
            reward = ((outcome.summary.get("mean_reward")) if outcome.summary["total"] else None)
            row = SmokeRow(name, model, reward, time.monotonic() - started,
                           str(TrialPaths(trial).trajectory_dir) if trial else None,
                           None if outcome.summary["passed"] else _why(outcome))
            model_call = _model_call(trial, time.monotonic() - run_started)
        except TimeoutError:
            row = SmokeRow(name, model, None, time.monotonic() - started, None, f"took longer than {timeout_sec:g}s")
            model_call = Stage("first model call", "FAIL", detail=f"the run took longer than {timeout_sec:g}s")
        if stages:
            row.stages = finish(stages[:3], model_call=model_call)
        rows.append(row)
        on_row(row)
    return rows


def _why(outcome) -> str:
    categories = outcome.summary.get("error_categories") or outcome.summary.get("verifier_error_categories")
    return f"not solved ({', '.join(categories)})" if categories else "not solved"


def _start_stages(name: str, sandbox: str, timeout_sec: float) -> list[Stage]:
    """The agent-start stages, or none for a control agent (nothing to install or start)."""
    from benchflow import agents

    from .agent_start import agent_start

    agent = agents.resolve(name)
    if agent.is_control or not hasattr(agent, "handshake"):
        return []
    return asyncio.run(agent_start(name, sandbox=sandbox, timeout_sec=timeout_sec))


def _model_call(trial: Path | None, seconds: float) -> Stage:
    """The first-model-call stage from the trial's result.json."""
    path = TrialPaths(trial).result if trial else None
    if path is None or not path.is_file():
        return Stage("first model call", "FAIL", detail="the run left no result.json")
    result = json.loads(path.read_text())
    if result.get("api_error_info") or result.get("error_category"):
        first = (str(result.get("error") or "").strip().splitlines() or [""])[0]
        category = result.get("error_category") or "api_error"
        return Stage("first model call", "FAIL", detail=f"{category}: {first}".rstrip(": "))
    tokens = (result.get("agent_result") or {}).get("n_input_tokens") or 0
    if tokens > 0:
        return Stage("first model call", "ok", seconds, f"{tokens} input tokens")
    return Stage("first model call", "not exercised", detail="the agent reported no model usage")
