"""A job as an Inspect ``EvalLog`` (``inspect_ai.log``): one sample per finished trial.

Built with inspect_ai's own models, so it needs the ``inspect_ai`` package (not a dependency of BenchFlow:
its import alone loads some 1,400 modules); without it the export is refused with one line.

The log is one eval: the job's agent (``solver``) and model over its tasks (the dataset). Each trial is a
sample: ``id`` the task's name, ``epoch`` its n-th trial of that task in the job; ``input`` the first prompt;
``messages`` the conversation (:mod:`.turns`: prompts as user messages, the agent's turns as assistant
messages with their reasoning and tool calls, each tool result a tool message, other events system
messages); ``scores["reward"]`` the verifier's reward with the whole verdict as its metadata (an unscored
trial has no score); ``model_usage`` the trial's tokens and cost; ``error`` the trial's error when it has no
reward. The eval's ``results`` carry the mean reward and the pass rate over scored trials. Times are
recorded as local times without a zone; they are read as this machine's local time. Everything is redacted
as ``bench bundle`` redacts a JSON record before the models are built.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from benchflow.errors import UserError
from benchflow.util.redact import redact_obj

from .source import JobSource, TrialSource
from .turns import Turn

SCORER = "verifier"


def require_inspect() -> Any:
    """The ``inspect_ai.log`` module.

    Raises:
        UserError: inspect_ai is not installed (exit 2).
    """
    try:
        import inspect_ai.log as log
    except ImportError as exc:
        raise UserError("--format inspect needs the inspect_ai package: pip install inspect_ai") from exc
    return log


def _utc(local: str | None) -> str | None:
    if not local:
        return None
    try:
        return datetime.fromisoformat(local).astimezone(timezone.utc).isoformat()
    except ValueError:
        return None


def _messages(turns: list[Turn], model: str | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for turn in turns:
        if turn.source == "user":
            out.append({"role": "user", "content": turn.message})
        elif turn.source == "system":
            out.append({"role": "system", "content": turn.message})
        else:
            content: list[dict[str, Any]] = []
            if turn.reasoning:
                content.append({"type": "reasoning", "reasoning": turn.reasoning})
            content.append({"type": "text", "text": turn.message})
            out.append({"role": "assistant", "content": content, "model": model,
                        "tool_calls": [{"id": t.id, "function": t.name, "arguments": t.arguments,
                                        "type": "function"} for t in turn.tools] or None})
            for tool in turn.tools:
                if tool.output is None:
                    continue
                message: dict[str, Any] = {"role": "tool", "tool_call_id": tool.id, "function": tool.name,
                                           "content": tool.output}
                if tool.failed:
                    message["error"] = {"type": "unknown", "message": tool.output[-2000:] or "failed"}
                out.append(message)
    return out


def _usage(trial: TrialSource) -> dict[str, Any]:
    usage = trial.result.agent_result
    if usage is None or usage.n_input_tokens is None:
        return {}
    entry = {"input_tokens": usage.n_input_tokens, "output_tokens": usage.n_output_tokens or 0,
             "total_tokens": usage.total_tokens or 0, "input_tokens_cache_read": usage.n_cache_read_tokens,
             "input_tokens_cache_write": usage.n_cache_creation_tokens, "total_cost": usage.cost_usd}
    return {trial.model or "none": entry}


def _sample(trial: TrialSource, epoch: int) -> dict[str, Any]:
    summary, result = trial.summary, trial.result
    sample: dict[str, Any] = {
        "id": summary.task_name, "epoch": epoch, "input": trial.prompts[0] if trial.prompts else "",
        "target": "", "messages": _messages(trial.turns, trial.model), "model_usage": _usage(trial),
        "started_at": _utc(summary.started_at), "completed_at": _utc(summary.finished_at),
        "total_time": summary.duration_sec,
        "metadata": {k: v for k, v in {
            "trial": trial.name, "task_digest": result.task_digest, "agent": trial.agent,
            "outcome": summary.outcome, "error": summary.error, "error_category": summary.error_category,
            "verifier_error": summary.verifier_error, "attempt": result.attempt, "seed": result.seed,
        }.items() if v is not None},
    }
    if summary.reward is not None:
        sample["scores"] = {"reward": {"value": summary.reward, "metadata": summary.rewards}}
    elif summary.error or summary.verifier_error:
        sample["error"] = {"message": summary.error or summary.verifier_error, "traceback": "",
                           "traceback_ansi": ""}
    return sample


def _results(trials: list[TrialSource]) -> dict[str, Any]:
    rewards = [t.summary.reward for t in trials if t.summary.reward is not None]
    metrics = {}
    if rewards:
        mean = sum(rewards) / len(rewards)
        passed = sum(1 for r in rewards if math.isclose(r, 1.0)) / len(rewards)
        metrics = {"mean": {"name": "mean", "value": mean}, "accuracy": {"name": "accuracy", "value": passed}}
    return {"total_samples": len(trials), "completed_samples": len(trials),
            "scores": [{"name": "reward", "scorer": SCORER, "scored_samples": len(rewards),
                        "unscored_samples": len(trials) - len(rewards), "metrics": metrics}]}


def _epochs(trials: list[TrialSource]) -> list[tuple[TrialSource, int]]:
    seen: dict[str, int] = {}
    out = []
    for trial in sorted(trials, key=lambda t: (t.summary.started_at or "", t.name)):
        seen[trial.summary.task_name] = seen.get(trial.summary.task_name, 0) + 1
        out.append((trial, seen[trial.summary.task_name]))
    return out


def eval_log(source: JobSource) -> Any:
    """The job's ``EvalLog`` (redacted); ``location`` is left for the writer.

    Raises:
        UserError: inspect_ai is not installed.
    """
    log = require_inspect()
    from benchflow import __version__

    trials = source.trials
    first = trials[0] if trials else None
    samples = [_sample(trial, epoch) for trial, epoch in _epochs(trials)]
    evaluation = source.evaluation
    starts = sorted(s for s in (t.summary.started_at for t in trials) if s)
    ends = sorted(s for s in (t.summary.finished_at for t in trials) if s)
    created = ((evaluation.created_at if evaluation else None) or _utc(starts[0] if starts else None)
               or datetime.now(timezone.utc).isoformat())
    usage: dict[str, dict[str, Any]] = {}
    for trial in trials:
        for model, entry in _usage(trial).items():
            total = usage.setdefault(model, {})
            for key, value in entry.items():
                if value is not None:
                    total[key] = total.get(key, 0) + value
    settings = (evaluation.run_config if evaluation else None) or {}
    data = {
        "version": 2, "status": "success" if not source.left_out else "cancelled",
        "eval": {
            "created": created, "task": source.root.name,
            "task_id": source.root.name, "solver": first.agent if first else None,
            "dataset": {"name": (first.config.dataset_name if first and first.config else None)
                        or settings.get("tasks_dir"),
                        "samples": len(samples), "sample_ids": sorted({s["id"] for s in samples})},
            "model": (first.model if first else None) or "none", "config": {},
            "packages": {"benchflow": __version__},
            "metadata": {"benchflow": {"job": source.root.name, "left_out": source.left_out}},
            "scorers": [{"name": SCORER}],
        },
        "results": _results(trials),
        "stats": {"started_at": _utc(starts[0]) if starts else "", "completed_at": _utc(ends[-1]) if ends else "",
                  "model_usage": usage},
        "samples": samples,
    }
    return log.EvalLog.model_validate(redact_obj(data))
