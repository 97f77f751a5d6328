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

from .run_options import ALLOW_TASK_ENV_HELP

regrade_cmd = typer.Typer(add_completion=False)

HELP = """Re-run the task's current verifier on each trial's frozen workspace.

The new score is written beside the original (regrade.json in each trial, regrade-summary.json in PATH); \
result.json is never changed. Trials whose workspace was not frozen (--freeze-workspace) are listed as not \
regradable.

Exit codes: 0 when at least one trial was regraded and none errored; 1 when no trial could be regraded or a \
regrade ended without a score (sandbox, restore or verifier error); 2 for a bad PATH or flag; 130 on Ctrl-C \
(every sandbox is removed)."""


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


def _table(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("TRIAL", "TASK", "BEFORE", "AFTER", "STATUS", "NOTE"):
        table.add_column(column, overflow="fold")
    for row in summary["trials"]:
        table.add_row(row["trial"], row["task_name"], _reward(row["original_reward"]), _reward(row["reward"]),
                      row["status"].replace("_", " "), _note(row))
    console = Console(highlight=False, soft_wrap=True)
    if summary["trials"]:
        console.print(table)
    counts = summary["counts"]
    line = (f"Regraded {counts['regraded']} of {counts['trials']} trial(s): {counts['changed']} changed reward, "
            f"{counts['errored']} errored, {counts['not_regradable']} not regradable")
    if summary["not_regradable"]:
        line += " (" + ", ".join(f"{n} {code}" for code, n in sorted(summary["not_regradable"].items())) + ")"
    console.print(line)
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
) -> None:
    from benchflow.errors import ConfigError
    from benchflow.results.regrade import regrade as run_regrade
    from benchflow.tasks.task_env import check_names

    try:
        allowed = check_names(allow_task_env or [])
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    summary = run_regrade(path, tasks_dir=tasks_dir, sandbox=sandbox, concurrency=concurrency, reason=reason,
                          on_row=_progress, allow_task_env=allowed)
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
    else:
        _table(summary)
    raise typer.Exit(summary["exit_code"])
