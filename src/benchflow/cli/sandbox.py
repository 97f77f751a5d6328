"""``bench sandbox create|list|attach|release|cleanup``: sandboxes outside a run.

Each command parses its flags, calls one function of
:mod:`benchflow.sandbox.manage` or :mod:`benchflow.sandbox.orphans`, and
prints the result (``--json`` on stdout, notes on stderr).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import List, Optional

import typer

create_cmd = typer.Typer(add_completion=False)
list_cmd = typer.Typer(add_completion=False)
attach_cmd = typer.Typer(add_completion=False)
release_cmd = typer.Typer(add_completion=False)
cleanup_cmd = typer.Typer(add_completion=False)


@create_cmd.command(help="Create an environment from a task directory (does not start it).")
def create(
    task_dir: Path = typer.Argument(..., help="Task directory with task.md or task.toml + Dockerfile"),
    sandbox: str = typer.Option("docker", "--sandbox",
                                help="Sandbox: docker, remote-docker, podman, docker+runsc, apple-container, daytona or "
                                     "another backend that can keep sandboxes (daytona: set up, then stopped); "
                                     "modal, local and agentcore cannot make one without starting it and say why"),
) -> None:
    from benchflow.sandbox.manage import create_from_task_dir

    made = create_from_task_dir(task_dir, sandbox)
    if made.network_note:
        typer.echo(f"warning: {made.network_note}", err=True)
    typer.echo(f"{'Built' if made.built else 'Reused'} image {made.image}")
    typer.echo(f"Created {made.name} ({made.sandbox_id[:12]}) on {made.where or made.backend}, not started")
    typer.echo(f"Remove it with: bench sandbox cleanup --id {made.sandbox_id[:12]}")


def _age(epoch: float) -> str:
    if not epoch:
        return "-"  # not known (e.g. a cloud sandbox BenchFlow did not make)
    minutes = max(0, (time.time() - epoch) / 60)
    return f"{minutes:.0f}m" if minutes < 120 else f"{minutes / 60:.1f}h"


def _notes(notes: list[str], errors: list[str]) -> None:
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    for error in errors:
        typer.echo(f"error: {error}", err=True)


ALL_HELP = ("Every sandbox on the account, not only BENCHFLOW_DAYTONA_OWNER's: on Daytona the whole account, on "
            "Modal the whole environment (every app), those BenchFlow did not make too (marked, never cleaned "
            "up); other backends list only BenchFlow's, and a note says so")


@list_cmd.command(help="List sandboxes BenchFlow created (Docker containers, local sandboxes, cloud sandboxes; "
                       "on Daytona only BENCHFLOW_DAYTONA_OWNER's when it is set) and kept sandboxes "
                       "(kept-sandbox.json).")
def list_(
    everything: bool = typer.Option(False, "--all", help=ALL_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the sandboxes as JSON"),
    release_proof: Optional[List[Path]] = typer.Option(
        None, "--release-proof",
        help="Instead of the list, print a benchflow.assessment-release-proof.v1 document: each runtime a "
             "saved-attempt reference (or a trial folder) names, observed gone or not. Repeatable; exit 1 "
             "unless every runtime is gone (for bench assess release --proof)"),
) -> None:
    if release_proof:
        _print_release_proof(release_proof)
        return
    from benchflow.sandbox.orphans import scan

    found = scan(everything=everything)
    rows, errors = found.rows, found.errors
    _notes(found.notes, errors)
    if as_json:
        typer.echo(json.dumps([row.to_json() for row in rows], indent=2))
    elif not rows:
        typer.echo("No sandboxes." if everything else "No sandboxes made by BenchFlow.")
    else:
        _print_rows(rows, made_by=everything)
    if errors:
        raise typer.Exit(1)


def _print_rows(rows: list, *, made_by: bool) -> None:
    """The table of ``bench sandbox list``; ``made_by`` (``--all``): a column saying whose each one is."""
    from rich.table import Table

    from benchflow.cli.console import stdout_console

    table = Table(box=None, pad_edge=False)
    for column in ("NAME", "ID", "SANDBOX", "STATE", "OWNER", "JOB/TRIAL", "AGE", "KEPT",
                   *(("MADE BY",) if made_by else ())):
        table.add_column(column)
    for row in rows:
        where = "/".join(part for part in (row.job, row.trial) if part) or "-"
        whose = ("not BenchFlow" if row.foreign else f"BenchFlow ({row.account_owner})" if row.account_owner
                 else "BenchFlow")
        table.add_row(row.name, row.id[:12], row.sandbox, row.state, row.owner, where, _age(row.created),
                      "yes" if row.kept else "", *((whose,) if made_by else ()))
    stdout_console().print(table)


def _print_release_proof(paths: list[Path]) -> None:
    from benchflow.assess.attempt import runtimes_named_by
    from benchflow.sandbox.release_proof import all_absent, observe_release

    runtimes = [runtime for path in paths for runtime in runtimes_named_by(path)]
    proof = observe_release(runtimes)
    typer.echo(json.dumps(proof, indent=2))
    for observation in proof["observations"]:
        if observation["state"] != "absent":
            typer.echo(f"error: {observation['provider']}:{observation['runtime_id']} is {observation['state']}: "
                       f"{observation['detail']}", err=True)
    if not all_absent(proof):
        raise typer.Exit(1)


@attach_cmd.command(
    help="Open a root shell in a kept sandbox; with a command after --, run it there and exit with its status.",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def attach(
    trial: Path = typer.Argument(..., help="The trial folder of a run with --keep-sandbox, or its kept-sandbox.json"),
    command: Optional[List[str]] = typer.Argument(None, help="Command to run (after --)"),
) -> None:
    from benchflow.sandbox.manage import attach as attach_to

    raise typer.Exit(attach_to(trial, list(command or [])))


@release_cmd.command(help="Delete a sandbox kept with --keep-sandbox.")
def release(
    trial: Path = typer.Argument(..., help="The trial folder of a run with --keep-sandbox, or its kept-sandbox.json"),
) -> None:
    from benchflow.sandbox.manage import release as release_kept

    container = release_kept(trial)
    typer.echo(f"Released sandbox {container[:12]}")


def _label(entry: dict) -> str:
    if entry.get("kind") == "snapshot":
        return f"{entry['sandbox']} snapshot {entry['id']}"
    if entry["name"] == entry["id"]:
        return f"{entry['sandbox']} sandbox {entry['id']}"
    return f"{entry['name']} ({entry['id'][:12]})"


@cleanup_cmd.command(help="Clean up orphaned sandboxes and stale shared runtimes.")
def cleanup(
    dry_run: bool = typer.Option(False, "--dry-run", help="List sandboxes without deleting"),
    max_age: int = typer.Option(1440, "--max-age", min=0,
                                help="Delete sandboxes with no recorded owner older than N minutes "
                                     "(orphans of a dead run go whatever their age)"),
    everything: bool = typer.Option(False, "--all",
                                    help="Delete every BenchFlow sandbox, whatever its age, except one "
                                         "a live run still holds (a CI teardown step)"),
    ids: Optional[List[str]] = typer.Option(None, "--id",
                                            help="Delete this sandbox (id prefix or name; repeatable), "
                                                 "even when a live run holds it"),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON"),
) -> None:
    from benchflow.sandbox.orphans import cleanup as run_cleanup
    from benchflow.sandbox.orphans import scan

    found = scan()
    report = run_cleanup(found.found, max_age_sec=max_age * 60, everything=everything,
                         ids=list(ids or []), dry_run=dry_run)
    _notes(found.notes, [])
    report.errors[:0] = found.errors
    if as_json:
        typer.echo(json.dumps({"dry_run": report.dry_run, "removed": report.removed, "kept": report.kept,
                               "errors": report.errors, "unmatched_ids": report.unmatched_ids}, indent=2))
    else:
        verb = "Would remove" if dry_run else "Removed"
        for entry in report.removed:
            typer.echo(f"{verb} {_label(entry)}: {entry['reason']}")
        for entry in report.kept:
            typer.echo(f"Kept {_label(entry)}: {entry['reason']}")
        if not report.removed and not report.kept:
            typer.echo("Nothing to clean up.")
        for error in report.errors:
            typer.echo(f"error: {error}", err=True)
    for missing in report.unmatched_ids:
        typer.echo(f"error: --id {missing}: no BenchFlow sandbox has this id or name", err=True)
    if report.errors or report.unmatched_ids:
        raise typer.Exit(1)
