"""``bench regrade PATH`` / ``bench eval regrade PATH``: score frozen workspaces again.

Parses the flags, calls :func:`benchflow.results.regrade.regrade` and prints
its summary (a table, or the ``regrade-summary.json`` document with
``--json``). One line per finished trial goes to stderr as it happens.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from . import reviewer_flags as rf
from .run_options import ALLOW_TASK_ENV_HELP

regrade_cmd = typer.Typer(add_completion=False)

HELP = """Re-run the task's current verifier on each trial's frozen workspace.

The new score is written beside the original (regrade.json in each trial, regrade-summary.json in PATH); \
result.json is never changed. Trials whose workspace was not frozen (--freeze-workspace) are listed as not \
regradable.

Exit codes: 0 when at least one trial was regraded and none errored; 1 when no trial could be regraded or a \
regrade ended without a score (sandbox, restore or verifier error, or with --review a reviewer error); 2 for a bad PATH or flag; 130 on Ctrl-C \
(every sandbox is removed)."""

REVIEW_HELP = ("Also rerun each trial's rubric review on its saved outputs, gated by the new test, and compare the "
               "combined score. The reviewer is the one the trial recorded, changed by --reviewer-*")


def _reward(value: Any) -> str:
    return "-" if value is None else f"{value:g}"


def _note(row: dict[str, Any]) -> str:
    if row["status"] == "not_regradable":
        return row["reason"]
    if row["status"] == "errored":
        return f"{row.get('verifier_error_category')}: {row.get('verifier_error')}"
    parts = ["changed" if row["changed"] else "same"]
    if row.get("verifier_changed"):
        parts.append("task changed since the run")
    return ", ".join(parts)


def _progress(row: dict[str, Any]) -> None:
    if row["status"] == "not_regradable":
        line = f"{row['trial']}: not regradable ({row['reason_code']})"
    else:
        line = f"{row['trial']}: {_reward(row['original_reward'])} -> {_reward(row['reward'])} ({row['status']})"
    typer.echo(line, err=True)


def _review_cell(review: dict[str, Any] | None) -> str:
    """``0.75 -> 0 (changed)``, ``reviewer_error (malformed_answer)``, ``skipped``."""
    if not review:
        return ""
    if review["status"] != "completed":
        return review["status"] + (f" ({review['error']})" if review.get("error") else "")
    before, after = review["before"]["rubric_reward"], review["after"]["rubric_reward"]
    return f"{_reward(before)} -> {_reward(after)} ({'changed' if review['changed'] else 'same'})"


def _table(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    reviewed = "review_changed" in summary["counts"]
    for column in ("TRIAL", "TASK", "BEFORE", "AFTER", "STATUS", "NOTE") + (("RUBRIC",) if reviewed else ()):
        table.add_column(column, overflow="fold")
    for row in summary["trials"]:
        table.add_row(row["trial"], row["task_name"], _reward(row["original_reward"]), _reward(row["reward"]),
                      row["status"].replace("_", " "), _note(row),
                      *((_review_cell(row.get("review")),) if reviewed else ()))
    console = Console(highlight=False, soft_wrap=True)
    if summary["trials"]:
        console.print(table)
    counts = summary["counts"]
    line = (f"Regraded {counts['regraded']} of {counts['trials']} trial(s): {counts['changed']} changed reward, "
            f"{counts['errored']} errored, {counts['not_regradable']} not regradable")
    if summary["not_regradable"]:
        line += " (" + ", ".join(f"{n} {code}" for code, n in sorted(summary["not_regradable"].items())) + ")"
    console.print(line)
    if reviewed:
        console.print(f"Reviewed {counts['reviewed']}: {counts['review_changed']} changed rubric reward, "
                      f"{counts['review_errored']} reviewer errors, {counts['review_skipped']} without a rubric")
    console.print(f"Summary: {Path(summary['path']) / 'regrade-summary.json'}")


@regrade_cmd.command(help=HELP)
def regrade(
    path: Path = typer.Argument(..., help="A job folder, or one trial folder inside it"),
    tasks_dir: Optional[Path] = typer.Option(None, "--tasks-dir", help="Folder of task folders (or one task "
                                             "folder) holding the changed verifiers. Default: the task path "
                                             "each trial recorded."),
    sandbox: Optional[str] = typer.Option(None, "--sandbox", help="Backend for the fresh sandboxes "
                                          "(default: as run)"),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="Trials regraded at once"),
    reason: Optional[str] = typer.Option(None, "--reason", help="Why the verifier changed; kept in each block"),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON"),
    allow_task_env: Optional[list[str]] = typer.Option(None, "--allow-task-env", help=ALLOW_TASK_ENV_HELP),
    review: bool = typer.Option(False, "--review", help=REVIEW_HELP),
    reviewer_agent: Optional[str] = rf.AGENT,
    reviewer_model: Optional[str] = rf.MODEL,
    reviewer_reasoning_effort: Optional[str] = rf.EFFORT,
    reviewer_sandbox: Optional[str] = rf.SANDBOX,
    reviewer_timeout_sec: Optional[int] = rf.TIMEOUT,
    reviewer_idle_timeout: Optional[str] = rf.IDLE,
    reviewer_storage_mb: Optional[int] = rf.STORAGE,
    reviewer_memory_mb: Optional[int] = rf.MEMORY,
    reviewer_setup_timeout: Optional[int] = rf.SETUP,
    reviewer_evidence_timeout: Optional[int] = rf.EVIDENCE,
    reviewer_concurrency: Optional[int] = rf.CONCURRENCY,
    reviewer_image: Optional[str] = rf.IMAGE,
    reviewer_agent_env: Optional[list[str]] = rf.AGENT_ENV,
    reviewer_open_network: bool = rf.OPEN_NETWORK,
) -> None:
    from benchflow.errors import ConfigError
    from benchflow.results.regrade import regrade as run_regrade
    from benchflow.tasks.task_env import check_names

    try:
        allowed = check_names(allow_task_env or [])
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    changes = rf.reviewer_changes(
        agent=reviewer_agent, model=reviewer_model, effort=reviewer_reasoning_effort, sandbox=reviewer_sandbox,
        timeout=reviewer_timeout_sec, idle=reviewer_idle_timeout, storage=reviewer_storage_mb,
        memory=reviewer_memory_mb, setup=reviewer_setup_timeout, evidence=reviewer_evidence_timeout,
        concurrency=reviewer_concurrency, image=reviewer_image, agent_env=reviewer_agent_env,
        open_network=reviewer_open_network)
    if changes and not review:
        raise ConfigError("--reviewer-* flags given without --review: they change the reviewer of --review; add "
                          "--review, or drop them")
    summary = run_regrade(path, tasks_dir=tasks_dir, sandbox=sandbox, concurrency=concurrency, reason=reason,
                          on_row=_progress, allow_task_env=allowed, review=changes if review else None)
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
    else:
        _table(summary)
    raise typer.Exit(summary["exit_code"])
