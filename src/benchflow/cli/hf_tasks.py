"""``bench tasks snapshot-hf | list-sources | generate`` and the report of ``bench run --publish-hf``.

Each command parses its flags, calls one function of ``benchflow.hf`` and
prints what happened; bad input is a ``UserError`` (one line, exit 2).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

snapshot_hf_cmd = typer.Typer(add_completion=False)
list_sources_cmd = typer.Typer(add_completion=False)
generate_cmd = typer.Typer(add_completion=False)


@snapshot_hf_cmd.command(help="Materialize a Hugging Face dataset task tree with provenance.")
def snapshot_hf(
    repo_id: str = typer.Argument(..., help="Hugging Face dataset repo ID, e.g. org/name"),
    output_dir: Path = typer.Argument(..., help="Local output directory for the materialized snapshot"),
    ref: Optional[str] = typer.Option(None, "--ref", "--revision", help="Dataset revision, branch, tag, or commit"),
    path: Optional[str] = typer.Option(None, "--path", help="Optional subpath inside the dataset repo, e.g. tasks"),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Optional Hugging Face cache directory"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output directory"),
    include_task: Optional[list[str]] = typer.Option(
        None, "--include-task", help="Download only this task directory; repeat for multiple tasks"),
) -> None:
    from benchflow.hf.snapshot import PROVENANCE_FILE, snapshot_hf as run_snapshot

    snap = run_snapshot(repo_id, output_dir, revision=ref, path=path, cache_dir=cache_dir, overwrite=overwrite,
                        include_tasks=include_task)
    typer.echo(f"Wrote {len(snap.tasks)} task(s) from hf://datasets/{repo_id} at {snap.commit} to {output_dir}")
    for task in snap.tasks:
        typer.echo(f"{task.name}\t{task.digest}")
    typer.echo(f"Provenance: {output_dir / PROVENANCE_FILE}")


@list_sources_cmd.command(help="List known HuggingFace trace datasets.\n\n"
                               "These aliases can be passed to bench tasks generate --from-hf.")
def list_sources() -> None:
    from benchflow.hf.sources import SOURCES

    if not sys.stdout.isatty():
        for source in SOURCES:
            typer.echo(f"{source.alias}\t{source.repo_id}\t{source.format}\t{source.description}")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("alias", "dataset", "format", "description", box=None)
    for source in SOURCES:
        table.add_row(source.alias, source.repo_id, source.format, source.description)
    Console().print(table)


@generate_cmd.command(help="Generate benchmark tasks from agent traces.\n\n"
                           "Exactly one source flag (--from-local, --from-file or --from-hf) is required.\n\n"
                           "Examples:\n\n"
                           "bench tasks generate --from-local\n\n"
                           "bench tasks generate --from-local --project my-repo --limit 5\n\n"
                           "bench tasks generate --from-file session.jsonl --dry-run\n\n"
                           "bench tasks generate --from-hf opentraces-test --limit 50 --outcome success")
def generate(
    from_local: bool = typer.Option(False, "--from-local", help="Generate from local Claude Code sessions (~/.claude/projects/)"),
    from_file: Optional[Path] = typer.Option(None, "--from-file", help="Generate from a JSONL trace file (Claude Code or opentraces)"),
    from_hf: Optional[str] = typer.Option(None, "--from-hf", help="Generate from a HuggingFace dataset (ID or alias; run bench tasks list-sources for aliases)"),
    output: Path = typer.Option(Path("tasks"), "--output", help="Output directory for generated tasks"),
    projects_dir: Optional[Path] = typer.Option(None, "--projects-dir", help="Claude Code projects directory (default: ~/.claude/projects/)"),
    project: Optional[str] = typer.Option(None, "--project", help="Filter local sessions by project path substring"),
    format: str = typer.Option("auto", "--format", help="Trace format override: auto, claude-code, opentraces, claude-messages"),
    split: str = typer.Option("train", "--split", help="HuggingFace dataset split"),
    max_rows: int = typer.Option(100, "--max-rows", help="Max rows to download from HuggingFace"),
    limit: int = typer.Option(20, "--limit", help="Max traces to process"),
    min_steps: int = typer.Option(2, "--min-steps", help="Minimum steps per trace"),
    outcome: Optional[str] = typer.Option(None, "--outcome", help="Filter by outcome: success, failure, unknown"),
    author: str = typer.Option("benchflow-traces", "--author", help="Author name written into each generated task"),
    task_format: str = typer.Option("task-md", "--task-format", help="Generated task package format: task-md or legacy"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Preview traces without generating tasks"),
) -> None:
    from benchflow.errors import UserError
    from benchflow.hf.generate import GenerateOptions, generate_tasks

    chosen = [flag for flag, on in (("--from-local", from_local), ("--from-file", from_file is not None),
                                    ("--from-hf", from_hf is not None)) if on]
    if len(chosen) != 1:
        raise UserError("bench tasks generate: give exactly one of --from-local, --from-file or --from-hf "
                        f"({'none' if not chosen else ' and '.join(chosen)} given)")
    options = GenerateOptions(output=output, projects_dir=projects_dir, project=project, format=format, split=split,
                              max_rows=max_rows, limit=limit, min_steps=min_steps, outcome=outcome, author=author,
                              task_format=task_format, dry_run=dry_run)
    source: Any = "local" if from_local else (from_file if from_file is not None else ("hf", from_hf))
    result = generate_tasks(source, options)
    for trace in result.previewed:
        typer.echo(f"{trace.trace_id}\t{trace.format}\t{trace.outcome}\t{len(trace.steps)} steps\t"
                   f"{len(trace.outputs)} file(s)\t{trace.title}")
    for path in result.written:
        typer.echo(f"Wrote {path}")
    for path in result.existing:
        typer.echo(f"Kept {path} (already generated)")
    for trace_id, reason in result.skipped:
        typer.echo(f"skipped {trace_id}: {reason}", err=True)
    verb = "would generate" if dry_run else "generated"
    typer.echo(f"{len(result.previewed)} trace(s) read, {verb} {len(result.previewed) if dry_run else len(result.written)} "
               f"task(s), {len(result.skipped)} skipped", err=True)
    if not (result.previewed if dry_run else result.written or result.existing):
        raise typer.Exit(1)  # nothing usable: the skipped lines above say why


def report_publish(job_dir: Path, request: Any) -> None:
    """Publish a finished job (``bench run --publish-hf``) and say how it went; a failure keeps the job."""
    from benchflow.hf.publish import publish_job

    report = publish_job(job_dir, request)
    where = " and ".join(w for w in (f"hf://datasets/{report.repo}/{report.path_in_repo}" if report.repo else "",
                                     f"hf://buckets/{report.bucket}/{report.path_in_repo}" if report.bucket else "")
                         if w)
    if report.error:
        typer.echo(f"publish: FAILED for {where}: {report.error}. The job is kept at {job_dir}.", err=True)
        return
    typer.echo(f"publish: {report.files} file(s) to {where} ({report.masked} value(s) masked, "
               f"{report.left_out} left out){'; publicly readable' if report.public_read else ''}", err=True)
    if report.eval_results_pr:
        typer.echo(f"publish: eval-results pull request {report.eval_results_pr}", err=True)
