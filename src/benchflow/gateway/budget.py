"""Budgets: per-trial tokens/turns (enforced) and job cost/tokens (book-kept).

A trial's budget is checked when a model call *starts*: once its tokens
(input, cache included, plus output) reach ``token_budget``, or ``turn_budget``
calls have started, the next call is refused. A call in flight when the budget
runs out still completes, so a trial can pass its token budget by one call.

The job caps are only counted here: the run engine checks
:attr:`JobBudget.cap_reached` between trial starts and cancels running trials.
Both classes are updated from the gateway's thread and read from the
engine's, so every method takes the lock.
"""

from __future__ import annotations

import threading

TOKEN_BUDGET = "token_budget"
TURN_BUDGET = "turn_budget"
MAX_COST_USD = "max_cost_usd"
MAX_TOKENS = "max_tokens"


class TrialBudget:
    """Per-trial ``--token-budget`` / ``--turn-budget``."""

    def __init__(self, token_budget: int | None = None, turn_budget: int | None = None) -> None:
        self.token_budget = token_budget
        self.turn_budget = turn_budget
        self._lock = threading.Lock()
        self._tokens = 0
        self._turns_started = 0
        self._turns_done = 0
        self._refused: str | None = None

    def try_start(self) -> str | None:
        """Reserve a turn for a new call; returns the spent budget's name when refused."""
        with self._lock:
            reason = self._spent_locked(self._turns_started)
            if reason:
                self._refused = self._refused or reason
                return reason
            self._turns_started += 1
            return None

    def check(self) -> str | None:
        """Like :meth:`try_start` without taking a turn: for look-ups (token counts, model lists)."""
        with self._lock:
            reason = self._spent_locked(self._turns_started)
            if reason:
                self._refused = self._refused or reason
            return reason

    def finish(self, tokens: int) -> None:
        """Account a finished call that :meth:`try_start` admitted."""
        with self._lock:
            self._tokens += tokens
            self._turns_done += 1

    def _spent_locked(self, turns: int) -> str | None:
        if self.token_budget is not None and self._tokens >= self.token_budget:
            return TOKEN_BUDGET
        if self.turn_budget is not None and turns >= self.turn_budget:
            return TURN_BUDGET
        return None

    @property
    def exhausted(self) -> str | None:
        """``token_budget`` / ``turn_budget`` once spent (the next call is or was refused)."""
        with self._lock:
            return self._refused or self._spent_locked(self._turns_done)

    def describe(self, reason: str) -> str:
        """The message the agent sees when a call is refused."""
        if reason == TOKEN_BUDGET:
            return (f"BenchFlow: this trial's token budget is spent ({self._tokens} of {self.token_budget} tokens); "
                    "no further model calls are allowed. Stop and leave your work as it is.")
        return (f"BenchFlow: this trial's turn budget is spent ({self.turn_budget} model calls); "
                "no further model calls are allowed. Stop and leave your work as it is.")


class JobBudget:
    """Job-wide ``--max-cost-usd`` / ``--max-tokens`` bookkeeping over all trials."""

    def __init__(self, max_cost_usd: float | None = None, max_tokens: int | None = None) -> None:
        self.max_cost_usd = max_cost_usd
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._tokens = 0
        self._cost_usd = 0.0
        self._unpriced_calls = 0

    def add(self, tokens: int, cost_usd: float | None) -> None:
        with self._lock:
            self._tokens += tokens
            if cost_usd is not None:
                self._cost_usd += cost_usd
            elif tokens:
                self._unpriced_calls += 1

    def spent(self) -> dict[str, float | int]:
        """``tokens`` and ``cost_usd`` so far; ``unpriced_calls`` had tokens but no price."""
        with self._lock:
            return {"tokens": self._tokens, "cost_usd": round(self._cost_usd, 10),
                    "unpriced_calls": self._unpriced_calls}

    @property
    def cap_reached(self) -> str | None:
        """``max_cost_usd`` / ``max_tokens`` once the job spent that much."""
        with self._lock:
            if self.max_cost_usd is not None and self._cost_usd >= self.max_cost_usd:
                return MAX_COST_USD
            if self.max_tokens is not None and self._tokens >= self.max_tokens:
                return MAX_TOKENS
            return None
