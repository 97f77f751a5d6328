"""Harbor's record shapes read as ours: the shape rules :mod:`.upgrade` applies to a Harbor job folder.

Harbor (``harbor`` 0.25, ``harbor.models``) writes a job folder of the same build as ours::

    <job>/config.json   JobConfig (exclude_defaults)      <job>/result.json   JobResult (no trial list)
    <job>/<task>__<7 chars>/config.json  TrialConfig     <job>/<task>__<7 chars>/result.json  TrialResult
                           agent/ verifier/ artifacts/ trial.log [exception.txt] [steps/<name>/]

Its names differ from ours; these rules rename them, each only where the record is Harbor's (a trial
result holds ``agent_info`` and ``trial_uri``; a trial config holds ``task``/``agent`` objects; a job
config holds an ``agents`` list), so a BenchFlow record never meets them:

* ``verifier_result.rewards`` is ``rewards``; a single reward not named ``reward`` is the reward (Harbor's
  metrics read a one-key map so);
* ``exception_info`` is ``error`` (``<type>: <message>``) with a category from the exception type, or a
  ``verifier_error`` when the verifier raised it and left no reward (as :data:`EXCEPTIONS` lists);
* the per-phase ``{started_at, finished_at}`` blocks are the ``timing`` seconds;
* ``agent_result`` counts input tokens *with* the cache reads (``n_cache_tokens``): ours without them,
  plus ``total_tokens``; a multi-step trial's are summed over its ``step_results`` as Harbor sums them;
* ``agent_info.name`` is the agent, ``config.agent.model_name`` (else ``<provider>/<model>``) the model.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

EXCEPTIONS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("VerifierTimeoutError",), ("verifier", "verifier_timeout")),
    **dict.fromkeys(("RewardFileNotFoundError", "RewardFileEmptyError", "VerifierOutputParseError"),
                    ("verifier", "verifier_failure")),
    **dict.fromkeys(("AddTestsDirError", "DownloadVerifierDirError"), ("verifier", "verifier_infra")),
    **dict.fromkeys(("AgentTimeoutError",), ("agent", "timeout")),
    **dict.fromkeys(("EnvironmentStartTimeoutError", "SandboxBuildFailedError", "HealthcheckError",
                     "SandboxLikelyOutOfMemoryError", "MemoryLimitExceededError"), ("agent", "sandbox_setup")),
    **dict.fromkeys(("AgentSetupTimeoutError",), ("agent", "install_failure")),
    **dict.fromkeys(("SSHAccessError", "GKEExecStreamClosedError", "GKEPodNotFoundError", "RuntimeRequestError",
                     "NetworkConnectionError", "ApiConnectionError", "APIConnectionError",
                     "ApiConnectionClosedError"), ("agent", "infra_failure")),
    **dict.fromkeys(("ApiRateLimitError", "RateLimitError"), ("agent", "provider_rate_limit")),
    **dict.fromkeys(("ApiUsageLimitError", "BudgetExceededError"), ("agent", "usage_limit")),
    **dict.fromkeys(("AgentAuthenticationError", "AuthenticationError", "PermissionDeniedError"),
                    ("agent", "provider_auth")),
    **dict.fromkeys(("BadRequestError", "UnprocessableEntityError", "UnsupportedParamsError",
                     "ModelNotFoundError", "NotFoundError", "ApiProviderResourceNotFoundError"),
                    ("agent", "provider_rejected")),
    **dict.fromkeys(("ApiError", "ApiInternalServerError", "ApiOverloadedError", "ApiResponseStalledError",
                     "UnknownApiError", "APIError", "InternalServerError", "ServiceUnavailableError", "Timeout",
                     "APIResponseValidationError"), ("agent", "api_error")),
}
"""Harbor's exception type (``exception_info.exception_type``, grouped as Harbor's ``error_policy``
groups them) -> which side failed and our category (contracts §3.11). Another type is an agent-side
error whose category the readers take from its words, as for any uncategorised error."""

_PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")


def is_trial_result(data: dict[str, Any]) -> bool:
    """A Harbor ``TrialResult`` (both fields are required there and never written by BenchFlow)."""
    return isinstance(data.get("agent_info"), dict) and "trial_uri" in data


def is_job_result(data: Any) -> bool:
    """A Harbor ``JobResult``: the job folder's ``result.json``, not a trial's."""
    return isinstance(data, dict) and "n_total_trials" in data and "stats" in data and "task_name" not in data


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _seconds(block: Any) -> float | None:
    if not isinstance(block, dict):
        return None
    return _span(block.get("started_at"), block.get("finished_at"))


def _span(start: Any, end: Any) -> float | None:
    try:
        return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 1)
    except (TypeError, ValueError):
        return None


def _tokens(contexts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Harbor's ``AgentContext`` (summed over steps) in our ``agent_result`` terms."""
    if not contexts:
        return None
    block: dict[str, Any] = dict(contexts[0]) if len(contexts) == 1 else {}
    totals: dict[str, Any] = {}
    for key in ("n_input_tokens", "n_cache_tokens", "n_output_tokens", "cost_usd"):
        values = [c[key] for c in contexts if _number(c.get(key))]
        totals[key] = sum(values) if values else None
    with_cache, cache, output = totals["n_input_tokens"], totals["n_cache_tokens"], totals["n_output_tokens"]
    block.pop("n_cache_tokens", None)
    block.update(
        n_input_tokens=with_cache - (cache or 0) if with_cache is not None else None,
        n_cache_read_tokens=cache, n_output_tokens=output, cost_usd=totals["cost_usd"],
        total_tokens=(with_cache or 0) + (output or 0) if with_cache is not None or output is not None else None,
    )
    return block


def _exception(data: dict[str, Any]) -> dict[str, Any] | None:
    """The trial's exception, else its first step's (Harbor's own order)."""
    if isinstance(data.get("exception_info"), dict):
        return data["exception_info"]
    for step in data.get("step_results") or []:
        if isinstance(step, dict) and isinstance(step.get("exception_info"), dict):
            return step["exception_info"]
    return None


def shape_trial_result(data: dict[str, Any]) -> None:
    """Harbor's ``TrialResult`` names -> ours, in place (only the fields the record lacks)."""
    verdict = data.get("verifier_result")
    rewards = verdict.get("rewards") if isinstance(verdict, dict) else None
    if isinstance(rewards, dict):
        if "reward" not in rewards and len(rewards) == 1:
            rewards = {"reward": next(iter(rewards.values())), **rewards}
        data.setdefault("rewards", rewards)
    info = data["agent_info"]
    data.setdefault("agent", info.get("name"))
    data.setdefault("agent_name", info.get("name"))
    data.setdefault("agent_version", info.get("version"))
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    agent = config.get("agent") if isinstance(config.get("agent"), dict) else {}
    model = info.get("model_info") if isinstance(info.get("model_info"), dict) else {}
    named = "/".join(p for p in (model.get("provider"), model.get("name")) if p) or None
    data.setdefault("model", agent.get("model_name") or named)
    environment = config.get("environment") if isinstance(config.get("environment"), dict) else {}
    data.setdefault("environment", environment.get("type") or "docker")
    steps = [s for s in data.get("step_results") or [] if isinstance(s, dict)]
    contexts = [data["agent_result"]] if isinstance(data.get("agent_result"), dict) else [
        s["agent_result"] for s in steps if isinstance(s.get("agent_result"), dict)]
    data["agent_result"] = _tokens(contexts)
    timing = {phase: _seconds(data.get(phase)) for phase in _PHASES}
    timing["total"] = _span(data.get("started_at"), data.get("finished_at"))
    data.setdefault("timing", {phase: value for phase, value in timing.items() if value is not None})
    exception = _exception(data)
    if exception is not None:
        kind = str(exception.get("exception_type") or "Exception")
        message = exception.get("exception_message")
        text = f"{kind}: {message}" if message else kind
        side, category = EXCEPTIONS.get(kind, ("agent", None))
        if side == "verifier" and data.get("rewards") is None:
            data.setdefault("verifier_error", text)
            data.setdefault("verifier_error_category", category)
        else:
            data.setdefault("error", text)
            data.setdefault("error_category", category if side == "agent" else None)


def is_trial_config(data: dict[str, Any]) -> bool:
    """A Harbor ``TrialConfig``: its task and agent are objects (ours are names)."""
    return isinstance(data.get("task"), dict) or isinstance(data.get("agent"), dict)


def shape_trial_config(data: dict[str, Any]) -> None:
    """Harbor's ``TrialConfig`` -> ours: task path, agent and model names, the environment type."""
    task = data.pop("task", None)
    task = task if isinstance(task, dict) else {}
    path = task.get("path") or task.get("name")
    if isinstance(path, str) and path:
        data.setdefault("task_path", path)
    agent = data.pop("agent", None)
    agent = agent if isinstance(agent, dict) else {}
    data["agent"] = agent.get("name") or agent.get("import_path")
    data.setdefault("model", agent.get("model_name"))
    environment = data.pop("environment", None)
    environment = environment if isinstance(environment, dict) else {}
    data["environment"] = environment.get("type") or environment.get("import_path") or "docker"
    data["harbor"] = {"task": task, "agent": agent, "environment": environment}


def is_job_config(data: dict[str, Any]) -> bool:
    """A Harbor ``JobConfig`` (the job folder's ``config.json``)."""
    return isinstance(data.get("agents"), list) and "kind" not in data


def shape_job_config(data: dict[str, Any]) -> None:
    """Harbor's ``JobConfig`` as our ``evaluation.json``: who ran (the first agent) and the run config."""
    agents = [a for a in data["agents"] if isinstance(a, dict)]
    first = agents[0] if agents else {}
    agent = first.get("name") or first.get("import_path") or ("oracle" if not agents else None)
    environment = data.get("environment") if isinstance(data.get("environment"), dict) else {}
    data.setdefault("identity", {"agent": agent, "model": first.get("model_name")})
    data.setdefault("run_config", {
        "agent": agent, "model": first.get("model_name"), "sandbox": environment.get("type") or "docker",
        "concurrency": data.get("n_concurrent_trials", 4), "n_attempts": data.get("n_attempts", 1),
    })
