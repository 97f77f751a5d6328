"""``bench run``, ``bench eval run`` and ``bench eval resume``: parse flags, call ``jobs.run``, print."""

# No ``from __future__ import annotations`` here: Typer reads the type of each of ``bench run``'s
# 110 parameters at every run, and a string annotation costs it an eval each (~3 ms of CPU).
import os
from pathlib import Path
from typing import Any, Optional

import typer

from . import reviewer_flags as RF
from . import run_options as O


def _show_all(ctx: typer.Context, _param: Any, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    for param in ctx.command.params:
        param.hidden = False
    typer.echo(ctx.get_help())
    raise typer.Exit()


def _kv(values: list[str] | None, flag: str) -> dict[str, str]:
    from benchflow.errors import ConfigError

    out = {}
    for item in values or []:
        if "=" not in item or not item.split("=", 1)[0]:
            raise ConfigError(f"{flag} {item!r}: give KEY=VALUE")
        key, value = item.split("=", 1)
        out[key] = value
    return out


def _source_env_flags(env: Optional[str], version: Optional[str], args: Optional[list[str]],
                      examples: Optional[int], rollouts: Optional[int], max_tokens: Optional[int],
                      temperature: Optional[float], sampling: Optional[list[str]], verifiers: Optional[str],
                      base_url: Optional[str], key_var: Optional[str]) -> dict[str, Any]:
    """The ``--source-env*`` flags as RunSpec fields (``KEY=VALUE`` values read as JSON when they parse)."""
    parsed: dict[str, Any] = {}
    if args or sampling:
        from benchflow.hosted.ref import parse_settings

        parsed = {"source_env_args": parse_settings(args, "--source-env-arg") or None,
                  "source_env_sampling_args": parse_settings(sampling, "--source-env-sampling-arg") or None}
    return {"source_env": env, "source_env_version": version, **parsed, "source_env_num_examples": examples,
            "source_env_rollouts_per_example": rollouts, "source_env_max_tokens": max_tokens,
            "source_env_temperature": temperature, "source_env_verifiers_version": verifiers,
            "source_env_base_url": base_url, "source_env_api_key_var": key_var}


def _override(value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    import json

    import yaml

    from benchflow.errors import ConfigError

    try:
        text = Path(value[1:]).read_text() if value.startswith("@") else value
    except OSError as exc:
        raise ConfigError(f"--config-override {value}: cannot read it ({exc.strerror}); give an existing file "
                          "after @, or the patch inline") from None
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            import tomllib

            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError:
                raise ConfigError("--config-override: not JSON, YAML or TOML") from None
    if not isinstance(data, dict):
        raise ConfigError("--config-override: must be a mapping, e.g. '{\"agent\":{\"timeout_sec\":120}}'")
    return data


def execute(spec: Any, dry_run: bool, publish: Any = None) -> None:
    """Run (or plan) ``spec`` and exit with the run's code; ``publish`` (an hf PublishRequest) runs after each job."""
    import json

    from .run_view import RunView, print_final

    if dry_run and spec.source_env:
        from benchflow.hosted.dry_run import plan_document

        print(json.dumps(plan_document(spec), indent=2))
        raise typer.Exit(0)
    if dry_run:
        from rich.console import Console

        from benchflow.jobs.plan import make_plan

        plan = make_plan(spec, pull_images=False)
        print(json.dumps(plan.document(), indent=2))
        card = plan.card
        err = Console(stderr=True, highlight=False, soft_wrap=True)
        err.print(f"Run card: {'accept' if card.accepted else 'REFUSE'} — {len(plan.tasks)} task(s), "
                  f"agent {spec.agent}, sandbox {plan.sandbox} ({plan.sandbox_reason})", markup=False)
        for line in card.refusals:
            err.print(f"  refuse: {line}", markup=False)
        for line in card.warnings:
            err.print(f"  warning: {line}", markup=False)
        if card.deviations and spec.accept_deviations:
            err.print(f"  accepted deviations ({spec.accept_deviations}): {'; '.join(card.deviations)}", markup=False)
        for planned in plan.tasks:
            if planned.fit is not None:
                err.print(f"  task {planned.name}: {planned.fit.summary()}", markup=False)
        raise typer.Exit(0 if card.accepted else 1)
    def one(repeat: Any) -> Any:
        with RunView(quiet=repeat.quiet) as view:
            outcome = _through_daemon(repeat, view)
            if outcome is None:
                from benchflow.jobs.api import run

                outcome = run(repeat, on_event=view)
        print_final(outcome)
        if publish is not None:
            from .hf_tasks import report_publish

            report_publish(outcome.job_dir, publish)
        return outcome

    if spec.trials <= 1 and not spec.matrix:  # one job: the engine is imported only if it runs here
        raise typer.Exit(one(spec).exit_code)
    from benchflow.jobs.public import dispatch

    raise typer.Exit(dispatch(spec, one).exit_code)


def _through_daemon(spec: Any, view: Any) -> Any:
    """With ``BENCHFLOW_DAEMON=auto``, the outcome of ``spec`` run by this user's daemon (``bench daemon
    start``); None to run it in this process (no daemon, or a gone one, which it says in one line)."""
    if os.environ.get("BENCHFLOW_DAEMON", "").lower() != "auto" or spec.source_env:  # a hosted run: no sandbox
        return None
    from benchflow.daemon import client

    return client.run(spec, view)


run_cmd = typer.Typer()
eval_run_cmd = typer.Typer()


@run_cmd.command(help="Run an agent on tasks and score them; without -a, the oracle.\n\n"
                      "The oracle is the task's reference solution: no model and no key. Rerunning the same "
                      "command resumes its job. A run config (--config) is the whole run: its agent runs unless "
                      "-a names another, and flags win over its keys.")
@eval_run_cmd.command(help="Run an evaluation; single task or batch.")
def run_command(
    targets: Optional[list[str]] = typer.Argument(None, metavar="[TARGETS]...", help="A task folder, a folder of tasks, or a GitHub repository (org/repo, org/repo/path or org/repo/path@ref); one per run"),
    agent: O.Agent = None,
    model: O.Model = None,
    effort: O.Effort = None,
    harness: O.Harness = None,
    agent_env: O.AgentEnv = None,
    task_skills: O.TaskSkills = None,
    dataset: O.Dataset = None,
    registry: O.Registry = None,
    include: O.Include = None,
    exclude: O.Exclude = None,
    limit: O.Limit = None,
    sandbox: O.Sandbox = None,
    concurrency: O.Concurrency = None,
    warm_pool: O.WarmPool = None,
    jobs_dir: O.JobsDir = None,
    timeout_multiplier: O.TimeoutMultiplier = None,
    idle_timeout: O.IdleTimeout = None,
    fail_under: O.FailUnder = None,
    freeze_workspace: O.FreezeWorkspace = False,
    extra_instruction: O.ExtraInstruction = None,
    verifier_sandbox: O.VerifierSandbox = None,
    job_name: O.JobName = None,
    fresh: O.Fresh = False,
    dry_run: O.DryRun = False,
    quiet: O.Quiet = False,
    config: O.Config = None,
    keep_sandbox: O.KeepSandbox = None,
    sandbox_setup_timeout: O.SandboxSetupTimeout = None,
    accept_deviations: O.AcceptDeviations = None,
    max_cost_usd: O.MaxCostUsd = None,
    max_tokens: O.MaxTokens = None,
    trials: O.Trials = None,
    help_all: bool = typer.Option(False, "--help-all", callback=_show_all, is_eager=True, expose_value=False, help="Show every flag, the run settings --help leaves out included"),
    tasks_dir: O.TasksDir = None,
    source_repo: O.SourceRepo = None,
    source_path: O.SourcePath = None,
    source_ref: O.SourceRef = None,
    source_env: O.SourceEnv = None,
    source_env_version: O.SourceEnvVersion = None,
    source_env_arg: O.SourceEnvArg = None,
    source_env_num_examples: O.SourceEnvNumExamples = None,
    source_env_rollouts_per_example: O.SourceEnvRolloutsPerExample = None,
    source_env_max_tokens: O.SourceEnvMaxTokens = None,
    source_env_temperature: O.SourceEnvTemperature = None,
    source_env_sampling_arg: O.SourceEnvSamplingArg = None,
    source_env_verifiers_version: O.SourceEnvVerifiersVersion = None,
    source_env_base_url: O.SourceEnvBaseUrl = None,
    source_env_api_key_var: O.SourceEnvApiKeyVar = None,
    hub: O.Hub = None,
    ignore_bench_version: O.IgnoreBenchVersion = False,
    prompt: O.Prompt = None,
    config_override: O.ConfigOverride = None,
    build_concurrency: O.BuildConcurrency = None,
    worker_concurrency: O.WorkerConcurrency = None,
    worker_retries: O.WorkerRetries = None,
    worker_start_stagger_sec: O.WorkerStartStagger = None,
    executor: O.Executor = None,
    publish_hf: O.PublishHf = None,
    publish_bucket: O.PublishBucket = None,
    hf_prefix: O.HfPrefix = None,
    hf_public_read_check: O.HfPublicReadCheck = False,
    eval_results_model: O.EvalResultsModel = None,
    eval_results_dataset: O.EvalResultsDataset = None,
    eval_results_task: O.EvalResultsTask = None,
    max_sandbox_seconds: O.MaxSandboxSeconds = None,
    max_rollouts: O.MaxRollouts = None,
    token_budget: O.TokenBudget = None,
    turn_budget: O.TurnBudget = None,
    restart_changed: O.RestartChanged = False,
    fail_on: O.FailOn = None,
    summary_out: O.SummaryOut = None,
    sandbox_user: O.SandboxUser = None,
    base_image_override: O.BaseImageOverride = None,
    ca_bundle: O.CaBundle = None,
    task_manifest_out: O.TaskManifestOut = None,
    run_config_out: O.RunConfigOut = None,
    health_summary_out: O.HealthSummaryOut = None,
    canonicalize: O.Canonicalize = None,
    canonical_selection_out: O.CanonicalSelectionOut = None,
    canonical_jobs_dir: O.CanonicalJobsDir = None,
    expected_tasks: O.ExpectedTasks = None,
    retry_policy: O.RetryPolicy = None,
    retry_attempts: O.RetryAttempts = None,
    retry_concurrency: O.RetryConcurrency = None,
    matrix: O.Matrix = None,
    sample_seed: O.SampleSeed = None,
    fresh_install: O.FreshInstall = False,
    allow_cloud_metadata: O.AllowCloudMetadata = False,
    capture_tokens: O.CaptureTokens = False,
    host_login: O.HostLogin = False,
    usage_tracking: O.UsageTracking = None,
    allow_task_env: O.AllowTaskEnv = None,
    separate_verifier: O.SeparateVerifier = False,
    separate_verifier_include: O.SeparateVerifierInclude = None,
    skills_dir: O.SkillsDir = None,
    skill_mode: O.SkillMode = None,
    skill_creator_dir: O.SkillCreatorDir = None,
    seeds: O.Seeds = None,
    checkpoints: O.Checkpoints = None,
    checkpoint_keep: O.CheckpointKeep = None,
    retry_from_checkpoint: O.RetryFromCheckpoint = None,
    retry_prompt: O.RetryPrompt = None,
    retry_resume_session: O.RetryResumeSession = False,
    integrity: O.Integrity = None,
    self_gen_no_internet: O.SelfGenNoInternet = False,
    loop_strategy: O.LoopStrategy = None,
    environment_manifest: O.EnvironmentManifest = None,
    state: O.State = None,
    context_root: O.ContextRoot = None,
    codex_apps_policy: O.CodexAppsPolicy = None,
    reviewer_agent: Optional[str] = RF.hidden(RF.AGENT), reviewer_model: Optional[str] = RF.hidden(RF.MODEL),
    reviewer_effort: Optional[str] = RF.hidden(RF.EFFORT), reviewer_sandbox: Optional[str] = RF.hidden(RF.SANDBOX),
    reviewer_timeout: Optional[int] = RF.hidden(RF.TIMEOUT), reviewer_idle: Optional[str] = RF.hidden(RF.IDLE),
    reviewer_storage: Optional[int] = RF.hidden(RF.STORAGE), reviewer_memory: Optional[int] = RF.hidden(RF.MEMORY),
    reviewer_setup: Optional[int] = RF.hidden(RF.SETUP), reviewer_evidence: Optional[int] = RF.hidden(RF.EVIDENCE),
    reviewer_concurrency: Optional[int] = RF.hidden(RF.CONCURRENCY), reviewer_image: Optional[str] = RF.hidden(RF.IMAGE),
    reviewer_agent_env: Optional[list[str]] = RF.hidden(RF.AGENT_ENV),
    reviewer_open_network: bool = RF.hidden(RF.OPEN_NETWORK),
) -> None:
    from benchflow.errors import ConfigError
    from benchflow.jobs.spec import agent_user
    from benchflow.util.durations import parse_duration
    from benchflow.util.match import split_patterns

    idle = None
    if idle_timeout is not None:
        try:
            idle = parse_duration(idle_timeout) or 0.0  # 0 / none: the watchdog is off
        except ValueError as exc:
            raise ConfigError(f"--agent-idle-timeout: {exc}") from None
    flags = {
        "targets": targets, "dataset": dataset, "registry": registry, "hub": hub,
        "ignore_bench_version": ignore_bench_version, "source_repo": source_repo, "source_path": source_path,
        "source_ref": source_ref, **_source_env_flags(
            source_env, source_env_version, source_env_arg, source_env_num_examples, source_env_rollouts_per_example,
            source_env_max_tokens, source_env_temperature, source_env_sampling_arg, source_env_verifiers_version,
            source_env_base_url, source_env_api_key_var), "agent": agent, "model": model, "reasoning_effort": effort, "harness": harness,
        "agent_env": _kv(agent_env, "--agent-env") or None, "allow_task_env": allow_task_env,
        "selection.include": split_patterns(include), "selection.exclude": split_patterns(exclude),
        "selection.limit": limit, "selection.sample_seed": sample_seed, "selection.expected_tasks": expected_tasks,
        "sandbox": sandbox, "concurrency": concurrency, "warm_pool": warm_pool, "jobs_dir": jobs_dir,
        "timeout_multiplier": timeout_multiplier, "agent_idle_timeout_sec": idle,
        "gates.fail_under": fail_under, "gates.fail_on": split_patterns(fail_on),
        "freeze_workspace": freeze_workspace, "extra_instruction": extra_instruction, "job_name": job_name,
        "fresh": fresh, "quiet": quiet, "keep_sandbox": keep_sandbox,
        "sandbox_setup_timeout_sec": sandbox_setup_timeout, "accept_deviations": accept_deviations,
        "trials": trials, "tasks_dir": str(tasks_dir) if tasks_dir else None, "prompts": prompt,
        "config_override": _override(config_override), "build_concurrency": build_concurrency,
        "workers.concurrency": worker_concurrency, "workers.retries": worker_retries,
        "workers.start_stagger_sec": worker_start_stagger_sec, "executor": executor,
        "budget.max_sandbox_seconds": max_sandbox_seconds, "budget.max_rollouts": max_rollouts,
        "budget.max_cost_usd": max_cost_usd, "budget.max_tokens": max_tokens,
        "budget.token_budget": token_budget, "budget.turn_budget": turn_budget,
        "restart_changed": restart_changed, "summary_out": str(summary_out) if summary_out else None,
        "base_image_override": base_image_override, "ca_bundle": ca_bundle,
        "task_manifest_out": str(task_manifest_out) if task_manifest_out else None,
        "run_config_out": str(run_config_out) if run_config_out else None,
        "health_summary_out": str(health_summary_out) if health_summary_out else None,
        "canonicalize": canonicalize,
        "canonical_selection_out": str(canonical_selection_out) if canonical_selection_out else None,
        "canonical_jobs_dir": str(canonical_jobs_dir) if canonical_jobs_dir else None,
        "retry.policy": retry_policy, "retry.attempts": retry_attempts,
        "retry.concurrency": retry_concurrency,
        "matrix": str(matrix) if matrix else None, "seeds": seeds, "usage_tracking": usage_tracking,
        "fresh_install": fresh_install or os.environ.get("BENCHFLOW_FRESH_INSTALL") == "1",
        "host_login": host_login or None, "capture_tokens": capture_tokens or None, "allow_cloud_metadata": allow_cloud_metadata or None,
        "skills.task_skills": task_skills, "skills.dir": str(skills_dir) if skills_dir else None,
        "skills.mode": skill_mode, "skills.creator_dir": str(skill_creator_dir) if skill_creator_dir else None,
        "verifier.sandbox": "separate" if separate_verifier else verifier_sandbox,
        "verifier.include": separate_verifier_include,
        "checkpoints.after": checkpoints, "checkpoints.keep": checkpoint_keep,
        "checkpoints.retry": retry_from_checkpoint, "checkpoints.retry_prompt": retry_prompt,
        "checkpoints.retry_resume_session": retry_resume_session, "review.integrity": integrity,
        "sandbox_user": sandbox_user and agent_user(sandbox_user),
        "skills.no_internet": self_gen_no_internet, "loop_strategy": loop_strategy,
        "environment_manifest": environment_manifest, "state": state,
        "context_root": str(context_root) if context_root else None, "codex_apps_policy": codex_apps_policy,
        "review.reviewer": RF.reviewer_changes(
            agent=reviewer_agent, model=reviewer_model, effort=reviewer_effort, sandbox=reviewer_sandbox,
            timeout=reviewer_timeout, idle=reviewer_idle, storage=reviewer_storage, memory=reviewer_memory,
            setup=reviewer_setup, evidence=reviewer_evidence, concurrency=reviewer_concurrency,
            image=reviewer_image, agent_env=reviewer_agent_env, open_network=reviewer_open_network) or None,
    }
    from benchflow.jobs.config_file import build_run_spec

    spec = build_run_spec(config, fields=flags, source="bench run")
    if task_skills is False:  # an explicit --no-task-skills wins over a run config's task_skills
        spec = spec.model_copy(update={"skills": spec.skills.model_copy(update={"task_skills": False})})
    if sandbox_user is not None and agent_user(sandbox_user) is None:  # root: None, which fields take as "not given"
        spec = spec.model_copy(update={"sandbox_user": None})
    publish = None
    if any((publish_hf, hf_prefix, hf_public_read_check, eval_results_model, eval_results_dataset,
            eval_results_task, publish_bucket)):  # else nothing to check or publish: not imported
        from benchflow.hf.publish import publish_request

        publish = publish_request(publish_hf, prefix=hf_prefix, public_read_check=hf_public_read_check,
                                  eval_model=eval_results_model, eval_dataset=eval_results_dataset,
                                  eval_task=eval_results_task, bucket=publish_bucket)
    execute(spec, dry_run, publish)


resume_cmd = typer.Typer()


@resume_cmd.command(help="Finish an interrupted job from its folder: rerun only the unfinished tasks.\n\n"
                         "Reads the tasks directory and config the job recorded in evaluation.json (no agent_env "
                         "value that looks secret, so pass those again with --agent-env), then runs the tasks with "
                         "no finished result. A job that is still running is refused. Exit codes as for bench eval "
                         "run; 2 when the folder is not a job, or when its trials ran with other settings or task "
                         "files than this resume has (an --agent-env value, an edited task): --restart-changed runs "
                         "them again.")
def resume_command(
    job_dir: Path = typer.Argument(..., help="The job folder to finish"),
    agent_env: Optional[list[str]] = typer.Option(None, "--agent-env", help="KEY=VALUE for the agent (repeatable); values that look secret are never stored in the job"),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", help="Override the job's concurrency"),
    restart_changed: bool = typer.Option(False, "--restart-changed", help="When the job's trials ran with other settings or task files than this resume, set them aside in <job>/.set-aside/ and run them again (default: refuse)"),
) -> None:
    from benchflow.jobs.resume import resume_spec

    spec = resume_spec(job_dir, agent_env=_kv(agent_env, "--agent-env"), concurrency=concurrency,
                       restart_changed=restart_changed)
    execute(spec, dry_run=False)
