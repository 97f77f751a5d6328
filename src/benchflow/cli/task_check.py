"""``bench tasks check`` / ``bench check``, ``bench tasks digest`` and ``bench tasks overlap``."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

check_cmd = typer.Typer(add_completion=False)
digest_cmd = typer.Typer(add_completion=False)
overlap_cmd = typer.Typer(add_completion=False)


class Level(str, Enum):
    schema = "schema"
    structural = "structural"
    runtime_capability = "runtime-capability"
    publication_grade = "publication-grade"
    acceptance = "acceptance"
    acceptance_live = "acceptance-live"
    equivalence = "equivalence"


@check_cmd.command(
    help="Validate task structure and the run's plan without starting a sandbox.\n\n"
         "Warnings (e.g. task.toml keys BenchFlow does not know) are printed but do not fail the check.",
)
def check(
    task_dir: Path = typer.Argument(..., help="Task directory or folder of tasks"),
    level: Level = typer.Option(
        Level.structural, "--level", case_sensitive=False,
        help="Validation level: schema, structural, runtime-capability (needs --sandbox) or "
             "publication-grade. acceptance, acceptance-live and equivalence run the task and are "
             "not available in this build."),
    sandbox: Optional[str] = typer.Option(
        None, "--sandbox",
        help="Validate runtime semantics for this sandbox backend (docker, remote-docker, local)"),
) -> None:
    from benchflow.tasks.batch import check_tasks

    reports = check_tasks(task_dir, level=level.value, sandbox=sandbox)
    single = len(reports) == 1 and reports[0].path == task_dir
    failed = 0
    for report in reports:
        for warning in report.warnings:
            typer.echo(f"warning: {report.name}: {warning}", err=True)
        if report.ok:
            typer.echo(f"ok    {report.name}")
            continue
        failed += 1
        if single:
            typer.echo(f"FAIL  {report.name}")
            for issue in report.issues:
                typer.echo(f"  - {issue}")
        else:
            typer.echo(f"FAIL  {report.name}: {'; '.join(report.issues)}")
    noun = "task" if len(reports) == 1 else "tasks"
    typer.echo(f"{len(reports)} {noun} checked at level {level.value}: "
               f"{len(reports) - failed} ok, {failed} with issues")
    if failed:
        raise typer.Exit(1)


@digest_cmd.command(
    help="Compute the content digest that pins a task's files, independent of git.\n\n"
         "The digest is the one published in the skillsbench dataset registry (registry.json). "
         "For one task (task.md or task.toml) it prints the digest; for a folder of tasks it prints "
         "a line \"<name> <digest>\" per task.",
)
def digest(
    path: Path = typer.Argument(..., help="Path to a task directory, or a directory of task directories"),
) -> None:
    from benchflow.tasks.batch import digest_tasks

    result = digest_tasks(path)
    for warning in result.skipped:
        typer.echo(f"warning: {warning}", err=True)
    for name, value in result.rows:
        typer.echo(value if result.single else f"{name} {value}")


@overlap_cmd.command(help="Compare two task manifests for exact task-id and digest overlap.")
def overlap(
    left_manifest: Path = typer.Argument(..., help="Left task manifest JSON"),
    right_manifest: Path = typer.Argument(..., help="Right task manifest JSON"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Optional JSON output path"),
) -> None:
    import json

    from benchflow.tasks.overlap import overlap as compare

    report = compare(left_manifest, right_manifest, out=out)
    if out is None:
        typer.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        typer.echo(f"task-id overlap: {report['task_id_overlap_count']}, digest overlap: "
                   f"{report['digest_overlap_count']} ({report['left_count']} left, "
                   f"{report['right_count']} right); report written to {out}")
