"""The job's model gateway, as the trials use it: start it once, give each trial a route and a bridge.

Controls (oracle, nop) make no model calls and get none of this. For any other
agent the gateway starts with the job (its upstream keys come from this
machine's environment and ``--agent-env``; they never enter a sandbox or the
job folder), each trial registers a route (its own key, its
``llm_trajectory.jsonl``, its token/turn budgets), and the sandbox reaches the
gateway through the bridge in :mod:`benchflow.jobs.bridge`.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .bridge import MOUNT, SOCKET_NAME, make_bridge_dir, start_forwarder


@dataclass
class ModelAccess:
    """One job's gateway plus the host folder bridged into its sandboxes."""

    gateway: Any
    bridge_dir: Path
    token_budget: int | None = None
    turn_budget: int | None = None
    _forwarders: dict[str, Any] = field(default_factory=dict)

    @classmethod
    async def start(cls, spec: Any) -> "ModelAccess":
        from benchflow.gateway import Gateway, GatewayConfig, Upstreams

        bridge_dir = make_bridge_dir()
        upstreams = Upstreams.from_env({**os.environ, **spec.agent_env})
        gateway = Gateway(GatewayConfig(upstreams=upstreams, unix_socket=bridge_dir / SOCKET_NAME,
                                        max_cost_usd=spec.budget.max_cost_usd, max_tokens=spec.budget.max_tokens))
        await gateway.start()
        return cls(gateway=gateway, bridge_dir=bridge_dir, token_budget=spec.budget.token_budget,
                   turn_budget=spec.budget.turn_budget)

    @property
    def mounts(self) -> dict[str, Path]:
        return {MOUNT: self.bridge_dir}

    async def open_trial(self, agent: Any, trial: str, llm_trajectory: Path, sandbox: Any, *,
                         user: str | None, model: str | None) -> dict[str, str]:
        """Register the trial and start its bridge; returns the provider variables for the agent
        (the standard ones and the agent's own spellings, all pointing at the gateway)."""
        route = self.gateway.register_trial(trial, llm_trajectory, token_budget=self.token_budget,
                                            turn_budget=self.turn_budget)
        url, process = await start_forwarder(sandbox, user)
        self._forwarders[trial] = process
        variables = route.agent_env(model, gateway_url=url)
        config = getattr(agent, "config", None)
        if config is None:
            return variables
        from benchflow.agents.agent_env import gateway_env_from

        return gateway_env_from(config, variables, model)

    def close_trial(self, trial: str, n_tool_calls: int) -> dict[str, Any]:
        """Stop routing the trial; returns its usage and any provider-failure diagnosis."""
        route = self.gateway.route(trial)
        self._forwarders.pop(trial, None)  # it dies with the sandbox
        if route is None:
            return {}
        self.gateway.unregister_trial(trial)
        return {"usage": route.usage(), "api_error_info": route.api_error_info(),
                "suspected_api_error_info": route.suspected_api_error_info(n_tool_calls),
                "budget_exhausted": route.budget_exhausted}

    def budget_exhausted(self, trial: str) -> str | None:
        """``token_budget`` / ``turn_budget`` once the trial has spent it, else None."""
        route = self.gateway.route(trial)
        return route.budget_exhausted if route is not None else None

    def spent(self) -> dict[str, float]:
        return dict(self.gateway.job_spent())

    async def stop(self) -> None:
        await self.gateway.stop()
        shutil.rmtree(self.bridge_dir, ignore_errors=True)
