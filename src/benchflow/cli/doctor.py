"""``bench doctor``: check this machine can run evals (see :mod:`benchflow.doctor`)."""

from __future__ import annotations

import json
from typing import List, Optional

import typer

doctor_cmd = typer.Typer(add_completion=False)

_MARK = {"ok": "ok", "warn": "warn", "fail": "FAIL", "skip": "skip"}


@doctor_cmd.command(help="Check this machine can run evals: Python/uv, sandbox, agent credentials, network.\n\n"
                         "Credentials are reported by name and source only; values are never printed. "
                         "Exits 1 when a required check fails.")
def doctor(
    sandbox: str = typer.Option("docker", "--sandbox",
                                help="Sandbox the checks treat as required: docker (default), remote-docker "
                                     "or local. The others are listed too."),
    offline: bool = typer.Option(False, "--offline", help="Skip network probes."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    agent_start: Optional[List[str]] = typer.Option(
        None, "--agent-start",
        help="Also install this agent in a fresh --sandbox and open its ACP connection without a prompt (no model "
             "call), to catch a broken install or login before a batch (repeatable)."),
    ca_bundle: Optional[str] = typer.Option(None, "--ca-bundle", help="With --agent-start: trust this CA bundle in the install build ('host' = this machine's)."),
) -> None:
    from benchflow.doctor import agent_start_check, run_doctor

    report = run_doctor(sandbox=sandbox, offline=offline)
    for name in dict.fromkeys(agent_start or []):  # one after another, each in a fresh sandbox
        report.checks.extend(agent_start_check(name, sandbox=sandbox, ca_bundle=ca_bundle))
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        from rich.table import Table

        from benchflow.cli.console import stdout_console

        table = Table(box=None, pad_edge=False)
        for column in ("CHECK", "", "STATUS", "DETAIL"):
            table.add_column(column, overflow="fold")
        for check in report.checks:
            name = f"{check.name} (required)" if check.required else check.name
            table.add_row(check.group, name, _MARK[check.status], check.detail)
        stdout_console().print(table)
        typer.echo("All required checks passed." if report.ok else "A required check failed.")
    if not report.ok:
        raise typer.Exit(1)
