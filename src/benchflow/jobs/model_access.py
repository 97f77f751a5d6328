"""The job's model gateway, as the trials use it: start it once, give each trial a route and a bridge.

Controls (oracle, nop) make no model calls and get none of this. For any other
agent the gateway starts with the job (its upstream keys come from this
machine's environment and ``--agent-env``; they never enter a sandbox or the
job folder), each trial registers a route (its own key, its
``llm_trajectory.jsonl``, its token/turn budgets), and the sandbox reaches the
gateway through a bridge of its own (:mod:`benchflow.jobs.bridge`): a read-only
mounted socket where the backend can mount host folders, else the sandbox's
exec stream.

Under the warm daemon the gateway is the daemon's, already running: the run gets a scope of
it (:mod:`benchflow.gateway.scope`: its own keys, job budget and routes) instead of starting
one, and leaves it running when it ends.

The per-trial key is the only credential the sandbox gets: an ``--agent-env``
entry that holds a provider key (by name, e.g. ``GOOGLE_API_KEY``, or by value,
under any name) is used upstream and reaches the agent as the trial's key.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .bridge import (
    MOUNT,
    SOCKET_NAME,
    OpenBridge,
    open_bridge,
    remove_trial_folder,
    trial_folder,
)


def provider_key_names() -> frozenset[str]:
    """Every variable a provider's key is read from or handed to an agent under."""
    from benchflow.gateway.upstream import providers

    return frozenset(name for p in providers().values() for name in (*p.key_env, *p.agent_key_env))


def keys_replaced(agent_env: Mapping[str, str], upstream_keys: set[str], trial_key: str) -> dict[str, str]:
    """The ``agent_env`` entries that hold a provider key, each set to ``trial_key`` instead."""
    names = provider_key_names()
    return {name: trial_key for name, value in agent_env.items() if name in names or value in upstream_keys}


@dataclass
class ModelAccess:
    """One job's gateway plus the bridges of its trials."""

    gateway: Any
    folder: Path
    """Private host folder (0700): the gateway's socket and one ``trials/<trial>`` folder per mount."""
    agent_env: dict[str, str] = field(default_factory=dict)
    token_budget: int | None = None
    turn_budget: int | None = None
    shared: bool = False
    """The gateway is a scope of a gateway that outlives the run (the daemon's): not stopped here."""
    _bridges: dict[str, OpenBridge] = field(default_factory=dict)
    _folders: dict[str, Path] = field(default_factory=dict)
    _replays: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    @classmethod
    async def start(cls, spec: Any, shared: Any = None) -> ModelAccess:
        """The run's gateway: a new one, or with ``shared`` (a running
        :class:`benchflow.gateway.scope.SharedGateway`, the daemon's) a scope of that one."""
        from benchflow.gateway import Gateway, GatewayConfig, Upstreams

        upstreams = Upstreams.from_env({**os.environ, **spec.agent_env})
        if shared is not None:
            from benchflow.gateway import tokens

            scope = shared.scope(upstreams, max_cost_usd=spec.budget.max_cost_usd, max_tokens=spec.budget.max_tokens,
                                 capture_tokens=spec.capture_tokens or tokens.capture_from_env())
            return cls(gateway=scope, folder=shared.folder, agent_env=dict(spec.agent_env), shared=True,
                       token_budget=spec.budget.token_budget, turn_budget=spec.budget.turn_budget)
        folder = Path(tempfile.mkdtemp(prefix="benchflow-gw-"))
        gateway = Gateway(GatewayConfig(upstreams=upstreams, unix_socket=folder / SOCKET_NAME, port=None,
                                        max_cost_usd=spec.budget.max_cost_usd, max_tokens=spec.budget.max_tokens,
                                        **({"capture_tokens": True} if spec.capture_tokens else {})))
        try:
            await gateway.start()
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return cls(gateway=gateway, folder=folder, agent_env=dict(spec.agent_env),
                   token_budget=spec.budget.token_budget, turn_budget=spec.budget.turn_budget)

    def mounts_for(self, trial: str, capabilities: Any) -> dict[str, Path]:
        """The host folders to mount for ``trial`` (read-only): its own bridge folder where the
        backend has ``host_mounts``, else none (the bridge then uses the exec stream)."""
        if not getattr(capabilities, "host_mounts", False):
            return {}
        folder = self._folders.get(trial) or trial_folder(self.folder, trial)
        self._folders[trial] = folder
        return {MOUNT: folder}

    def expect_replay(self, trial: str, replay: Any, upstreams: Any = None) -> None:
        """Register ``trial``'s route, when it opens, with ``replay`` (a :class:`benchflow.gateway.replay.Replay`:
        its model calls answered from a recording first) and, when given, ``upstreams`` of its own (a
        replay-only continuation's provider, which needs no key)."""
        self._replays[trial] = (replay, upstreams)

    async def open_trial(self, agent: Any, trial: str, llm_trajectory: Path, sandbox: Any, *,
                         model: str | None) -> dict[str, str]:
        """Register the trial and start its bridge; returns the provider variables for the agent
        (the standard ones and the agent's own spellings, all pointing at the gateway, and every
        ``--agent-env`` provider key replaced by the trial's key)."""
        replay, upstreams = self._replays.pop(trial, (None, None))
        extra = {"replay": replay, "upstreams": upstreams} if replay is not None else {}
        route = self.gateway.register_trial(trial, llm_trajectory, token_budget=self.token_budget,
                                            turn_budget=self.turn_budget, **extra)
        mounted = trial in self._folders and sandbox.spec.mounts.get(MOUNT) == self._folders[trial]
        bridge = await open_bridge(sandbox, self.folder / SOCKET_NAME, mounted=mounted)
        self._bridges[trial] = bridge
        variables = {**keys_replaced(self.agent_env, set(self.gateway.upstreams.secrets()), route.key),
                     **route.agent_env(model, gateway_url=bridge.url)}
        config = getattr(agent, "config", None)
        if config is None:
            return variables
        from benchflow.agents.agent_env import gateway_env_from

        return gateway_env_from(config, variables, model)

    def close_trial(self, trial: str, n_tool_calls: int) -> dict[str, Any]:
        """Stop routing the trial and remove its bridge; returns its usage and any provider-failure
        diagnosis."""
        bridge = self._bridges.pop(trial, None)
        if bridge is not None:
            bridge.close()
        folder = self._folders.pop(trial, None)
        if folder is not None:
            remove_trial_folder(folder)
        route = self.gateway.route(trial)
        if route is None:
            return {}
        self.gateway.unregister_trial(trial)
        return {"usage": route.usage(), "api_error_info": route.api_error_info(),
                "suspected_api_error_info": route.suspected_api_error_info(n_tool_calls),
                "budget_exhausted": route.budget_exhausted}

    def stop_reason(self, trial: str) -> str | None:
        """Why the trial's agent must stop now (its spent budget, or its replay's end), else None."""
        route = self.gateway.route(trial)
        return route.stop_reason if route is not None else None

    def spent(self) -> dict[str, float]:
        return dict(self.gateway.job_spent())

    async def stop(self) -> None:
        for bridge in self._bridges.values():
            bridge.close()
        self._bridges.clear()
        for folder in self._folders.values():
            remove_trial_folder(folder)
        self._folders.clear()
        if self.shared:
            self.gateway.close()
            return
        await self.gateway.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
