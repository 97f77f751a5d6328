"""One trial's view of the gateway: its key, its URLs, its usage and budget.

A :class:`TrialRoute` is what :meth:`Gateway.register_trial` hands back. The
agent gets :meth:`TrialRoute.agent_env` (the provider variables it already
reads, pointing at the gateway, with the per-trial key); the run engine reads
:meth:`TrialRoute.usage` for ``agent_result`` and the failure blocks.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from benchflow.gateway import failures
from benchflow.gateway.budget import JobBudget, TrialBudget
from benchflow.gateway.pricing import Price
from benchflow.gateway.replay import Replay
from benchflow.gateway.upstream import Upstreams
from benchflow.gateway.usage import CallUsage

KEY_PREFIX = "sk-benchflow-"


def path_segment(trial_id: str) -> str:
    """A URL-safe path segment naming the trial (the id itself when already safe)."""
    if re.fullmatch(r"[A-Za-z0-9._-]{1,100}", trial_id) and trial_id not in (".", ".."):
        return trial_id
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", trial_id)[:60].strip(".-") or "trial"
    return f"{slug}-{hashlib.sha1(trial_id.encode()).hexdigest()[:8]}"


class TrialRoute:
    """A registered trial: key, URLs, usage counters and token/turn budget."""

    def __init__(self, trial_id: str, llm_trajectory_path: Path, upstreams: Upstreams, base_url: str,
                 token_budget: int | None = None, turn_budget: int | None = None, *,
                 meter: JobBudget | None = None, capture_tokens: bool = False, replay: Replay | None = None) -> None:
        self.trial_id = trial_id
        self.replay = replay
        """Answers this route's model calls from a recording first (``bench eval continue``), or None."""
        self.meter = meter if meter is not None else JobBudget()
        """The job budget this route's calls are counted in (its run's, when a gateway serves several)."""
        self.capture_tokens = capture_tokens
        """Ask OpenAI-compatible upstreams for token ids and logprobs on this route's calls."""
        self.segment = path_segment(trial_id)
        self.key = KEY_PREFIX + secrets.token_urlsafe(24)
        self.llm_trajectory_path = Path(llm_trajectory_path)
        self.budget = TrialBudget(token_budget, turn_budget)
        self._upstreams = upstreams
        self._base_url = base_url
        self._lock = threading.Lock()
        self._usage = CallUsage()
        self._n_requests = 0
        self._n_failed = 0
        self._n_refused = 0
        self._n_forbidden = 0
        self._n_lookups = 0
        self._n_with_usage = 0
        self._n_ok_without_usage = 0
        self._status_counts: Counter[str] = Counter()
        self._cost_usd = 0.0
        self._unpriced_models: set[str] = set()
        self._price_sources: set[str] = set()

    @property
    def upstreams(self) -> Upstreams:
        """The providers this route forwards to (the job's, unless it was registered with its own)."""
        return self._upstreams

    # --- what the agent gets ------------------------------------------------------
    def base_url(self, provider: str, gateway_url: str | None = None) -> str:
        """The URL standing for ``provider``'s base URL (``gateway_url`` overrides the gateway's own)."""
        upstream = self._upstreams.get(provider)
        mount = upstream.provider.mount if upstream else provider
        return f"{(gateway_url or self._base_url).rstrip('/')}/__benchflow/{self.segment}/{mount}"

    def agent_env(self, model: str | None = None, gateway_url: str | None = None) -> dict[str, str]:
        """Provider variables for the agent: every configured provider through the gateway.

        With ``model``, also ``BENCHFLOW_PROVIDER_{NAME,BASE_URL,API_KEY,MODEL,PROTOCOL}`` for
        the provider serving it, for agents whose registry entry maps those onto their own
        variables. ``gateway_url`` is the gateway as seen from inside the sandbox, when a
        bridge makes it look different from :attr:`Gateway.base_url`.
        """
        env: dict[str, str] = {}
        for upstream in self._upstreams:
            url = self.base_url(upstream.name, gateway_url)
            for var in upstream.provider.agent_url_env:
                env[var] = url
            for var in upstream.provider.agent_key_env:
                env[var] = self.key
        found = self._upstreams.for_model(model) if model else None
        if found:
            upstream, model_id = found
            provider_url = self.base_url(upstream.name, gateway_url) + upstream.provider.openai_path
            env.update({
                "BENCHFLOW_PROVIDER_NAME": upstream.name,
                "BENCHFLOW_PROVIDER_BASE_URL": provider_url,
                "BENCHFLOW_PROVIDER_API_KEY": self.key,
                "BENCHFLOW_PROVIDER_MODEL": model_id,
                "BENCHFLOW_PROVIDER_PROTOCOL": upstream.provider.protocol,
            })
        return env

    def key_matches(self, presented: str) -> bool:
        return hmac.compare_digest(presented.encode(), self.key.encode())

    # --- accounting (called by the server) ----------------------------------------
    def record_refusal(self) -> None:
        with self._lock:
            self._n_refused += 1

    def record_forbidden(self) -> None:
        """Count a request the gateway refused because it is not a model API call."""
        with self._lock:
            self._n_forbidden += 1

    def record_lookup(self) -> None:
        """Count a forwarded look-up (token count, model list): not a model call, no tokens."""
        with self._lock:
            self._n_lookups += 1

    def record_call(self, status: int, usage: CallUsage | None, price: Price | None, model: str | None) -> None:
        """Count one finished model call."""
        with self._lock:
            self._n_requests += 1
            self._status_counts[str(status)] += 1
            if status >= 400:
                self._n_failed += 1
            if usage is not None:
                self._n_with_usage += 1
                self._usage.add(usage)
                if price is not None and price.cost_usd is not None:
                    self._cost_usd += price.cost_usd
                    self._price_sources.add(price.price_source or "")
                elif usage.total:
                    self._unpriced_models.add(model or "unknown")
            elif status < 400:
                self._n_ok_without_usage += 1

    # --- what the engine reads ----------------------------------------------------
    @property
    def budget_exhausted(self) -> str | None:
        """``token_budget`` / ``turn_budget`` once spent, else None."""
        return self.budget.exhausted

    @property
    def stop_reason(self) -> str | None:
        """Why the trial's agent must stop now: its spent budget, or its replay's end (a replay-only cut
        point, a strict divergence); None while it may go on."""
        return self.budget.exhausted or (self.replay.stop_reason if self.replay is not None else None)

    def usage(self) -> dict[str, Any]:
        """The ``agent_result`` usage fields, plus request counts and ``usage_details``.

        ``cost_status`` is ``unpriced`` when a call's model has no price (cost None, never a
        guess), ``unavailable`` when no call reported usage or a successful one reported
        none (so any sum would be short), else ``priced``. ``n_requests`` counts model calls
        only; ``usage_details`` adds calls refused by the budget (``n_refused_requests``), requests
        refused as not a model API (``n_forbidden_requests``) and forwarded look-ups such as
        token counts and model lists (``n_lookup_requests``).
        """
        with self._lock:
            u = self._usage
            if self._unpriced_models:
                status = "unpriced"
            elif self._n_with_usage == 0 or self._n_ok_without_usage:
                status = "unavailable"
            else:
                status = "priced"
            return {
                "n_input_tokens": u.input_tokens,
                "n_output_tokens": u.output_tokens,
                "n_cache_read_tokens": u.cache_read_tokens,
                "n_cache_creation_tokens": u.cache_creation_tokens,
                "total_tokens": u.total,
                "cost_usd": round(self._cost_usd, 10) if status == "priced" else None,
                "usage_source": "provider_response" if self._n_with_usage else "unavailable",
                "price_source": ", ".join(sorted(self._price_sources)) or None,
                "cost_status": status,
                "n_requests": self._n_requests,
                "n_failed_requests": self._n_failed,
                "status_counts": dict(self._status_counts),
                "usage_details": {
                    "n_reasoning_tokens": u.reasoning_tokens,
                    "n_refused_requests": self._n_refused,
                    "n_forbidden_requests": self._n_forbidden,
                    "n_lookup_requests": self._n_lookups,
                    "n_requests_without_usage": self._n_ok_without_usage,
                    "unpriced_models": sorted(self._unpriced_models),
                    "priced_cost_usd": round(self._cost_usd, 10),
                },
            }

    def api_error_info(self) -> dict[str, Any] | None:
        """``api_error_info`` when every model call of the trial failed."""
        with self._lock:
            return failures.api_error_info(self._status_counts, self._n_requests, self._n_failed)

    def suspected_api_error_info(self, n_tool_calls: int) -> dict[str, Any] | None:
        """``suspected_api_error_info`` when the trial had no tokens and ``n_tool_calls`` is 0."""
        with self._lock:
            return failures.suspected_api_error_info(self._usage.total, n_tool_calls, self._n_requests, self._n_failed)
