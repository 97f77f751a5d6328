"""A trial as an ATIF trajectory (Agent Trajectory Interchange Format, ``ATIF-v1.8``, as Harbor 0.25 writes it).

One document per trial: ``agent`` (the agent's name, its model, the harness), one step per turn
(:mod:`.turns`): the prompt as a ``user`` step; each agent turn as an ``agent`` step with its message, its
reasoning, its tool calls (``function_name`` is the ACP tool kind, ``extra`` the call's title and status)
and their results as the step's ``observation``; the oracle's script as an agent step with
``llm_call_count: 0``; anything else (a timeout, a line that did not parse) as a ``system`` step.
``final_metrics`` carries the trial's token counts and cost (``result.json``'s ``agent_result``;
``total_prompt_tokens`` includes cache reads and writes, as ATIF counts them), and the root ``extra`` the
verifier's verdict and the trial's outcome. The trajectory has no per-step timestamps or token counts, so
the steps carry none.

The document is redacted as ``bench bundle`` redacts a JSON record (:func:`benchflow.util.redact.redact_obj`).
When Harbor's own models are importable (Python 3.12+ with ``harbor`` installed) the document is also
validated by them before it is written.
"""

from __future__ import annotations

from typing import Any

from benchflow.errors import JobFolderError
from benchflow.util.redact import redact_obj

from .source import TrialSource
from .turns import Turn

SCHEMA_VERSION = "ATIF-v1.8"


def _step(step_id: int, turn: Turn) -> dict[str, Any]:
    step: dict[str, Any] = {"step_id": step_id, "source": turn.source, "message": turn.message}
    if turn.source == "agent" and turn.reasoning:
        step["reasoning_content"] = turn.reasoning
    if turn.tools:
        step["tool_calls"] = [{"tool_call_id": t.id, "function_name": t.name, "arguments": t.arguments,
                               **({"extra": t.extra} if t.extra else {})} for t in turn.tools]
        results = [{"source_call_id": t.id, "content": t.output, **({"extra": {"failed": True}} if t.failed else {})}
                   for t in turn.tools if t.output is not None]
        if results:
            step["observation"] = {"results": results}
    if turn.model_calls is not None:
        step["llm_call_count"] = turn.model_calls
    if turn.extra:
        step["extra"] = turn.extra
    return step


def _final_metrics(trial: TrialSource, steps: int) -> dict[str, Any]:
    usage = trial.result.agent_result
    metrics: dict[str, Any] = {"total_steps": steps}
    if usage is None:
        return metrics
    inputs = [usage.n_input_tokens, usage.n_cache_read_tokens, usage.n_cache_creation_tokens]
    if usage.n_input_tokens is not None:
        metrics["total_prompt_tokens"] = sum(n or 0 for n in inputs)
    if usage.n_output_tokens is not None:
        metrics["total_completion_tokens"] = usage.n_output_tokens
    if usage.n_cache_read_tokens is not None:
        metrics["total_cached_tokens"] = usage.n_cache_read_tokens
    if usage.cost_usd is not None:
        metrics["total_cost_usd"] = usage.cost_usd
    extra = {"cache_creation_tokens": usage.n_cache_creation_tokens, "usage_source": usage.usage_source,
             "price_source": usage.price_source, "cost_status": usage.cost_status}
    if extra := {k: v for k, v in extra.items() if v is not None}:
        metrics["extra"] = extra
    return metrics


def _outcome(trial: TrialSource) -> dict[str, Any]:
    result, summary = trial.result, trial.summary
    outcome = {"trial": trial.name, "task_name": summary.task_name, "task_digest": result.task_digest,
               "reward": summary.reward, "rewards": summary.rewards, "outcome": summary.outcome,
               "error": summary.error, "error_category": summary.error_category,
               "verifier_error": summary.verifier_error, "started_at": summary.started_at,
               "finished_at": summary.finished_at, "attempt": result.attempt, "seed": result.seed,
               "trajectory_source": result.trajectory_source, "partial_trajectory": result.partial_trajectory}
    return {k: v for k, v in outcome.items() if v is not None}


def trajectory(trial: TrialSource) -> dict[str, Any]:
    """The trial's ATIF document, redacted.

    Raises:
        JobFolderError: the trial has no trajectory events (ATIF needs at least one step).
    """
    if not trial.turns:
        raise JobFolderError(f"{trial.paths.root}: no trajectory events (trajectory/acp_trajectory.jsonl is "
                             "missing or empty); an ATIF trajectory needs at least one step")
    config = trial.config
    agent_extra = {"harness": config.harness_mode if config else None,
                   "reasoning_effort": config.reasoning_effort if config else None,
                   "benchflow_version": config.benchflow_version if config else None}
    # what was installed, as pinned; "unknown" for a record written before bench recorded it (and controls)
    agent: dict[str, Any] = {"name": trial.agent, "version": (config.agent_version if config else None) or "unknown"}
    if trial.model:
        agent["model_name"] = trial.model
    if agent_extra := {k: v for k, v in agent_extra.items() if v is not None}:
        agent["extra"] = agent_extra
    steps = [_step(i, turn) for i, turn in enumerate(trial.turns, 1)]
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "session_id": trial.name, "trajectory_id": trial.name,
        "agent": agent, "steps": steps, "final_metrics": _final_metrics(trial, len(steps)),
        "extra": {"benchflow": _outcome(trial)},
    }
    if trial.result.partial_trajectory:
        document["notes"] = "The agent was stopped before it finished: the trajectory is cut short."
    document = redact_obj(document)
    _validate_with_harbor(document)
    return document


def _validate_with_harbor(document: dict[str, Any]) -> None:
    """Harbor's own check, where Harbor is installed (it needs Python 3.12+); nothing otherwise."""
    try:
        from harbor.models.trajectories import Trajectory
    except ImportError:  # Harbor is optional: the test suite validates with it (scripts/setup.d/harbor-atif.sh)
        return
    Trajectory.model_validate(document)
