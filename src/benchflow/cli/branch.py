"""``bench branch`` / ``bench eval branch`` and ``bench eval branches``: parse flags, call the library, print."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from .run_options import CaBundle

BRANCH_HELP = (
    "Fork an agent run at a checkpoint into labelled children.\n\n"
    "Each task runs once up to the checkpoint; the sandbox (and, when asked, declared environment state) is "
    "snapshotted; every --child starts from that snapshot with a fresh agent session (child prompts must stand "
    "alone unless --resume-session reloads the parent's conversation) and is scored by the task's verifier. "
    "The job folder has the usual layout plus, per trial, tree.json and "
    "branches/<fork>/children/<node>/observation.json. Rerunning the same command finishes its unfinished "
    "children. Exit codes: 0 every child scored; 1 some child has no verdict, or the run card refused; 2 bad "
    "flags or a sandbox without snapshots; 130 interrupted.")

branch_cmd = typer.Typer()
branches_cmd = typer.Typer()


@branch_cmd.command(help=BRANCH_HELP)
def branch_command(
    tasks_dir: Path = typer.Option(..., "--tasks-dir", help="A task directory, or a directory of tasks (run one after another)."),
    agent: Optional[str] = typer.Option(None, "--agent", help="Agent name, or 'oracle' (children run the task's solve.sh). Default: the checkpoint's agent with --from-checkpoint, else claude-agent-acp."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Model id for the agent, e.g. claude-haiku-5-5 (none for oracle and nop)"),
    reasoning_effort: Optional[str] = typer.Option(None, "--reasoning-effort", help="Agent reasoning effort (e.g. max)"),
    harness: Optional[str] = typer.Option(None, "--harness", help="How the agent runs: acp (default, its ACP adapter) or native (its own CLI in headless JSON mode; claude-agent-acp and codex-acp)"),
    sandbox: Optional[str] = typer.Option(None, "--sandbox", help="docker, or any sandbox with snapshots (local). Default: docker, or the checkpoint's provider."),
    prompt: Optional[list[str]] = typer.Option(None, "--prompt", help="Parent prompt; repeatable, sent in order. '@instruction' is the task's instruction. Default: the task's prompts."),
    checkpoint_after_prompt: Optional[int] = typer.Option(None, "--checkpoint-after-prompt", min=0, help="Branch after this many parent prompts (0: before the first). Default 1; 0 for the oracle and with --from-checkpoint."),
    child: Optional[list[str]] = typer.Option(None, "--child", help="One child, as label=NAME[,parent=LABEL][,prompt=TEXT|,prompt-file=PATH]; give at least two. prompt= takes the rest of the option (commas allowed). parent=LABEL forks this child from child LABEL's state after LABEL has run its prompts (a nested fork of at least two children). Without a prompt the child runs the parent's remaining prompts, or the task's prompts when the checkpoint is after the last one."),
    snapshot_layers: str = typer.Option("sandbox", "--snapshot-layers", help="What the checkpoint captures: sandbox (container filesystem), environment (declared database state, needs a manifest), or both."),
    parent: Optional[str] = typer.Option(None, "--parent", help="continue: restore the parent world after the children, send the remaining prompts and verify. discard: skip that restore (one fewer), leave the parent unverified. Default: continue, or discard with --from-checkpoint."),
    retain_snapshots: bool = typer.Option(False, "--retain-snapshots", help="Keep the checkpoint's sandbox snapshot so a later --from-checkpoint can branch from it again (otherwise deleted)."),
    from_checkpoint: Optional[Path] = typer.Option(None, "--from-checkpoint", help="A trial folder from an earlier bench branch --retain-snapshots run: branch again from its kept sandbox snapshot. Needs --tasks-dir holding the same task."),
    fork: Optional[str] = typer.Option(None, "--checkpoint", "--fork", help="With --from-checkpoint: a fork id from tree.json or an automatic checkpoint as prompt:N (default: the last kept fork, else the last kept checkpoint)."),
    checkpoints: Optional[str] = typer.Option(None, "--checkpoints", help="Also keep a sandbox snapshot after these parent prompts (every-prompt or prompt:N[,M]) for a later --from-checkpoint."),
    checkpoint_keep: int = typer.Option(3, "--checkpoint-keep", min=1, help="Keep at most this many --checkpoints per trial."),
    resume_session: bool = typer.Option(False, "--resume-session", help="Children resume the parent's agent conversation (ACP session/load) instead of starting fresh, so a child prompt can say 'continue'. Needs an agent that advertises loadSession and keeps its session on disk (Claude Code), and a checkpoint after prompt 1+."),
    child_retries: int = typer.Option(1, "--child-retries", min=0, help="Retry a child this many times when it failed before its agent did anything (a provider hiccup such as a connect timeout)."),
    stop_on_child_failure: bool = typer.Option(False, "--stop-on-child-failure", help="Stop a fork at the first child that fails for good (default: the other children still run and the fork is partial)."),
    concurrency: int = typer.Option(1, "--concurrency", min=1, help="Run up to this many children of a fork at once, each in its own sandbox created from the snapshot (implies --isolate-children)."),
    isolate_children: bool = typer.Option(False, "--isolate-children", help="Run each child in its own sandbox created from the snapshot instead of restoring the parent's sandbox between children. Implied by --concurrency > 1 and by nested children."),
    agent_env: Optional[list[str]] = typer.Option(None, "--agent-env", help="Agent env var (KEY=VALUE); repeatable"),
    include: Optional[list[str]] = typer.Option(None, "--include", help="Only these task names; repeatable"),
    jobs_dir: Path = typer.Option(Path("jobs"), "--jobs-dir", help="Output directory"),
    job_name: Optional[str] = typer.Option(None, "--job-name", help="Job folder name (default: branch-<time>)"),
    ca_bundle: CaBundle = None,
) -> None:
    from pydantic import ValidationError

    from benchflow.branch.spec import BranchSpec, BranchSpecError, parse_checkpoints, parse_child

    from .run import _kv

    if from_checkpoint is not None and agent is None:
        agent = _checkpoint_field(from_checkpoint, "agent")
    if from_checkpoint is not None and sandbox is None:
        sandbox = _checkpoint_field(from_checkpoint, "sandbox")
    choices = {"--snapshot-layers": (snapshot_layers, {"sandbox", "environment", "both"}),
               "--parent": (parent, {"continue", "discard", None}), "--harness": (harness, {"acp", "native", None})}
    for flag, (value, allowed) in choices.items():
        if value not in allowed:
            raise BranchSpecError(f"{flag} {value!r}: use one of {', '.join(sorted(a for a in allowed if a))}")
    try:
        spec = BranchSpec(
            tasks_dir=str(tasks_dir), agent=agent or "claude-agent-acp", model=model, reasoning_effort=reasoning_effort,
            harness=harness or "acp", sandbox=sandbox, prompts=list(prompt or []),
            checkpoint_after_prompt=checkpoint_after_prompt, children=[parse_child(c) for c in child or []],
            snapshot_layers=snapshot_layers, parent_mode=parent, retain_snapshots=retain_snapshots,
            from_checkpoint=str(from_checkpoint) if from_checkpoint else None, fork=fork,
            checkpoints=parse_checkpoints(checkpoints), checkpoint_keep=checkpoint_keep,
            resume_session=resume_session, child_retries=child_retries, stop_on_child_failure=stop_on_child_failure,
            concurrency=concurrency, isolate_children=isolate_children, agent_env=_kv(agent_env, "--agent-env"),
            include=list(include or []), jobs_dir=str(jobs_dir), job_name=job_name, ca_bundle=ca_bundle)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise BranchSpecError(f"--{'-'.join(str(p) for p in err['loc'])}: {err['msg']}") from None
    from benchflow.branch import run_branch
    from benchflow.branch.view import branch_view, error_line

    def show(event: dict) -> None:
        if event["type"] == "job_started":
            typer.echo(f"branch job {event['job_dir']} ({event['total']} task(s), agent {event['agent']}, "
                       f"sandbox {event['sandbox']})", err=True)
        elif event["type"] == "trial_finished":
            branch = event["result"].get("branch") or {}
            error = event["result"].get("error")
            why = "; " + error_line(error, event["result"].get("error_category")) if error else ""
            typer.echo(f"  {event['trial']}: {branch.get('finished', 0)}/{branch.get('children', 0)} children "
                       f"finished, best reward {branch.get('best_reward')}{why}", err=True)

    outcome = run_branch(spec, on_event=show)
    from benchflow.jobs.layout import TrialPaths

    for trial in outcome.trials:
        _print_view(branch_view(TrialPaths(trial)))
    typer.echo(f"job: {outcome.job_dir}")
    raise typer.Exit(outcome.exit_code)


def _checkpoint_field(folder: Path, key: str) -> str | None:
    from benchflow.records import read_json

    tree = read_json(folder / "tree.json") if folder.is_dir() else None
    return (tree or {}).get(key)


def _print_view(view: dict) -> None:
    from benchflow.branch.view import render_view

    typer.echo(render_view(view), nl=False)


@branches_cmd.command(help="Show every fork and child of a job's (or one trial's) branches: request, status, "
                           "reward, advantage, tokens, USD and sandbox-seconds. Exit 2 when PATH holds no "
                           "branched trial.")
def branches_command(
    path: Path = typer.Argument(..., help="A trial folder, a job folder, or a folder of jobs (--jobs-dir)."),
    as_json: bool = typer.Option(False, "--json", help="Print the benchflow.branch-view/1 documents (a JSON list, one per branched trial)."),
) -> None:
    from benchflow.branch.view import branch_views

    views = branch_views(path)
    if as_json:
        typer.echo(json.dumps(views, indent=2, allow_nan=False))
        return
    for view in views:
        _print_view(view)
