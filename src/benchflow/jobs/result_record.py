"""The one constructor of ``result.json`` (what came of a trial), from its phases' plain values.

Built into :class:`benchflow.records.trial.TrialResult` (contracts §3.3) and returned in its on-disk
form. There is no top-level ``reward`` or ``status``: the outcome is derived from ``rewards`` and the
error fields. Imported once the trial's sandbox is up (``jobs.ahead``): ``bench run`` builds the
result models while its first sandbox starts, not before.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from benchflow.agents.base import AgentOutcome
from benchflow.records.trial import AgentResult, FinalMetrics, TrajectorySummary, TrialResult, TrialTiming

if TYPE_CHECKING:  # the verifier is imported when it runs, after the sandbox has started
    from benchflow.verify.runner import VerifierOutcome


def _agent_result(outcome: AgentOutcome | None) -> AgentResult:
    usage = dict(outcome.usage or {}) if outcome else {}
    tokens = {key: usage.get(key, 0) for key in ("n_input_tokens", "n_output_tokens", "n_cache_read_tokens",
                                                  "n_cache_creation_tokens")}
    return AgentResult(
        n_tool_calls=outcome.n_tool_calls if outcome else 0, n_skill_invocations=0,
        n_prompts=outcome.n_prompts if outcome else 0, **tokens,
        cost_usd=usage.get("cost_usd"), usage_source=usage.get("usage_source", "unavailable"),
        price_source=usage.get("price_source"), cost_status=usage.get("cost_status", "unavailable"),
        usage_details=usage.get("usage_details", {}), total_tokens=sum(tokens.values()),
    )


def _trajectory_summary(events: list[dict[str, Any]], source: str | None, partial: bool) -> TrajectorySummary:
    counts: dict[str, int] = {}
    statuses: dict[str, int] = {}
    for event in events:
        kind = str(event.get("type", "other"))
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "tool_call":
            status = str(event.get("status", "unknown"))
            statuses[status] = statuses.get(status, 0) + 1
    known = {"tool_call", "user_message", "agent_message", "agent_thought"}
    return TrajectorySummary(
        steps=len(events), tool_call_steps=counts.get("tool_call", 0),
        user_message_steps=counts.get("user_message", 0), agent_message_steps=counts.get("agent_message", 0),
        agent_thought_steps=counts.get("agent_thought", 0),
        other_steps=sum(n for k, n in counts.items() if k not in known),
        event_type_counts=counts, tool_call_status_counts=statuses, partial_trajectory=partial,
        trajectory_source=source,
    )


def build_result(*, task_name: str, trial_name: str, agent: str, model: str | None, environment: str,
                 task_digest: str, attempt: int, seed: int | None, started_at: dt.datetime,
                 timing: dict[str, float], events: list[dict[str, Any]], outcome: AgentOutcome | None,
                 verifier: VerifierOutcome | None, error: str | None, error_category: str | None,
                 sandbox_id: str | None = None, sandbox_startup_info: dict[str, Any] | None = None,
                 api_error_info: dict[str, Any] | None = None,
                 suspected_api_error_info: dict[str, Any] | None = None,
                 budget_stop: str | None = None, copy_out_info: dict[str, Any] | None = None,
                 steps: list[dict[str, Any]] | None = None,
                 multi_step_reward_strategy: str | None = None) -> dict[str, Any]:
    """``result.json`` for one finished attempt: the agent phase's ``outcome`` (None when it never ran),
    the verifier's (None when it never ran), and the trial-level error, if any."""
    rewards = verifier.rewards if verifier else None
    if rewards is None and outcome is not None and outcome.timed_out and not (verifier and verifier.error):
        rewards = {"reward": 0.0}  # a timeout with no verdict is a scored failure, not an error
    agent_result = _agent_result(outcome)
    source = outcome.trajectory_source if outcome else None
    partial = bool(outcome.partial_trajectory) if outcome else False
    return TrialResult(
        task_name=task_name, rollout_name=trial_name, trial_name=trial_name, rewards=rewards,
        agent=agent, agent_name=agent, model=model,
        n_tool_calls=agent_result.n_tool_calls, n_skill_invocations=0, n_prompts=agent_result.n_prompts,
        agent_result=agent_result,
        final_metrics=FinalMetrics(total_prompt_tokens=agent_result.n_input_tokens,
                                   total_completion_tokens=agent_result.n_output_tokens,
                                   total_cached_tokens=agent_result.n_cache_read_tokens,
                                   total_cost_usd=agent_result.cost_usd),
        trajectory_summary=_trajectory_summary(events, source, partial),
        error=error, error_category=error_category,
        verifier_error=verifier.error if verifier else None,
        verifier_error_category=verifier.error_category if verifier else None,
        export_error=None,
        idle_timeout_info=outcome.idle_timeout_info if outcome else None,
        agent_timeout_info=outcome.agent_timeout_info if outcome else None,
        sandbox_startup_info=sandbox_startup_info,
        transport_error_info=outcome.transport_error_info if outcome else None,
        verifier_timeout_info=verifier.timeout_info if verifier else None,
        api_error_info=api_error_info, suspected_api_error_info=suspected_api_error_info,
        budget_stop=budget_stop, copy_out_info=copy_out_info or None, partial_trajectory=partial, trajectory_source=source,
        started_at=str(started_at), finished_at=str(dt.datetime.now()),
        timing=TrialTiming(**{k: round(v, 1) for k, v in timing.items()}),
        task_digest=task_digest, sandbox_id=sandbox_id, environment=environment, attempt=attempt, seed=seed,
        verifier_warnings=verifier.warnings if verifier else [],
        steps=steps, multi_step_reward_strategy=multi_step_reward_strategy,
    ).to_json()
