"""``bench traj export``: a trial or job folder as an ATIF trajectory or an Inspect eval log (benchflow.interop)."""

from __future__ import annotations

from pathlib import Path

import typer

export_cmd = typer.Typer(add_completion=False)


@export_cmd.command(help="Export trajectories to another tool's format, redacted.\n\n--format atif (the "
                         "default): one ATIF trajectory.json (v1.8, as Harbor writes) per trial: messages, tool "
                         "calls and their results, token counts and cost. --format inspect: one Inspect eval log "
                         "(.eval or .json) with a sample per trial, its reward as the score (needs inspect_ai). "
                         "Every file is redacted as bench bundle redacts.")
def export(
    path: Path = typer.Argument(..., metavar="PATH", help="A job folder, or one trial folder inside it"),
    out: Path | None = typer.Option(None, "--out", "-o", help="atif: the file for a trial (default "
                                    "<PATH>.trajectory.json), the folder for a job (default <PATH>.atif/, one "
                                    "<trial>/trajectory.json each); inspect: the .eval or .json log (default "
                                    "<PATH>.eval)"),
    fmt: str = typer.Option("atif", "--format", "-f", help="atif or inspect"),
) -> None:
    from benchflow.interop.export import export as run_export

    report = run_export(path, out, fmt=fmt)
    left = f", {len(report.left_out)} trial(s) left out" if report.left_out else ""
    typer.echo(f"Wrote {report.out} ({report.format}, {len(report.written)} file(s){left})")
    for item in report.left_out:
        typer.echo(f"Left out: {item['path']} ({item['reason']})", err=True)
