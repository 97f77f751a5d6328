"""Job budgets: rollouts started and sandbox wall-clock seconds (model cost/tokens come from the gateway).

Checked between starts; ``max_sandbox_seconds`` also counts running trials and
is re-checked while they run. At a cap nothing new starts; running trials
finish (rollouts) or are cancelled (seconds, cost, tokens). With a ``ledger``
(worker shards: ``benchflow.shards.ledger``) the other processes' spend counts
against the same caps, and a start is decided under the ledger's lock.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .spec import Budget


@dataclass
class BudgetKeeper:
    caps: Budget
    started: int = 0
    finished_seconds: float = 0.0
    running: dict[str, float] = field(default_factory=dict)
    stopped: str | None = None
    cancelled: list[str] = field(default_factory=list)
    not_started: list[str] = field(default_factory=list)
    external_spent: dict[str, float] = field(default_factory=dict)
    """Spend reported by the model gateway (tokens, cost_usd)."""
    spend_source: Callable[[], dict[str, float]] | None = None
    """Where ``external_spent`` is read from (the gateway), re-read at every check."""
    ledger: Any = None
    """Shared with other processes under the same caps (``hold()``, ``publish(own) -> their totals``);
    None: this process spends the budget alone."""
    others: dict[str, float] = field(default_factory=dict)
    """The other processes' rollouts, seconds, tokens and cost_usd, as last read from the ledger."""

    def sync(self) -> None:
        """Re-read the gateway's spend; with a ledger, publish this process's and read the others'."""
        if self.spend_source is not None:
            spent = self.spend_source()
            self.external_spent = {"tokens": spent.get("tokens", 0), "cost_usd": spent.get("cost_usd", 0.0)}
        if self.ledger is not None:
            self.others = self.ledger.publish({
                "rollouts": self.started, "finished_seconds": self.finished_seconds,
                "running": list(self.running.values()), **self.external_spent, "stopped": self.stopped,
                "cancelled": self.cancelled, "not_started": self.not_started})

    def _money_cap(self) -> str | None:
        spent = {k: self.external_spent.get(k, 0) + self.others.get(k, 0) for k in ("cost_usd", "tokens")}
        if self.caps.max_cost_usd is not None and spent["cost_usd"] >= self.caps.max_cost_usd:
            return "max_cost_usd"
        if self.caps.max_tokens is not None and spent["tokens"] >= self.caps.max_tokens:
            return "max_tokens"
        return None

    def try_start(self, trial_key: str) -> bool:
        """Start ``trial_key`` when every cap allows one more start (decided under the ledger's lock and
        published before it is released); False once a cap is reached."""
        with self.ledger.hold() if self.ledger is not None else contextlib.nullcontext():
            if not self.may_start():
                self.sync()  # the others see why this process stopped
                return False
            self.begin(trial_key)
            self.sync()
        return True

    def may_start(self) -> bool:
        if self.stopped:
            return False
        self.sync()
        rollouts = self.started + self.others.get("rollouts", 0)
        if self.caps.max_rollouts is not None and rollouts >= self.caps.max_rollouts:
            self.stopped = "max_rollouts"
        elif self.over_seconds():
            self.stopped = "max_sandbox_seconds"
        else:
            self.stopped = self._money_cap()
        return self.stopped is None

    def begin(self, trial_key: str) -> None:
        self.started += 1
        self.running[trial_key] = time.monotonic()

    def end(self, trial_key: str) -> None:
        began = self.running.pop(trial_key, None)
        if began is not None:
            self.finished_seconds += time.monotonic() - began

    def spent_seconds(self) -> float:
        """This process's trial seconds, running trials included."""
        now = time.monotonic()
        return self.finished_seconds + sum(now - t for t in self.running.values())

    def over_seconds(self) -> bool:
        cap = self.caps.max_sandbox_seconds
        return cap is not None and self.spent_seconds() + self.others.get("seconds", 0.0) >= cap

    def must_cancel_running(self) -> bool:
        """True once a cap that cancels running trials is reached."""
        self.sync()
        if self.over_seconds():
            self.stopped = self.stopped or "max_sandbox_seconds"
            return True
        self.stopped = self.stopped or self._money_cap()
        return self.stopped in {"max_sandbox_seconds", "max_cost_usd", "max_tokens"}

    def document(self) -> dict[str, Any]:
        return {"caps": self.caps.model_dump(exclude_none=True),
                "spent": {"rollouts": self.started, "sandbox_seconds": round(self.spent_seconds(), 1),
                          **self.external_spent},
                "stopped": self.stopped is not None, "reason": self.stopped,
                "cancelled": sorted(self.cancelled), "not_started": sorted(self.not_started)}
