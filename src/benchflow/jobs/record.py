"""The per-trial records: ``config.json`` (what ran) and ``result.json`` (what came of it).

Field names follow the contracts (§3.2, §3.3) so job folders written by the
original BenchFlow and by this tool read the same. There is no top-level
``reward`` or ``status``: the outcome is derived from ``rewards`` and the
error fields.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from benchflow import __version__
from benchflow.util.redact import drop_secrets

if TYPE_CHECKING:
    from .trial import TrialRequest, _TrialState

SCHEMA_VERSION = 1


def comparable_settings(spec: Any, agent_name: str, digest: str, prompts: list[str]) -> dict[str, Any]:
    """The settings a finished trial must share with a resumed run to be reused (see jobs.job.CHANGE_KEYS)."""
    return {
        "task_digest": digest,
        "agent": agent_name,
        "model": spec.model,
        "reasoning_effort": spec.reasoning_effort,
        "sandbox_user": spec.sandbox_user,
        "agent_env": drop_secrets(spec.agent_env),
        "prompts_sha256": _digest_prompts(prompts),
        "timeout_multiplier": spec.timeout_multiplier,
        "extra_instruction": spec.extra_instruction,
        "config_override": spec.override_record(),
    }


def build_config(req: "TrialRequest", started_at: dt.datetime, prompts: list[str],
                 timeout_sec: float | None) -> dict[str, Any]:
    spec = req.spec
    return {
        "schema_version": SCHEMA_VERSION,
        "task_path": str(req.task.path),
        "task_name": req.task.name,
        **comparable_settings(spec, req.agent.name, req.digest, prompts),
        "harness_mode": spec.harness if not req.agent.is_control else None,
        "environment": req.backend_name,
        "base_image_override": spec.base_image_override,
        "timeout_sec": timeout_sec,
        "concurrency": spec.concurrency,
        "agent_idle_timeout_sec": spec.agent_idle_timeout_sec,
        "started_at": str(started_at),
        "attempt": req.attempt,
        "seed": req.seed,
        "benchflow_version": __version__,
    }


def _digest_prompts(prompts: list[str]) -> str:
    import hashlib
    import json

    return "sha256:" + hashlib.sha256(json.dumps(prompts).encode()).hexdigest()


def _usage(outcome: Any) -> dict[str, Any]:
    usage = dict(outcome.usage or {}) if outcome else {}
    base = {
        "n_tool_calls": outcome.n_tool_calls if outcome else 0,
        "n_skill_invocations": 0,
        "n_prompts": outcome.n_prompts if outcome else 0,
        "n_input_tokens": usage.get("n_input_tokens", 0),
        "n_output_tokens": usage.get("n_output_tokens", 0),
        "n_cache_read_tokens": usage.get("n_cache_read_tokens", 0),
        "n_cache_creation_tokens": usage.get("n_cache_creation_tokens", 0),
        "cost_usd": usage.get("cost_usd"),
        "usage_source": usage.get("usage_source", "unavailable"),
        "price_source": usage.get("price_source"),
        "cost_status": usage.get("cost_status", "unavailable"),
        "usage_details": usage.get("usage_details", {}),
    }
    base["total_tokens"] = (base["n_input_tokens"] + base["n_output_tokens"] + base["n_cache_read_tokens"]
                            + base["n_cache_creation_tokens"])
    return base


def _trajectory_summary(events: list[dict[str, Any]], source: str | None, partial: bool) -> dict[str, Any]:
    counts: dict[str, int] = {}
    statuses: dict[str, int] = {}
    for event in events:
        kind = str(event.get("type", "other"))
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "tool_call":
            status = str(event.get("status", "unknown"))
            statuses[status] = statuses.get(status, 0) + 1
    known = {"tool_call", "user_message", "agent_message", "agent_thought"}
    return {
        "steps": len(events),
        "tool_call_steps": counts.get("tool_call", 0),
        "user_message_steps": counts.get("user_message", 0),
        "agent_message_steps": counts.get("agent_message", 0),
        "agent_thought_steps": counts.get("agent_thought", 0),
        "other_steps": sum(n for k, n in counts.items() if k not in known),
        "event_type_counts": counts,
        "tool_call_status_counts": statuses,
        "partial_trajectory": partial,
        "trajectory_source": source,
    }


def build_result(req: "TrialRequest", name: str, started_at: dt.datetime, timing: dict[str, float],
                 state: "_TrialState", events: list[dict[str, Any]]) -> dict[str, Any]:
    outcome = state.outcome
    verifier = state.verifier
    rewards = verifier.rewards if verifier else None
    if rewards is None and outcome is not None and outcome.timed_out and not (verifier and verifier.error):
        rewards = {"reward": 0.0}  # a timeout with no verdict is a scored failure, not an error
    agent_result = _usage(outcome)
    source = outcome.trajectory_source if outcome else None
    partial = bool(outcome.partial_trajectory) if outcome else False
    return {
        "schema_version": SCHEMA_VERSION,
        "task_name": req.task.name,
        "rollout_name": name,
        "trial_name": name,
        "rewards": rewards,
        "agent": req.agent.name,
        "agent_name": req.agent.name,
        "model": req.spec.model,
        "n_tool_calls": agent_result["n_tool_calls"],
        "n_skill_invocations": 0,
        "n_prompts": agent_result["n_prompts"],
        "agent_result": agent_result,
        "final_metrics": {"total_prompt_tokens": agent_result["n_input_tokens"],
                          "total_completion_tokens": agent_result["n_output_tokens"],
                          "total_cached_tokens": agent_result["n_cache_read_tokens"],
                          "total_cost_usd": agent_result["cost_usd"]},
        "trajectory_summary": _trajectory_summary(events, source, partial),
        "error": state.error,
        "error_category": state.error_category,
        "verifier_error": verifier.error if verifier else None,
        "verifier_error_category": verifier.error_category if verifier else None,
        "export_error": None,
        "idle_timeout_info": outcome.idle_timeout_info if outcome else None,
        "agent_timeout_info": outcome.agent_timeout_info if outcome else None,
        "sandbox_startup_info": state.sandbox_startup_info,
        "transport_error_info": outcome.transport_error_info if outcome else None,
        "verifier_timeout_info": verifier.timeout_info if verifier else None,
        "api_error_info": state.api_error_info,
        "suspected_api_error_info": state.suspected_api_error_info,
        "budget_stop": state.budget_stop,
        "partial_trajectory": partial,
        "trajectory_source": source,
        "started_at": str(started_at),
        "finished_at": str(dt.datetime.now()),
        "timing": {k: round(v, 1) for k, v in timing.items()},
        "task_digest": req.digest,
        "sandbox_id": state.sandbox_id,
        "environment": req.backend_name,
        "attempt": req.attempt,
        "seed": req.seed,
        "verifier_warnings": verifier.warnings if verifier else [],
    }
