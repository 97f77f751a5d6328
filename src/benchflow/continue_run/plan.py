"""From an original trial and the command's options to what the continuation runs.

The continuation runs the original's agent on the original's task, in a fresh sandbox of the same
backend, with the original's prompts, sandbox user, reasoning effort, idle timeout and (non-secret)
agent env; the live model is ``--model`` or the original's, the agent's wall-clock budget
``--timeout`` or the original's (``config_override`` ``agent.timeout_sec``, recorded in its
``config.json``). Everything that can be refused is refused here, before any sandbox starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError
from benchflow.jobs.layout import JobPaths
from benchflow.jobs.spec import Retry, RunSpec

from .source import SourceError, SourceTrial

PROXY_MODES = ("auto", "host", "sandbox")
REPLAY_API = "openai-completions"
"""The agent wire protocol a replay can answer (OpenHands'): OpenAI Chat Completions."""


@dataclass(frozen=True)
class ContinueOptions:
    """``bench eval continue`` / ``continue-batch``'s options."""

    tasks_dir: Path | None = None
    model: str | None = None
    timeout_sec: int | None = None
    output: Path | None = None
    strict_divergence: bool = False
    replay_only: bool = False
    proxy_mode: str = "auto"


def check_proxy_mode(mode: str) -> None:
    """``auto`` and ``host`` are what bench does; ``sandbox`` has nothing to place.

    The replay is a mode of the job's model gateway, which runs on this machine and which every
    sandbox reaches through its model bridge (a mounted socket, or the sandbox's exec stream on
    Daytona, Modal and other remote backends), so the replay needs no proxy inside the sandbox.

    Raises:
        ConfigError: an unknown mode, or ``sandbox``.
    """
    if mode not in PROXY_MODES:
        raise ConfigError(f"--proxy-mode {mode!r}: use auto or host")
    if mode == "sandbox":
        raise ConfigError("--proxy-mode sandbox: bench replays in its model gateway on this machine, which every "
                          "sandbox (Daytona and Modal too) reaches through its model bridge, so there is no proxy "
                          "to place in the sandbox; use auto or host")


@dataclass
class Continuation:
    """One planned continuation."""

    source: SourceTrial
    run_spec: RunSpec
    plan: Any
    """The ``jobs.plan.Plan`` of the one task (backend, fit, run card)."""
    planned: Any
    """Its ``PlannedTask``."""
    agent: Any
    job: JobPaths
    """The output job folder the continued trial goes in."""
    prompts: list[str]
    live_model: str | None
    """None with ``--replay-only``."""
    upstreams: Any = None
    """A replay-only route's providers (the recording's, without a key: nothing is forwarded); None: the job's."""
    notes: list[str] = field(default_factory=list)
    """What the user should know before it runs (not a timeout, the task changed since)."""


def task_folder(source: SourceTrial, tasks_dir: Path | None) -> Path:
    """``--tasks-dir/<task>`` (or ``--tasks-dir`` itself when it is that task), else the recorded ``task_path``.

    Raises:
        SourceError: neither holds the task.
    """
    name = source.task_name
    if tasks_dir is not None:
        tasks_dir = Path(tasks_dir).expanduser()
        for candidate in (tasks_dir / name, tasks_dir):
            if candidate.name == name and candidate.is_dir():
                return candidate.resolve()
        raise SourceError(f"--tasks-dir {tasks_dir}: no task folder {name} in it; give the folder holding the "
                          f"task {name} the trial {source.name} ran")
    recorded = Path(source.config.task_path or "").expanduser()
    if source.config.task_path and recorded.is_dir():
        return recorded.resolve()
    raise SourceError(f"{source.paths.config}: task_path {source.config.task_path!r} is not a folder here; give "
                      f"--tasks-dir, the folder holding the task {name}")


def output_job(trial: Path, output: Path | None) -> JobPaths:
    """Where the continuation of the trial folder ``trial`` goes: ``<output>/<original job name>``;
    ``--output`` defaults to ``<original job>/continued``."""
    job = Path(trial).parent
    jobs_dir = Path(output).expanduser() if output is not None else job / "continued"
    return JobPaths(jobs_dir.resolve() / (job.name or "continued"))


def _given_agent(source: SourceTrial) -> str | None:
    """The ``-a`` value the original's job recorded in its evaluation.json (a path to an agent file, maybe)."""
    from benchflow.records import Unreadable, read_json

    try:
        evaluation = read_json(JobPaths(source.paths.root.parent).evaluation)
    except Unreadable:
        return None
    given = ((evaluation or {}).get("run_config") or {}).get("agent") if isinstance(evaluation, dict) else None
    return given if isinstance(given, str) else None


def _agent(source: SourceTrial) -> tuple[Any, str]:
    """The original's agent (its registry name, else the ``-a`` its job recorded) and the spec that found it.

    Raises:
        SourceError: it cannot run here, is a control, or speaks an API a replay cannot answer.
    """
    from benchflow import agents

    harness = source.config.harness_mode or "acp"
    names = [name for name in dict.fromkeys([source.config.agent, _given_agent(source)]) if name]
    if not names:
        raise SourceError(f"{source.paths.config}: names no agent; the trial cannot be run again")
    failure: Exception | None = None
    for name in names:
        try:
            agent = agents.resolve(name, harness=harness)
        except ConfigError as exc:
            failure = failure or exc
            continue
        if agent.is_control:
            raise SourceError(f"{source.paths.config}: agent {name} is a control with no model calls; nothing to "
                              "replay")
        api = agent.config.gateway.api
        if api != REPLAY_API:
            raise SourceError(f"{source.paths.config}: agent {name} speaks {api}; replay answers OpenAI Chat "
                              "Completions calls only (OpenHands' API)")
        return agent, name
    raise SourceError(f"{source.paths.config}: agent {source.config.agent!r} cannot run here: {failure}")


def _keyless_upstreams(source: SourceTrial, model: str | None, env: dict[str, str]) -> Any:
    """The job's providers, plus (when none serves ``model``) the recording's provider without a key (OpenAI
    when the recording does not name one: its calls are Chat Completions): a replay-only route gives the
    agent its usual variables and never forwards a call."""
    from benchflow.gateway.upstream import Upstream, Upstreams, providers

    configured = Upstreams.from_env(env)
    if configured.for_model(model) is not None:
        return configured
    table = providers()
    provider = table[next((c.provider for c in source.calls if c.provider in table), "openai")]
    return Upstreams([*configured, Upstream(provider=provider, base_url=provider.default_base_url)])


def _run_spec(source: SourceTrial, task: Path, agent_spec: str, model: str | None, options: ContinueOptions,
              job: JobPaths) -> RunSpec:
    """The original's settings as a ``RunSpec`` of the one task.

    Raises:
        SourceError: a recorded setting no run accepts (naming the field of config.json).
    """
    from pydantic import ValidationError

    config = source.config
    timeout = options.timeout_sec if options.timeout_sec is not None else config.timeout_sec
    user = config.sandbox_user if "sandbox_user" in config.model_fields_set else "agent"
    try:
        return RunSpec(targets=[str(task)], agent=agent_spec, model=model, reasoning_effort=config.reasoning_effort,
                       harness=config.harness_mode or "acp", agent_env=dict(config.agent_env or {}),
                       sandbox=config.environment, sandbox_user=user, concurrency=1,
                       agent_idle_timeout_sec=config.agent_idle_timeout_sec,
                       base_image_override=config.base_image_override, jobs_dir=str(job.root.parent),
                       job_name=job.name, retry=Retry(attempts=0),
                       config_override={"agent": {"timeout_sec": timeout}} if timeout else None)
    except ValidationError as exc:
        error = exc.errors()[0]
        field_name = ".".join(str(p) for p in error["loc"]) or "(a setting)"
        raise SourceError(f"{source.paths.config}: {field_name}: {error['msg']}; the trial cannot be run again "
                          "with it") from None


def plan_continuation(source: SourceTrial, options: ContinueOptions) -> Continuation:
    """What continuing ``source`` runs, or why it cannot.

    Raises:
        SourceError: no task, an agent that cannot run here or whose calls cannot be replayed, no live model.
        ConfigError: a bad --proxy-mode, or no provider configured for the live model.
        RunRefused: the run card refuses (e.g. the original's sandbox does not work here).
    """
    from benchflow.jobs.api import RunRefused
    from benchflow.jobs.plan import make_plan

    check_proxy_mode(options.proxy_mode)
    task = task_folder(source, options.tasks_dir)
    agent, agent_spec = _agent(source)
    model = options.model or source.config.model
    live_model = None if options.replay_only else model
    if not options.replay_only and not live_model:
        raise SourceError(f"{source.paths.config}: the original recorded no model; give --model for the live "
                          "continuation, or --replay-only")
    job = output_job(source.paths.root, options.output)
    spec = _run_spec(source, task, agent_spec, model, options, job)
    env = {**os.environ, **spec.agent_env}
    upstreams = None
    if options.replay_only:
        upstreams = _keyless_upstreams(source, spec.model, env)
    else:
        from benchflow.gateway.upstream import Upstreams

        if Upstreams.from_env(env).for_model(live_model) is None:
            raise ConfigError(f"live model {live_model}: no model provider for it is configured here (its key or "
                              "base URL, e.g. OPENAI_API_KEY / OPENAI_BASE_URL); set one, give --model, or use "
                              "--replay-only")
    plan = make_plan(spec)
    if not plan.card.accepted:
        raise RunRefused("the run card refuses this continuation: " + "; ".join(plan.card.refusals[:5]))
    planned = plan.tasks[0]
    prompts = list(source.prompts) if source.prompts is not None else list(planned.prompts)
    own = _own_mode(plan, planned, agent, job, prompts)
    if own is not None:
        raise SourceError(f"task {planned.name} runs its trials in a mode of its own ({own}: its steps, scenes or "
                          "simulated user each have their own recording); a continuation replays one plain agent "
                          "session, so it cannot continue this trial")
    notes = []
    if not source.timed_out:
        notes.append(f"{source.name} ended with error_category {source.error_category!r}, not a timeout; "
                     "continuing it anyway")
    if source.config.task_digest and planned.digest != source.config.task_digest:
        notes.append(f"task {planned.name} changed since {source.name} ran ({source.config.task_digest} -> "
                     f"{planned.digest}): the replay may diverge")
    return Continuation(source=source, run_spec=spec, plan=plan, planned=planned, agent=agent, job=job,
                        prompts=prompts, live_model=live_model, upstreams=upstreams, notes=notes)


def _own_mode(plan: Any, planned: Any, agent: Any, job: JobPaths, prompts: list[str]) -> str | None:
    """The name of the feature mode the task's trials run in (``jobs.modes.trial_mode``), or None for the plain one."""
    from benchflow.jobs.extensions import hooks
    from benchflow.jobs.trial_request import TrialRequest

    probe = TrialRequest(task=planned.task, digest=planned.digest, prompts=prompts, job=job, spec=plan.spec,
                         agent=agent, backend=plan.backend, backend_name=plan.sandbox)
    for make in hooks(plan.spec, "trial_mode"):
        mode = make(probe, job.trial("probe"), prompts)
        if mode is not None:
            return type(mode).__name__
    return None
