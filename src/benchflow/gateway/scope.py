"""One run's share of a gateway that outlives it (the warm daemon's): its keys, its meter, its routes.

The daemon starts one :class:`SharedGateway` (a :class:`~benchflow.gateway.runner.Gateway` with
no provider keys of its own, on a socket in a private folder) and keeps it running; each run it
serves gets a :class:`GatewayScope` of it, which the run uses
exactly where it would use a gateway of its own (``ModelAccess``, a judge's call). What must not
leak from one run to the next stays in the scope:

- **credentials**: the run's providers (its caller's environment and ``--agent-env``) travel
  with every route it registers, so its trials' calls use its keys only; the gateway's own
  upstream table is empty, so a key of no registered trial reaches no provider;
- **metering**: the run's job budget (``--max-cost-usd`` / ``--max-tokens`` and what was spent)
  counts only its routes' calls; ``--capture-tokens`` is per route too;
- **routes**: :meth:`GatewayScope.close` unregisters whatever the run left, so its trial keys
  are refused once it ends.

Per-trial keys, budgets and ``llm_trajectory.jsonl`` files are per route already.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from benchflow.gateway.budget import JobBudget
from benchflow.gateway.replay import Replay
from benchflow.gateway.routes import TrialRoute
from benchflow.gateway.runner import Gateway, GatewayConfig
from benchflow.gateway.upstream import Upstreams


class GatewayScope:
    """The part of a shared :class:`Gateway` one run sees; the same calls as a gateway of its own."""

    def __init__(self, gateway: Gateway, upstreams: Upstreams, *, max_cost_usd: float | None = None,
                 max_tokens: int | None = None, capture_tokens: bool = False) -> None:
        self._gateway = gateway
        self.upstreams = upstreams
        self.capture_tokens = capture_tokens
        self._meter = JobBudget(max_cost_usd, max_tokens)
        self._trials: set[str] = set()

    @property
    def state(self) -> Any:
        return self._gateway.state

    @property
    def unix_socket(self) -> Path | None:
        return self._gateway.unix_socket

    @property
    def port(self) -> int | None:
        return self._gateway.port

    @property
    def base_url(self) -> str:
        return self._gateway.base_url

    def register_trial(self, trial_id: str, llm_trajectory_path: str | os.PathLike[str],
                       token_budget: int | None = None, turn_budget: int | None = None,
                       upstreams: Upstreams | None = None, replay: Replay | None = None) -> TrialRoute:
        """As :meth:`Gateway.register_trial`, with this run's providers (unless the caller brings
        its own, as a judge does), meter and token capture."""
        route = self._gateway.register_trial(trial_id, llm_trajectory_path, token_budget, turn_budget,
                                             upstreams or self.upstreams, meter=self._meter,
                                             capture_tokens=self.capture_tokens, replay=replay)
        self._trials.add(trial_id)
        return route

    def route(self, trial_id: str) -> TrialRoute | None:
        return self._gateway.route(trial_id) if trial_id in self._trials else None

    def unregister_trial(self, trial_id: str) -> None:
        if trial_id in self._trials:
            self._trials.discard(trial_id)
            self._gateway.unregister_trial(trial_id)

    def job_spent(self) -> dict[str, float | int]:
        return self._meter.spent()

    @property
    def job_cap_reached(self) -> str | None:
        return self._meter.cap_reached

    def close(self) -> None:
        """Unregister every route of the run still registered (its keys are refused from now on)."""
        for trial_id in list(self._trials):
            self.unregister_trial(trial_id)


class SharedGateway:
    """A gateway started once for many runs: its folder (0700, holding the socket the runs' bridges
    link to), and how many runs it has served."""

    def __init__(self, gateway: Gateway, folder: Path) -> None:
        self.gateway, self.folder = gateway, folder
        self.runs = 0

    @classmethod
    async def start(cls, socket_name: str) -> SharedGateway:
        """Listening on ``folder/socket_name`` (the name the model bridge links: ``jobs.bridge.SOCKET_NAME``)."""
        folder = Path(tempfile.mkdtemp(prefix="benchflow-gw-"))
        gateway = Gateway(GatewayConfig(upstreams=Upstreams.from_env({}), unix_socket=folder / socket_name,
                                        capture_tokens=False))
        try:
            await gateway.start()
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return cls(gateway, folder)

    @property
    def serving(self) -> bool:
        return self.gateway.serving

    def scope(self, upstreams: Upstreams, *, max_cost_usd: float | None, max_tokens: int | None,
              capture_tokens: bool) -> GatewayScope:
        """A new run's scope (counted in :attr:`runs`)."""
        self.runs += 1
        return GatewayScope(self.gateway, upstreams, max_cost_usd=max_cost_usd, max_tokens=max_tokens,
                            capture_tokens=capture_tokens)

    async def stop(self) -> None:
        await self.gateway.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
