"""``bench doctor``: check this machine can run evals (see :mod:`benchflow.doctor`)."""

from __future__ import annotations

import json

import typer

doctor_cmd = typer.Typer(add_completion=False)

_MARK = {"ok": "ok", "warn": "warn", "fail": "FAIL"}


@doctor_cmd.command(help="Check this machine can run evals: Python/uv, sandbox, agent credentials, network.\n\n"
                         "Credentials are reported by name and source only; values are never printed. "
                         "Exits 1 when a required check fails.")
def doctor(
    sandbox: str = typer.Option("docker", "--sandbox",
                                help="Sandbox the checks treat as required: docker (default), remote-docker "
                                     "or local. The others are listed too."),
    offline: bool = typer.Option(False, "--offline", help="Skip network probes."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    from benchflow.doctor import run_doctor

    report = run_doctor(sandbox=sandbox, offline=offline)
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        for column in ("CHECK", "", "STATUS", "DETAIL"):
            table.add_column(column, overflow="fold")
        for check in report.checks:
            name = f"{check.name} (required)" if check.required else check.name
            table.add_row(check.group, name, _MARK[check.status], check.detail)
        Console(highlight=False, soft_wrap=True).print(table)
        typer.echo("All required checks passed." if report.ok else "A required check failed.")
    if not report.ok:
        raise typer.Exit(1)
