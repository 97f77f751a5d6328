"""Each vf-eval row as a trial folder of the job (contracts §3.1–3.4), and its Verifiers row kept as is.

A rollout of example ``i`` is a trial of task ``<env name>-ex<i>``; with M > 1 rollouts per example, rollout
``k`` is recorded with ``seed`` k, as ``--seeds`` records repeats, so every reader counts each one (pass@k over
them) instead of taking the newest trial of the task. A row's ``error`` makes the trial errored with no reward (an aborted rollout is
never a 0.0); its ``metrics`` are the rubric's items. The trial's conversation is in
``trajectory/acp_trajectory.jsonl`` (user and agent messages, tool calls) and, one call per assistant turn
rebuilt from the row's prompt and completion, in ``trajectory/llm_trajectory.jsonl`` (marked
``reconstructed_from: results.jsonl``), which ``bench train convert`` reads.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Any

from benchflow import __version__
from benchflow.categories import classify_error
from benchflow.jobs.layout import JobPaths, TrialPaths, trial_name
from benchflow.records.trial import AgentResult, FinalMetrics, TrajectorySummary, TrialResult, TrialTiming
from benchflow.records.trial_config import TrialConfig
from benchflow.util import atomic

AGENT = "verifiers"
ENVIRONMENT = "hosted"


@dataclass(frozen=True)
class RunFacts:
    """What every trial of one hosted run shares."""

    source: dict[str, Any]
    """config.json/result.json ``source``: type hosted_env, provider, env_id, version, hub, verifiers, args."""
    settings: dict[str, Any]
    """config.json ``hosted_env``: the rollout settings (no secret: the key variable's name only)."""
    model: str | None
    env_name: str
    env_version: str


def task_name(env_name: str, example_id: Any) -> str:
    return f"{env_name}-ex{example_id}"


def digest(facts: RunFacts, example_id: Any) -> str:
    """What resume compares: the environment, its installed version, the example and the settings."""
    text = json.dumps({"env": facts.source.get("env_id"), "version": facts.env_version, "example": example_id,
                       "settings": facts.settings}, sort_keys=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def write_trial(job: JobPaths, facts: RunFacts, row: dict[str, Any], rollout: int,
                seed: int | None) -> tuple[str, dict[str, Any]]:
    """The trial folder of one row (``seed``: the rollout's index when there are several); (task name, result)."""
    example = row.get("example_id")
    task = task_name(facts.env_name, example)
    paths = job.trial(trial_name(task, uuid.uuid4().hex[:8]))
    paths.trajectory_dir.mkdir(parents=True)
    timing = _timing(row.get("timing"))
    started = dt.datetime.fromtimestamp(timing.pop("_start")) if "_start" in timing else dt.datetime.now()
    prompts = [m["content"] for m in _messages(row.get("prompt")) if m.get("role") == "user"
               and isinstance(m.get("content"), str)]
    config = TrialConfig(
        task_path=f"hosted:{facts.source.get('env_id')}@{facts.env_version}", task_name=task,
        task_digest=digest(facts, example), source=facts.source, agent=AGENT, model=facts.model,
        environment=ENVIRONMENT, started_at=str(started), attempt=1, seed=seed, benchflow_version=__version__,
        prompts_sha256="sha256:" + hashlib.sha256(json.dumps(prompts).encode()).hexdigest(),
        hosted_env={**facts.settings, "example_id": example, "rollout": rollout},
    )
    atomic.write_json(paths.config, config.to_json())
    atomic.write_json(paths.prompts, prompts)
    events = _acp_events(row)
    atomic.write_jsonl(paths.acp_trajectory, events)
    atomic.write_jsonl(paths.llm_trajectory, _exchanges(row, facts.model))
    info = row.get("info") if isinstance(row.get("info"), dict) else {}
    kept = {**row, "info": {**info, "task_name": task, "rollout_name": paths.name, "agent": AGENT,
                            "model": facts.model, "rollout": rollout}}
    atomic.write_jsonl(paths.results_jsonl, [kept])
    result = _result(paths, task, facts, row, events, timing, started, seed)
    atomic.write_json(paths.timing, result["timing"])
    _write_rewards(paths, result.get("rewards"))
    atomic.write_json(paths.result, result)  # last: a trial folder with result.json is finished
    return task, result


def _messages(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return [m for m in value or [] if isinstance(m, dict)]


def _timing(raw: Any) -> dict[str, float]:
    """vf-eval's timing (spans in Unix seconds) as the phases of result.json's ``timing``."""
    raw = raw if isinstance(raw, dict) else {}

    def span(key: str) -> float:
        value = raw.get(key)
        value = value.get("duration") if isinstance(value, dict) else value
        return float(value) if isinstance(value, (int, float)) else 0.0

    out = {"agent_execution": span("generation"), "verifier": span("scoring"), "total": span("total")}
    if isinstance(raw.get("start_time"), (int, float)):
        out["_start"] = float(raw["start_time"])
    return out


def _error(row: dict[str, Any]) -> str | None:
    error = row.get("error")
    if not error:
        return None
    if isinstance(error, dict):  # verifiers' ErrorData: the chain's repr says the most (its messages)
        error = error.get("error_chain_repr") or error.get("error_chain_str") or error.get("message") or error
    return str(error)[:2000]


def _result(paths: TrialPaths, task: str, facts: RunFacts, row: dict[str, Any], events: list[dict[str, Any]],
            timing: dict[str, float], started: dt.datetime, seed: int | None) -> dict[str, Any]:
    error = _error(row)
    reward = row.get("reward")
    metrics = row.get("metrics") if isinstance(row.get("metrics"), dict) else {}
    rewards = None
    if error is None and isinstance(reward, (int, float)) and not isinstance(reward, bool):
        rewards = {"reward": float(reward),
                   "rubric": [{"name": name, "score": value} for name, value in sorted(metrics.items())
                              if isinstance(value, (int, float))]}
    usage = row.get("token_usage") if isinstance(row.get("token_usage"), dict) else {}
    n_in, n_out = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    tool_calls = sum(1 for e in events if e["type"] == "tool_call")
    agent_result = AgentResult(n_tool_calls=tool_calls, n_skill_invocations=0, n_prompts=1, n_input_tokens=n_in,
                               n_output_tokens=n_out, n_cache_read_tokens=0, n_cache_creation_tokens=0,
                               total_tokens=n_in + n_out, cost_usd=None,
                               usage_source="verifiers" if usage else "unavailable", price_source=None,
                               cost_status="unavailable", usage_details={})
    counts: dict[str, int] = {}
    for event in events:
        counts[event["type"]] = counts.get(event["type"], 0) + 1
    summary = TrajectorySummary(
        steps=len(events), tool_call_steps=counts.get("tool_call", 0),
        user_message_steps=counts.get("user_message", 0), agent_message_steps=counts.get("agent_message", 0),
        agent_thought_steps=0, other_steps=0, event_type_counts=counts,
        tool_call_status_counts={"completed": tool_calls} if tool_calls else {}, partial_trajectory=False,
        trajectory_source="hosted_env")
    return TrialResult(
        task_name=task, rollout_name=paths.name, trial_name=paths.name, rewards=rewards, agent=AGENT,
        agent_name=AGENT, model=facts.model, n_tool_calls=tool_calls, n_skill_invocations=0, n_prompts=1,
        agent_result=agent_result,
        final_metrics=FinalMetrics(total_prompt_tokens=n_in, total_completion_tokens=n_out, total_cached_tokens=0,
                                   total_cost_usd=None),
        trajectory_summary=summary, error=error, error_category=classify_error(error) if error else None,
        verifier_error=None, verifier_error_category=None, export_error=None, partial_trajectory=False,
        trajectory_source="hosted_env", started_at=str(started), finished_at=str(dt.datetime.now()),
        timing=TrialTiming(**{k: round(v, 1) for k, v in timing.items()}), task_digest=digest(facts, row.get("example_id")),
        environment=ENVIRONMENT, attempt=1, seed=seed, source=facts.source,
    ).to_json()


def _acp_events(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The rollout's conversation as ACP trajectory events (contracts §3.5)."""
    events: list[dict[str, Any]] = []
    for message in _messages(row.get("prompt")) + _messages(row.get("completion")):
        role, content = message.get("role"), message.get("content")
        text = content if isinstance(content, str) else json.dumps(content) if content else ""
        if role == "user" and text:
            events.append({"type": "user_message", "text": text})
        elif role == "assistant":
            if text:
                events.append({"type": "agent_message", "text": text})
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {} if isinstance(call, dict) else {}
                events.append({"type": "tool_call", "tool_call_id": call.get("id", "") if isinstance(call, dict) else "",
                               "kind": "other", "title": function.get("name", ""), "status": "completed",
                               "content": [{"type": "text", "text": str(function.get("arguments", ""))}]})
    return events


def _exchanges(row: dict[str, Any], model: str | None) -> list[dict[str, Any]]:
    """One chat-completions exchange per assistant message: the messages before it, and it as the answer."""
    history = _messages(row.get("prompt"))
    tools = row.get("tool_defs") or []
    out = []
    for index, message in enumerate(_messages(row.get("completion"))):
        if message.get("role") == "assistant":
            answer = {k: v for k, v in message.items() if v is not None}
            body: dict[str, Any] = {"model": model, "messages": list(history)}
            if tools:
                body["tools"] = tools
            out.append({"request": {"method": "POST", "path": "/v1/chat/completions", "headers": {}, "body": body},
                        "response": {"status_code": 200, "headers": {}, "body": {"model": model, "choices": [
                            {"index": 0, "message": answer,
                             "finish_reason": "tool_calls" if answer.get("tool_calls") else "stop"}]}},
                        "metadata": {"call_purpose": "hosted_env", "reconstructed_from": "results.jsonl",
                                     "completion_index": index}})
        history.append(message)
    return out


def _write_rewards(paths: TrialPaths, rewards: dict[str, Any] | None) -> None:
    if not rewards:
        return
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    rows = [{"ts": now, "type": "process", "source": "verifier_rubric", "value": item["score"], "tag": item["name"],
             "step_index": i, "space": "output", "granularity": "step", "meta": {"source": "verifiers"}}
            for i, item in enumerate(rewards.get("rubric") or [])]
    rows.append({"ts": now, "type": "terminal", "source": "verifier", "value": rewards.get("reward"), "tag": "reward",
                 "step_index": None, "space": "output", "granularity": "terminal", "meta": {"source": "verifiers"}})
    atomic.write_jsonl(paths.rewards, rows)
