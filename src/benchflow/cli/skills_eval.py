"""``bench skills eval SKILL_DIR``: the skill's eval cases run with and without it; pass rates and lift.

Exit codes: 0 every case of every run was scored; 1 some trial ended without a score (its case is
left out of that side and listed); 2 bad input (no ``evals/evals.json``, a malformed case, an
unknown agent or sandbox); 130 interrupted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

eval_cmd = typer.Typer(add_completion=False)

HELP = ("Evaluate a skill using its evals/evals.json test cases.\n\n"
        "Generates ephemeral tasks from the skill's eval dataset, runs each agent with and without the skill "
        "installed, and reports the lift.\n\n"
        "Examples:\n\n"
        "bench skills eval ./my-skill/ --agent claude-agent-acp\n\n"
        "bench skills eval ./my-skill/ --agent claude-agent-acp --agent codex-acp --sandbox daytona --concurrency 4\n\n"
        "bench skills eval ./my-skill/ --agent claude-agent-acp --no-baseline --export-gepa")


@eval_cmd.command(help=HELP)
def skills_eval(
    skill_dir: Path = typer.Argument(..., help="Path to skill directory containing evals/evals.json"),
    agent: List[str] = typer.Option([], "--agent", help="Agent(s) to evaluate (repeatable)"),
    model: List[str] = typer.Option([], "--model", help="Model(s) (matched 1:1 with agents)"),
    sandbox: str = typer.Option("docker", "--sandbox", help="Sandbox: docker, remote-docker, daytona, modal, apple-container, or agentcore"),
    concurrency: int = typer.Option(1, "--concurrency", min=1, help="Max concurrent tasks"),
    jobs_dir: str = typer.Option("jobs", "--jobs-dir", help="Output directory for results"),
    no_baseline: bool = typer.Option(False, "--no-baseline", help="Skip baseline (without-skill) runs"),
    export_gepa: bool = typer.Option(False, "--export-gepa", help="Export GEPA-compatible traces"),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON (it is also written to skill-eval.json)"),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="Judge the plain-sentence expectations of "
                                              "cases without checks with this model (its key from your environment)"),
) -> None:
    from benchflow import agents
    from benchflow.errors import ConfigError
    from benchflow.sandbox import names
    from benchflow.skills import eval_judge, evals_file
    from benchflow.skills.eval_run import complete, pair_up, run_eval

    judge = eval_judge.resolve(judge_model) if judge_model is not None else None
    evals = evals_file.load(skill_dir, judge_model=judge.model if judge else None)
    contenders = pair_up(agent, model)
    for contender in contenders:
        agents.resolve(contender.agent)  # an unknown agent is a one-line exit 2 before anything is written
    if sandbox not in names():
        raise ConfigError(f"--sandbox {sandbox}: not a sandbox here; use one of {', '.join(names())}")
    for case in evals.unscored:
        typer.echo(f"note: case {case.id} left out: only plain-sentence expectations (give --judge-model)",
                   err=True)
    for case in evals.cases:
        if judge is not None and case.checks and case.sentences:
            typer.echo(f"note: case {case.id} is scored by its checks; its sentences are not judged", err=True)

    def say(line: str) -> None:
        typer.echo(line, err=True)

    report = run_eval(evals, contenders, sandbox=sandbox, concurrency=concurrency, jobs_dir=jobs_dir,
                      baseline=not no_baseline, judge=judge, say=say)
    if export_gepa:
        from benchflow.skills.gepa_export import export

        report["gepa_dir"] = str(export(report, evals))
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        _print(report)
    raise typer.Exit(0 if complete(report) else 1)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:+.1f}pp"


def _print(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("Agent", "With skill", "Baseline", "Lift", "95% CI", "Paired"):
        table.add_column(column, overflow="fold")
    for row in report["results"]:
        w, b, lift = row["with_skill"], row["baseline"], row["lift"]
        ci = lift["ci"] if lift else None
        table.add_row(row["label"], f"{_pct(w['pass_rate'])} ({w['passed']}/{w['scored']})",
                      f"{_pct(b['pass_rate'])} ({b['passed']}/{b['scored']})" if b else "skipped",
                      _signed(lift["pass_rate_delta"]) if lift else "n/a",
                      f"[{_signed(ci['low'])}, {_signed(ci['high'])}]" if ci and ci["low"] is not None else "n/a",
                      str(lift["paired"]) if lift else "-")
    typer.echo(f"Skill {report['skill']}: {report['cases']} case(s), sandbox {report['sandbox']}")
    Console(highlight=False, soft_wrap=False).print(table)
    for row in report["results"]:
        for side in ("with_skill", "baseline"):
            missing = (row[side] or {}).get("unscored") or []
            if missing:
                typer.echo(f"{row['label']} {side.replace('_', '-')}: no score for {', '.join(missing)}")
    typer.echo(f"Report: {Path(report['eval_dir']) / 'skill-eval.json'}")
    if report.get("gepa_dir"):
        typer.echo(f"GEPA export: {report['gepa_dir']}")
