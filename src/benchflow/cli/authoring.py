"""Task-authoring commands: ``bench new``, ``bench import``, ``bench tasks normalize``, ``bench export``.

Each command parses its flags, calls one function of ``benchflow.tasks`` and
prints what happened; bad input surfaces as a ``UserError`` (one line, exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

init_cmd = typer.Typer(add_completion=False)
migrate_cmd = typer.Typer(add_completion=False)
normalize_cmd = typer.Typer(add_completion=False)
export_cmd = typer.Typer(add_completion=False)


@init_cmd.command(help="Scaffold a new benchmark task.")
def init(
    name: str = typer.Argument(..., help="Task name"),
    dir: Path = typer.Option(Path("tasks"), "--dir", help="Parent directory (default: tasks/)", show_default=False),
    no_pytest: bool = typer.Option(False, "--no-pytest", help="Skip pytest template"),
    no_oracle: bool = typer.Option(False, "--no-oracle", "--no-solution", help="Skip oracle template"),
    format: str = typer.Option("task-md", "--format",
                               help="Task format. New tasks use task-md; legacy scaffolding is retired."),
) -> None:
    from benchflow.tasks.scaffold import scaffold_task

    result = scaffold_task(name, dir, pytest=not no_pytest, oracle=not no_oracle, fmt=format)
    typer.echo(f"Created task {result.task_dir}/")
    for rel in result.files:
        typer.echo(f"  {rel}")
    typer.echo("Next: replace every [REPLACE: …] marker, then run "
               f"`bench check {result.task_dir}` and `bench run {result.task_dir}`.")


@migrate_cmd.command(help="Convert task.toml + instruction.md into the unified task.md format.")
def migrate(
    task_dir: Path = typer.Argument(..., help="Legacy task directory"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing task.md"),
    remove_legacy: bool = typer.Option(False, "--remove-legacy",
                                       help="Delete split files and promote tests/solution aliases "
                                            "after task.md is verified"),
) -> None:
    from benchflow.tasks.migrate import migrate_task

    result = migrate_task(task_dir, overwrite=overwrite, remove_legacy=remove_legacy)
    typer.echo(f"Wrote {result.task_md} (verified: same config and instruction as task.toml + instruction.md)")
    if result.preserved_extra:
        typer.echo("Kept unknown task.toml keys under benchflow.compat: " + ", ".join(result.preserved_extra))
    for line in result.removed:
        typer.echo(f"Removed {line}")
    for old, new in result.renamed:
        typer.echo(f"Renamed {old}/ -> {new}/")
    for warning in result.warnings:
        typer.echo(f"warning: {warning}", err=True)


@normalize_cmd.command(help="Expand minimal task.md authoring profiles into canonical task.md.")
def normalize(
    task_dir: Path = typer.Argument(..., help="Task directory with task.md"),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Write normalized task.md to this path instead of stdout"),
    write: bool = typer.Option(False, "--write", help="Replace task.md in place with the normalized canonical form"),
) -> None:
    from benchflow.tasks.migrate import normalize_task

    result = normalize_task(task_dir, output=output, write=write)
    if result.written is None:
        typer.echo(result.text, nl=False)
    else:
        typer.echo(f"Wrote {result.written}")


@export_cmd.command(help="Export a task to a compatibility split layout with a loss report.")
def export(
    task_dir: Path = typer.Argument(..., help="Task directory to export"),
    output_dir: Optional[Path] = typer.Argument(None, help="Destination split-layout directory (omit with --report-only)"),
    target: str = typer.Option("task-toml", "--target", help="Layout to write: task-toml"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing export directory"),
    report_only: bool = typer.Option(False, "--report-only",
                                     help="Print the compatibility loss report without writing files"),
) -> None:
    from benchflow.tasks.export import export_task
    from benchflow.util.atomic import dumps_json

    report = export_task(task_dir, output_dir, target=target, overwrite=overwrite, report_only=report_only)
    if report_only:
        typer.echo(dumps_json(report.to_json()), nl=False)
        return
    typer.echo(f"Exported {task_dir} -> {output_dir} ({report.status}, {len(report.emitted_files)} files)")
    for loss in report.losses:
        typer.echo(f"  {loss.severity}: {loss.path}: {loss.reason}")
    typer.echo(f"Report: {Path(output_dir) / 'compatibility' / 'export-report.json'}")
