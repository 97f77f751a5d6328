"""``bench review PATH``: grade finished rollouts against a rubric with reviewer rollouts."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from . import reviewer_flags as RF

review_cmd = typer.Typer(add_completion=False)

HELP = """Grade finished rollouts against a rubric with a reviewer agent.

Reviews run detached from the rollouts they grade: each review is an ordinary sandboxed rollout of a throwaway \
wrapper task, evidence is a read-only copy, and results land in review_report.json. The reviewed rollouts' \
rewards and result.json are never modified.

Exit codes: 0 when every review completed; 1 when a reviewer failed or gave an answer the rubric does not \
accept (kept in its report); 2 for a bad PATH, rubric, template or flag."""


def _reward(value: Any) -> str:
    return "-" if value is None else f"{value:g}"


def print_reviews(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("ROLLOUT", "REWARD", "QUALITY", "GATED", "DECISION"):
        table.add_column(column, overflow="fold")
    for row in summary["reviews"]:
        quality = "-" if row["raw_quality"] is None else f"{row['raw_quality']:.2f}"
        gated = "-" if row["gated_quality"] is None else f"{row['gated_quality']:.2f}"
        decision = row["decision"] or f"reviewer error: {row['error']}"
        table.add_row(row["trial"], _reward(row["reward"]), quality, gated, decision.replace("_", " "))
    console = Console(highlight=False, soft_wrap=True)
    console.print(table)
    counts = summary["counts"]
    console.print(f"Reviewed {counts['reviewed']}: {counts['completed']} completed, {counts['reviewer_error']} "
                  f"reviewer error(s); {counts['publishable']} publishable, {counts['presentable_with_revisions']} "
                  f"presentable with revisions, {counts['not_publishable']} not publishable")
    console.print(f"Reports: {summary['out_dir']}")


@review_cmd.command(help=HELP)
def review(
    path: Path = typer.Argument(..., help="A finished rollout directory, or a job directory of rollouts"),
    rubric: Optional[Path] = typer.Option(None, "--rubric", "-r", help=(
        "Rubric JSON file. Default: an admitted task copy's verifier/rubric.json (requires --tasks-root and "
        "verified digest), else the built-in default rubric.")),
    prompt: Optional[Path] = typer.Option(None, "--prompt", "-p", help=(
        "Custom reviewer instruction template (see benchflow.review.prompts)")),
    agent: str = typer.Option("opencode", "--agent", "-a", help="Reviewer agent harness"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help=(
        "Reviewer model (default: gemini/gemini-3.5-flash-lite with opencode, else the agent's registry default)")),
    sandbox: str = typer.Option("docker", "--sandbox", help=(
        "Sandbox: docker, remote-docker, daytona, modal, apple-container, or agentcore")),
    concurrency: int = typer.Option(4, "--concurrency", "-n", min=1, help="Max concurrent reviews"),
    passing: bool = typer.Option(False, "--passing", help="Only review passing rollouts (reward 1.0)"),
    failing: bool = typer.Option(False, "--failing", help="Only review failing rollouts"),
    timeout_sec: int = typer.Option(1800, "--timeout-sec", min=1, help="Reviewer agent timeout per rollout"),
    agent_env: Optional[list[str]] = typer.Option(None, "--agent-env", help=(
        "KEY=VALUE for the reviewer (repeatable)")),
    image: Optional[str] = typer.Option(None, "--image", help="Prebuilt sandbox image for reviewer rollouts"),
    tasks_root: Optional[Path] = typer.Option(None, "--tasks-root", help=(
        "Trusted directory holding the reviewed tasks. Required to include task definitions in evidence: a task "
        "path recorded inside a rollout is untrusted input and is never read directly. Without this, reviews use "
        "run records only.")),
    allow_open_network: bool = typer.Option(False, "--allow-open-network", help=(
        "Run reviewers WITHOUT the no-internet declaration. Required on backends that cannot enforce network "
        "isolation (e.g. agentcore); reviews there fail closed by default. The report records the relaxed "
        "posture.")),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", "-o", help=(
        "Review output directory (default: jobs/review-<ts>)")),
) -> None:
    from benchflow.review.runner import review as run_review
    from benchflow.review.settings import ReviewerSettings

    from .run import _kv

    settings = ReviewerSettings(agent=agent, model=model, sandbox=sandbox, concurrency=concurrency,
                                timeout_sec=timeout_sec, agent_env=_kv(agent_env, "--agent-env"), image=image,
                                open_network=allow_open_network)
    summary = run_review(path, settings, rubric_path=rubric, prompt_path=prompt, tasks_root=tasks_root,
                         out_dir=out_dir, passing=passing, failing=failing)
    print_reviews(summary)
    raise typer.Exit(summary["exit_code"])


score_cmd = typer.Typer(add_completion=False)

SCORE_HELP = """Retry a failed reviewer using the saved workspace and trajectory.

Each retry is a new revision in scoring/<attempt>.json, which result.json then names; the verifier's reward is \
never changed. Exit codes: 0 when the scoring completed (or had already completed); 1 when the reviewer failed \
again; 2 for a bad PATH, task root or flag."""


@score_cmd.command(help=SCORE_HELP)
def score(
    path: Path = typer.Argument(..., help="A saved task rollout directory"),
    tasks_root: Path = typer.Option(..., "--tasks-root", help="Trusted original task directory or collection"),
    force: bool = typer.Option(False, "--force", help="Create a new revision even if scoring already completed"),
    reviewer_agent: Optional[str] = RF.AGENT, reviewer_model: Optional[str] = RF.MODEL,
    reviewer_effort: Optional[str] = RF.EFFORT, reviewer_sandbox: Optional[str] = RF.SANDBOX,
    reviewer_timeout: Optional[int] = RF.TIMEOUT, reviewer_idle: Optional[str] = RF.IDLE,
    reviewer_storage: Optional[int] = RF.STORAGE, reviewer_memory: Optional[int] = RF.MEMORY,
    reviewer_setup: Optional[int] = RF.SETUP, reviewer_evidence: Optional[int] = RF.EVIDENCE,
    reviewer_concurrency: Optional[int] = RF.CONCURRENCY, reviewer_image: Optional[str] = RF.IMAGE,
    reviewer_agent_env: Optional[list[str]] = RF.AGENT_ENV, reviewer_open_network: bool = RF.OPEN_NETWORK,
) -> None:
    from benchflow.review.rescore import score as run_score

    changes = RF.reviewer_changes(
        agent=reviewer_agent, model=reviewer_model, effort=reviewer_effort, sandbox=reviewer_sandbox,
        timeout=reviewer_timeout, idle=reviewer_idle, storage=reviewer_storage, memory=reviewer_memory,
        setup=reviewer_setup, evidence=reviewer_evidence, concurrency=reviewer_concurrency, image=reviewer_image,
        agent_env=reviewer_agent_env, open_network=reviewer_open_network)
    outcome = run_score(path, tasks_root=tasks_root, force=force, changes=changes)
    revision = outcome["revision"]
    if outcome["status"] == "already_scored":
        typer.echo(f"{path.name}: scoring {revision['attempt']} already completed (rubric reward "
                   f"{_reward(revision['rubric_reward'])}); pass --force for a new revision")
    elif outcome["status"] == "completed":
        typer.echo(f"{path.name}: revision {revision['attempt']}: rubric reward {_reward(revision['rubric_reward'])}, "
                   f"{revision['decision'].replace('_', ' ')} (verifier reward {_reward(revision['verifier_reward'])})")
    else:
        error = revision.get("error") or {}
        typer.echo(f"{path.name}: revision {revision['attempt']}: reviewer error {error.get('category')}: "
                   f"{error.get('message')}")
    raise typer.Exit(outcome["exit_code"])
