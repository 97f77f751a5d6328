"""``bench eval smoke``: the bundled hello-world task once per credentialed agent, one at a time."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchflow.errors import ConfigError, SandboxUnavailable


@dataclass
class SmokeRow:
    agent: str
    model: str | None
    reward: float | None
    seconds: float
    trajectory: str | None
    error: str | None = None

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
        options = {"agent": name, "sandbox": sandbox, "jobs_dir": str(jobs_dir / stamp / name), "fresh": True,
                   "max_retries": 0, **({"model": model} if model else {})}
        try:
            spec = make_spec(str(HELLO_WORLD), **options)
            outcome = asyncio.run(asyncio.wait_for(run_async(spec), timeout_sec))
            trial = next(outcome.job_dir.glob("hello-world__*"), None)
            reward = ((outcome.summary.get("mean_reward")) if outcome.summary["total"] else None)
            row = SmokeRow(name, model, reward, time.monotonic() - started,
                           str(trial / "trajectory") if trial else None,
                           None if outcome.summary["passed"] else _why(outcome))
        except asyncio.TimeoutError:
            row = SmokeRow(name, model, None, time.monotonic() - started, None, f"took longer than {timeout_sec:g}s")
        rows.append(row)
        on_row(row)
    return rows


def _why(outcome) -> str:
    categories = outcome.summary.get("error_categories") or outcome.summary.get("verifier_error_categories")
    return f"not solved ({', '.join(categories)})" if categories else "not solved"
