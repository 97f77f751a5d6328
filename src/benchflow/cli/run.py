"""``bench run``, ``bench eval run`` and ``bench eval resume``: parse flags, call ``jobs.run``, print."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

import typer

from . import reviewer_flags as RF

H = "More options (shown by --help-all)"
ALLOW_TASK_ENV_HELP = ("Let tasks read this variable of your environment (a ${NAME} env value, or their "
                       "docker-compose.yaml); repeatable. A task reading an unnamed one is refused; "
                       "${NAME:-default} gets the default")


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


def _override(value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    import json

    import yaml

    from benchflow.errors import ConfigError

    text = Path(value[1:]).read_text() if value.startswith("@") else value
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
    bad = sorted(set(data) - {"agent", "sandbox", "metadata"})
    if bad:
        raise ConfigError(f"--config-override: only agent, sandbox and metadata may be patched, not {bad[0]}")
    return data


def execute(spec: Any, dry_run: bool) -> None:
    """Run (or plan) ``spec`` and exit with the run's code."""
    import json

    from benchflow.jobs.api import run
    from benchflow.jobs.plan import make_plan
    from benchflow.jobs.public import dispatch

    from .run_view import RunView, print_final

    if dry_run:
        from rich.console import Console

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
        for planned in plan.tasks:
            if planned.fit is not None:
                err.print(f"  task {planned.name}: {planned.fit.summary()}", markup=False)
        raise typer.Exit(0 if card.accepted else 1)
    def one(repeat: Any) -> Any:
        with RunView(quiet=repeat.quiet) as view:
            outcome = run(repeat, on_event=view)
        print_final(outcome)
        return outcome

    raise typer.Exit(dispatch(spec, one).exit_code)


run_cmd = typer.Typer()
eval_run_cmd = typer.Typer()


@run_cmd.command(help="Run an agent on tasks and score them; without -a, the oracle.\n\n"
                      "The oracle is the task's reference solution: no model and no key. Rerunning the same "
                      "command resumes its job. A run config (--config) is the whole run: its agent runs unless "
                      "-a names another, and flags win over its keys.")
@eval_run_cmd.command(help="Run an evaluation; single task or batch.")
def run_command(
    targets: Optional[list[str]] = typer.Argument(None, metavar="[TARGETS]...", help="A task folder or a folder of tasks; one per run"),
    agent: Optional[str] = typer.Option(None, "--agent", "-a", help="The agent: a name bench agents lists, or nop (does nothing) (default: oracle, the task's reference solution)"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="The model, in the agent's own naming"),
    effort: Optional[str] = typer.Option(None, "--effort", "--reasoning-effort", "-e", help="Reasoning effort, when the agent exposes one (low, medium, high, max, …)"),
    harness: Optional[str] = typer.Option(None, "--harness", help="How the agent runs: acp (default, its ACP adapter) or native (its own CLI in headless JSON mode; claude-agent-acp and codex-acp)"),
    agent_env: Optional[list[str]] = typer.Option(None, "--agent-env", "--env", help="Environment variable for the agent, KEY=VALUE (repeatable)"),
    task_skills: Optional[bool] = typer.Option(None, "--task-skills/--no-task-skills", help="Install the task's own skills (environment/skills) for the agent; left out by default, as in BenchFlow 0.8"),
    include: Optional[list[str]] = typer.Option(None, "--include", "-i", help="Only tasks whose names match: a name, or a glob pattern such as 'hard-*' (comma-separated or repeated)"),
    exclude: Optional[list[str]] = typer.Option(None, "--exclude", "-x", help="Skip tasks whose names match (same patterns as --include)"),
    limit: Optional[int] = typer.Option(None, "--limit", "--n-tasks", "-n", help="Run at most N tasks: the first N by name, or a seeded random sample with --sample-seed"),
    sandbox: Optional[str] = typer.Option(None, "--sandbox", "-s", help="Where trials run: docker, remote-docker or local (default: docker when an engine answers, else local)"),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", "-j", help="Trials running at a time (up to --warm-pool more are prepared ahead)"),
    warm_pool: Optional[int] = typer.Option(None, "--warm-pool", help="Sandboxes prepared ahead of their trial's turn, beyond the running ones (0 to --concurrency; default 1, or 0 at -j 1)"),
    jobs_dir: Optional[str] = typer.Option(None, "--jobs-dir", help="Where job folders go (default: jobs); a plain rerun resumes its latest job"),
    timeout_multiplier: Optional[float] = typer.Option(None, "--timeout-multiplier", help="Scale every task's agent timeout, e.g. 2.0"),
    idle_timeout: Optional[str] = typer.Option(None, "--agent-idle-timeout", "--idle-timeout", help="Abort a prompt when the agent is silent this long: seconds or 90s, 10m, 1h; 0 or none turns it off (default: 10m, 30m at effort xhigh or max)"),
    fail_under: Optional[float] = typer.Option(None, "--fail-under", help="Exit 1 when the pass rate over the planned tasks is below this (0 to 1)"),
    freeze_workspace: bool = typer.Option(False, "--freeze-workspace", "--save-outputs", help="Save each trial's final workspace before the verifier runs, so bench regrade can score it again"),
    extra_instruction: Optional[str] = typer.Option(None, "--extra-instruction", help="Text appended to every task's instruction"),
    verifier_sandbox: Optional[str] = typer.Option(None, "--verifier-sandbox", help="task or separate. separate runs every task's verifier in a fresh sandbox that gets only the workspace and declared artifacts; a task it cannot run there refuses the whole run before anything starts (default: task, each task's own choice)"),
    job_name: Optional[str] = typer.Option(None, "--job", "--job-name", help="Job name under --jobs-dir (an existing job is resumed)"),
    fresh: bool = typer.Option(False, "--fresh", help="Start a new job instead of resuming the latest one in --jobs-dir"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan as JSON and the run card on stderr, and run nothing; exits 1 when the run card would refuse the run."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only warnings, errors and the final score"),
    config: Optional[Path] = typer.Option(None, "--config", "--run-config", help="YAML run-config file (the whole run spec)"),
    keep_sandbox: Optional[str] = typer.Option(None, "--keep-sandbox", help="Keep a trial's sandbox: on-failure, always or never (default). bench sandbox attach <trial> opens a shell in it; bench sandbox release <trial> deletes it."),
    accept_deviations: Optional[str] = typer.Option(None, "--accept-deviations", help="Why this run differs from its task set's reference; kept in run-card.json."),
    max_cost_usd: Optional[float] = typer.Option(None, "--max-cost-usd", help="Job budget in USD, checked between starts, so a job can pass it by about one rollout's cost; at the cap running rollouts are cancelled. With --trials, each repeat has its own cap"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="Job budget in tokens, checked between starts like --max-cost-usd. With --trials, each repeat has its own cap"),
    trials: Optional[int] = typer.Option(None, "--trials", help="Run every task N times (pass@k); each repeat is a job of its own, in <jobs dir>/<agent>/trial-NN  [default: 1]"),
    help_all: bool = typer.Option(False, "--help-all", callback=_show_all, is_eager=True, expose_value=False, help="Show every flag, the run settings --help leaves out included"),
    tasks_dir: Optional[Path] = typer.Option(None, "--tasks-dir", hidden=True, help="Local tasks directory"),
    prompt: Optional[list[str]] = typer.Option(None, "--prompt", hidden=True, help="Prompt(s) to send (default: the task prompt: the task.md body, or instruction.md for older tasks); @instruction is the task prompt"),
    config_override: Optional[str] = typer.Option(None, "--config-override", hidden=True, help="Deep-merge a config patch into each task's resolved config for this run. Inline JSON/YAML/TOML or an @file ref, e.g. --config-override '{\"agent\":{\"timeout_sec\":120}}'; recorded by content hash for replay."),
    build_concurrency: Optional[int] = typer.Option(None, "--build-concurrency", hidden=True, help="Max concurrent docker image builds. Defaults to --concurrency."),
    max_sandbox_seconds: Optional[float] = typer.Option(None, "--max-sandbox-seconds", hidden=True, help="Job budget in trial wall-clock seconds, running trials included and re-checked as they run; at the cap running trials are cancelled"),
    max_rollouts: Optional[int] = typer.Option(None, "--max-rollouts", hidden=True, help="Job budget in rollouts started, retries included: at the cap no rollout starts and running ones finish"),
    token_budget: Optional[int] = typer.Option(None, "--token-budget", hidden=True, help="Per-trial budget in tokens (input, cached included, plus output): BenchFlow's model gateway refuses the next model call once it is spent, the agent is stopped and its work graded"),
    turn_budget: Optional[int] = typer.Option(None, "--turn-budget", hidden=True, help="Per-trial budget in turns, one turn being one model call through BenchFlow's model gateway; enforced like --token-budget"),
    restart_changed: bool = typer.Option(False, "--restart-changed", hidden=True, help="When the named job ran with other settings or task files, set those trials aside and run them again (default: refuse)"),
    fail_on: Optional[list[str]] = typer.Option(None, "--fail-on", hidden=True, help="Exit 1 when any trial ended this way: timeout, error, verifier-error (comma-separated or repeated)"),
    summary_out: Optional[Path] = typer.Option(None, "--summary-out", hidden=True, help="Write the run's benchflow.run-summary JSON (job dir, counts, gate) here"),
    sandbox_user: Optional[str] = typer.Option(None, "--sandbox-user", hidden=True, help="Sandbox user (null for root)  [default: agent]"),
    base_image_override: Optional[str] = typer.Option(None, "--base-image-override", hidden=True, help="Rewrite task Dockerfile FROM images on the runtime task copy."),
    ca_bundle: Optional[str] = typer.Option(None, "--ca-bundle", hidden=True, help="Trust this CA bundle (PEM) inside image builds and sandboxes, for TLS-intercepting proxies; 'host' uses this machine's bundle ($SSL_CERT_FILE or the system one)"),
    task_manifest_out: Optional[Path] = typer.Option(None, "--task-manifest-out", hidden=True, help="Write selected task-set manifest JSON"),
    run_config_out: Optional[Path] = typer.Option(None, "--run-config-out", hidden=True, help="Write redacted normalized run config JSON"),
    expected_tasks: Optional[int] = typer.Option(None, "--expected-tasks", hidden=True, help="Fail unless the selected task count matches"),
    retry_policy: Optional[str] = typer.Option(None, "--retry-policy", hidden=True, help="Retry policy: default or unscored-only  [default: default]"),
    retry_attempts: Optional[int] = typer.Option(None, "--retry-attempts", hidden=True, help="Retries per task after a retryable failure (overrides the default of 2)"),
    matrix: Optional[Path] = typer.Option(None, "--matrix", hidden=True, help="YAML file whose models: maps each alias to a model, or to {model, agent, agent_env}; {agent: oracle} for a control"),
    sample_seed: Optional[int] = typer.Option(None, "--sample-seed", hidden=True, help="Seed for the --n-tasks random sample"),
    fresh_install: bool = typer.Option(False, "--fresh-install", hidden=True, help="Install the agent in every trial instead of starting from its cached image layer (same as BENCHFLOW_FRESH_INSTALL=1)"),
    allow_cloud_metadata: bool = typer.Option(False, "--allow-cloud-metadata", help="Let the agent reach the cloud metadata endpoints under an open network (no block; each trial records the opt-out). Without it, or the task's allow_cloud_metadata = true, the agent starts only once the block is proven on"),
    capture_tokens: bool = typer.Option(False, "--capture-tokens", hidden=True, help="Ask OpenAI-compatible model servers (vLLM, SGLang) for token ids and logprobs and record them per call in llm_trajectory.jsonl (token_capture), for bench train; the agent does not see it (also BENCHFLOW_CAPTURE_TOKENS=1)"),
    host_login: bool = typer.Option(False, "--host-login", hidden=True, help="Copy this machine's subscription login (e.g. ~/.claude) into the sandbox for an agent with no API key; off by default, so no host credential enters a sandbox"),
    usage_tracking: Optional[str] = typer.Option(None, "--usage-tracking", hidden=True, help="Telemetry-enforcement policy: auto, required, or off. Every model call of a non-control agent goes through BenchFlow's model gateway (usage, cost and llm_trajectory.jsonl are always captured); required fails a trial whose calls carried no trusted usage."),
    allow_task_env: Optional[list[str]] = typer.Option(None, "--allow-task-env", hidden=True, help=ALLOW_TASK_ENV_HELP),
    separate_verifier: bool = typer.Option(False, "--separate-verifier", hidden=True, help="Run each verifier in a fresh sandbox built from the verifier image that receives only the frozen workspace, declared artifacts and /logs/artifacts, as if every task set [verifier].sandbox_mode = 'separate'."),
    separate_verifier_include: Optional[list[str]] = typer.Option(None, "--separate-verifier-include", hidden=True, help="A path outside the workspace that a separate verifier sandbox receives too, at the same path, for tasks whose agent writes graded files there (e.g. /root when the workspace is /app). Repeatable."),
    skills_dir: Optional[Path] = typer.Option(None, "--skills-dir", hidden=True, help="Skills directory to deploy"),
    skill_mode: Optional[str] = typer.Option(None, "--skill-mode", hidden=True, help="Skill mode: no-skill, with-skill, or self-gen  [default: no-skill]"),
    skill_creator_dir: Optional[Path] = typer.Option(None, "--skill-creator-dir", hidden=True, help="Path to skill-creator or a skills root containing it"),
    seeds: Optional[str] = typer.Option(None, "--seeds", hidden=True, help="Seeded rollouts: run every task once per seed, e.g. 0-4 or 0,3,7 (BENCHFLOW_SEED is set for the agent, the oracle and the verifier). summary.json gets pass@k and variance per task."),
    checkpoints: Optional[str] = typer.Option(None, "--checkpoints", hidden=True, help="Keep a sandbox snapshot after these prompts: every-prompt or prompt:N[,M]. Later bench branch --from-checkpoint <trial> forks from one. Needs a sandbox that can keep snapshots (docker); each is a full filesystem image."),
    checkpoint_keep: Optional[int] = typer.Option(None, "--checkpoint-keep", min=1, hidden=True, help="Keep at most this many checkpoints per trial (default 3, or a run config's checkpoint_keep); the oldest is deleted."),
    retry_from_checkpoint: Optional[str] = typer.Option(None, "--retry-from-checkpoint", hidden=True, help="on-failure, on-timeout, or both: when a trial fails or times out, fork one retry from its last --checkpoints snapshot, verified the same way. The trial's reward is kept; the retry's is reported next to it (result.json retry block, summary checkpoint_retries)."),
    retry_prompt: Optional[str] = typer.Option(None, "--retry-prompt", hidden=True, help="Prompt for the retry, replacing the prompts after the checkpoint (the default). '@instruction' is the task instruction, '@verifier_feedback' the failed trial's reward and verifier output tail."),
    retry_resume_session: bool = typer.Option(False, "--retry-resume-session", hidden=True, help="The retry resumes the failed trial's conversation at the checkpoint (ACP session/load; Claude Code) instead of a fresh session."),
    integrity: Optional[str] = typer.Option(None, "--integrity", help="off, audit (record what the agent did and check it against the task) or strict (audit, and the verifier in a separate sandbox). The verdict is in integrity/claim_verdict.json; rewards never change."),
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
    from benchflow.util.durations import parse_duration
    from benchflow.util.match import split_patterns

    idle = None
    if idle_timeout is not None:
        try:
            idle = parse_duration(idle_timeout) or 0.0  # 0 / none: the watchdog is off
        except ValueError as exc:
            raise ConfigError(f"--agent-idle-timeout: {exc}") from None
    flags = {
        "targets": targets, "agent": agent, "model": model, "reasoning_effort": effort, "harness": harness,
        "agent_env": _kv(agent_env, "--agent-env") or None, "allow_task_env": allow_task_env,
        "selection.include": split_patterns(include), "selection.exclude": split_patterns(exclude),
        "selection.limit": limit, "selection.sample_seed": sample_seed, "selection.expected_tasks": expected_tasks,
        "sandbox": sandbox, "concurrency": concurrency, "warm_pool": warm_pool, "jobs_dir": jobs_dir,
        "timeout_multiplier": timeout_multiplier, "agent_idle_timeout_sec": idle,
        "gates.fail_under": fail_under, "gates.fail_on": split_patterns(fail_on),
        "freeze_workspace": freeze_workspace, "extra_instruction": extra_instruction, "job_name": job_name,
        "fresh": fresh, "quiet": quiet, "keep_sandbox": keep_sandbox, "accept_deviations": accept_deviations,
        "trials": trials, "tasks_dir": str(tasks_dir) if tasks_dir else None, "prompts": prompt,
        "config_override": _override(config_override), "build_concurrency": build_concurrency,
        "budget.max_sandbox_seconds": max_sandbox_seconds, "budget.max_rollouts": max_rollouts,
        "budget.max_cost_usd": max_cost_usd, "budget.max_tokens": max_tokens,
        "budget.token_budget": token_budget, "budget.turn_budget": turn_budget,
        "restart_changed": restart_changed, "summary_out": str(summary_out) if summary_out else None,
        "base_image_override": base_image_override, "ca_bundle": ca_bundle,
        "task_manifest_out": str(task_manifest_out) if task_manifest_out else None,
        "run_config_out": str(run_config_out) if run_config_out else None,
        "retry.policy": retry_policy, "retry.attempts": retry_attempts,
        "matrix": str(matrix) if matrix else None, "seeds": seeds, "usage_tracking": usage_tracking,
        "fresh_install": fresh_install or os.environ.get("BENCHFLOW_FRESH_INSTALL") == "1",
        "host_login": host_login or None, "capture_tokens": capture_tokens or None, "allow_cloud_metadata": allow_cloud_metadata or None,
        "task_skills": task_skills, "skills_dir": str(skills_dir) if skills_dir else None,
        "skill_mode": skill_mode, "skill_creator_dir": str(skill_creator_dir) if skill_creator_dir else None,
        "verifier_sandbox": "separate" if separate_verifier else verifier_sandbox,
        "separate_verifier_include": separate_verifier_include,
        "checkpoints": checkpoints, "checkpoint_keep": checkpoint_keep,
        "retry_from_checkpoint": retry_from_checkpoint, "retry_prompt": retry_prompt,
        "retry_resume_session": retry_resume_session, "integrity": integrity,
        "reviewer": RF.reviewer_changes(
            agent=reviewer_agent, model=reviewer_model, effort=reviewer_effort, sandbox=reviewer_sandbox,
            timeout=reviewer_timeout, idle=reviewer_idle, storage=reviewer_storage, memory=reviewer_memory,
            setup=reviewer_setup, evidence=reviewer_evidence, concurrency=reviewer_concurrency,
            image=reviewer_image, agent_env=reviewer_agent_env, open_network=reviewer_open_network) or None,
    }
    from benchflow.jobs.config_file import build_run_spec

    spec = build_run_spec(config, fields=flags, source="bench run")
    if task_skills is False:  # an explicit --no-task-skills wins over a run config's task_skills
        spec = spec.model_copy(update={"task_skills": False})
    if sandbox_user is not None:
        spec = spec.model_copy(update={"sandbox_user": None if sandbox_user in {"null", "none", "root", ""} else sandbox_user})
    execute(spec, dry_run)


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
