"""``bench tasks check`` / ``bench check``, ``bench tasks digest`` and ``bench tasks overlap``."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from .run_options import ALLOW_TASK_ENV_HELP

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
        help="Validation level: schema, structural, runtime-capability, publication-grade, acceptance, "
             "acceptance-live, or equivalence (runs the oracle in --sandbox, then grades wrong and "
             "value-equivalent variants of its output)"),
    sandbox: Optional[str] = typer.Option(
        None, "--sandbox",
        help="Validate runtime semantics for docker, remote-docker, local, daytona, modal, apple-container, or "
             "agentcore (default: a sandbox that can run the task: docker, or modal for a task that asks for GPUs); "
             "the levels that run the task run there (default: docker when an engine answers, else local)"),
    report_output: Optional[Path] = typer.Option(
        None, "--report-output",
        help="Write the acceptance-live report to this host path instead of the task-declared report "
             "path; with --level equivalence, write the battery's JSON report here"),
    no_report_write: bool = typer.Option(
        False, "--no-report-write",
        help="Validate acceptance-live without writing the declared report or its .sha256 sidecar "
             "(report-only dogfood; leaves the task package unmodified). Takes precedence over "
             "--report-output."),
    allow_task_env: Optional[list[str]] = typer.Option(None, "--allow-task-env", help=ALLOW_TASK_ENV_HELP),
    verifier_sandbox: Optional[str] = typer.Option(
        None, "--verifier-sandbox",
        help="With separate: also check what bench run --verifier-sandbox separate checks before it starts "
             "(on --sandbox, default docker), with the same refusals, and name where the verifier image comes from"),
    agent: Optional[str] = typer.Option(None, "--agent", show_default="claude-agent-acp",
                                        help="Agent to validate, as for eval run"),
    model: Optional[str] = typer.Option(None, "--model", help="Model to validate, as for eval run"),
    sandbox_user: Optional[str] = typer.Option(None, "--sandbox-user", show_default="agent",
                                               help="Agent user to validate, as for eval run"),
) -> None:
    from benchflow.errors import ConfigError
    from benchflow.tasks.task_env import check_names

    try:
        allowed = check_names(allow_task_env or [])
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    run_flags = {"--agent": agent, "--model": model, "--sandbox-user": sandbox_user,
                 "--verifier-sandbox": verifier_sandbox}
    if level in (Level.equivalence, Level.acceptance_live):
        if allowed:
            raise ConfigError(f"--allow-task-env: --level {level.value} does not pass host variables to the runs "
                              "it makes yet; check at --level structural, then bench run --allow-task-env")
        given = next((flag for flag, value in run_flags.items() if value is not None), None)
        if given:
            raise ConfigError(f"{given}: --level {level.value} runs the oracle, not a run's agent settings; "
                              f"check them at --level structural (or runtime-capability) instead")
        from benchflow.checks.levels import run_level

        outcomes = run_level(task_dir, level.value, sandbox, report_output=report_output,
                             write=not no_report_write)
        _print_live(outcomes, level.value)
        if not all(o.ok for o in outcomes):
            raise typer.Exit(1)
        return
    from benchflow.checks.target import runtime_target, runtime_target_for
    from benchflow.tasks.batch import check_tasks

    runtime = (runtime_target(sandbox) if sandbox is not None
               else runtime_target_for if level != Level.structural and level != Level.schema else None)
    reports = check_tasks(task_dir, level=level.value, runtime=runtime, allow_task_env=allowed)
    sources: dict[str, str] = {}
    if level != Level.schema and any(value is not None for value in run_flags.values()):
        sources = _add_plan_findings(reports, task_dir, sandbox, allowed, agent=agent, model=model,
                                     sandbox_user=sandbox_user, verifier_sandbox=verifier_sandbox)
    single = len(reports) == 1 and reports[0].path == task_dir
    failed = 0
    for report in reports:
        for warning in report.warnings:
            typer.echo(f"warning: {report.name}: {warning}", err=True)
        where = f"  (on {report.sandbox})" if report.sandbox and sandbox is None else ""
        if report.name in sources:
            where += f"  (verifier image: {sources[report.name]})"
        if report.ok:
            typer.echo(f"ok    {report.name}{where}")
            continue
        failed += 1
        if single:
            typer.echo(f"FAIL  {report.name}{where}")
            for issue in report.issues:
                typer.echo(f"  - {issue}")
        else:
            typer.echo(f"FAIL  {report.name}: {'; '.join(report.issues)}")
    noun = "task" if len(reports) == 1 else "tasks"
    typer.echo(f"{len(reports)} {noun} checked at level {level.value}: "
               f"{len(reports) - failed} ok, {failed} with issues")
    if failed:
        raise typer.Exit(1)


def _add_plan_findings(reports: list, task_dir: Path, sandbox: Optional[str], allowed: list[str], *,
                       agent: Optional[str], model: Optional[str], sandbox_user: Optional[str],
                       verifier_sandbox: Optional[str]) -> dict[str, str]:
    """Add what bench run with these settings would refuse (issues) or warn about to each report;
    return where each task's separate verifier image comes from."""
    from benchflow.checks.run_plan import RunSettings, plan_findings

    settings = RunSettings(agent=agent or "claude-agent-acp", model=model, sandbox_user=sandbox_user or "agent",
                           verifier_sandbox=verifier_sandbox, sandbox=sandbox, allow_task_env=tuple(allowed))
    found = plan_findings(task_dir, settings)
    for report in reports:
        report.issues = list(dict.fromkeys([*report.issues, *found.run_refusals,
                                            *found.refusals.get(report.name, [])]))
        report.warnings = list(dict.fromkeys([*report.warnings, *found.warnings.get(report.name, [])]))
    return found.verifier_source


def _reward(value: object) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _print_live(outcomes: list, level: str) -> None:
    """One block per task: its rows (variants or cases), then its verdict and written files."""
    for outcome in outcomes:
        for warning in outcome.warnings:
            typer.echo(f"warning: {outcome.name}: {warning}", err=True)
        report = outcome.report
        if report is not None and level == "equivalence":
            oracle = report["oracle"]
            typer.echo(f"{outcome.name}: oracle scored {_reward(oracle['reward'])} on {report['sandbox']}; "
                       f"outputs: {', '.join(report['output_files']) or 'none'}")
            rows = [(r["variant"], r["kind"], str(len(r["files_changed"])), _reward(r["reward"]),
                     r["expected"], "ok" if r["ok"] else "FAIL") for r in report["variants"]]
            header = ("variant", "kind", "files", "reward", "expected", "")
        elif report is not None:
            typer.echo(f"{outcome.name}: {len(report['cases'])} live cases on {report['sandbox']}")
            rows = [(r["name"], r["agent"], r["source"], _reward(r["reward"]),
                     ", ".join(f"{k} {v:g}" for k, v in r["expect"].items()), "ok" if r["ok"] else "FAIL")
                    for r in report["cases"]]
            header = ("case", "agent", "source", "reward", "expected", "")
        else:
            rows, header = [], ()
        if rows:
            widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
            for row in [header, *rows]:
                typer.echo("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        typer.echo(f"{'ok  ' if outcome.ok else 'FAIL'}  {outcome.name}")
        for issue in outcome.issues:
            typer.echo(f"  - {issue}")
        for path in outcome.written:
            typer.echo(f"  wrote {path}")
    failed = sum(not o.ok for o in outcomes)
    noun = "task" if len(outcomes) == 1 else "tasks"
    typer.echo(f"{len(outcomes)} {noun} checked at level {level}: {len(outcomes) - failed} ok, "
               f"{failed} with issues")


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
