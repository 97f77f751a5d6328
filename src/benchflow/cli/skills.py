"""``bench skills list`` and ``bench skills validate``: find skills, and check them statically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

list_cmd = typer.Typer(add_completion=False)
validate_cmd = typer.Typer(add_completion=False)


@list_cmd.command(help="List discovered skills.")
def skills_list(
    directory: Optional[Path] = typer.Option(None, "--dir", help="Skills directory to scan (default: the current folder, searched recursively for SKILL.md)"),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON"),
) -> None:
    from rich.console import Console
    from rich.table import Table

    from benchflow.errors import ConfigError
    from benchflow.skills.discover import find_skills, read_skill

    root = directory or Path.cwd()
    if not root.is_dir():
        raise ConfigError(f"--dir {root}: not a folder")
    skills = [read_skill(folder) for folder in find_skills([root])]
    rows = [{"name": s.name, "description": s.description, "path": str(s.path), "error": s.parse_error}
            for s in skills]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo(f"No skills (folders with a SKILL.md) under {root}.")
        return
    table = Table(box=None, pad_edge=False)
    for column in ("Skill", "Description", "Path"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row["name"], row["error"] and f"unreadable: {row['error']}" or row["description"], row["path"])
    Console(highlight=False, soft_wrap=False).print(table)


@validate_cmd.command(help="Run static checks on skills: NVIDIA SkillEvaluator Tier 1 and SkillSpector.\n\n"
                           "SkillEvaluator Tier 1 checks schema, version, PII, license, code integrity, dependencies, "
                           "Unicode smuggling, quality score and script lint. SkillSpector scans for security issues. "
                           "Both run without LLM calls (built in; the schema check is the Agent Skills reference "
                           "validator). Exit 1 when a schema, security or dependency finding reaches --fail-on, or a "
                           "checker fails to run.")
def skills_validate(
    paths: List[Path] = typer.Argument(..., help="Skill directories, or directories searched recursively for SKILL.md (e.g. a SkillsBench tasks/ folder)"),
    no_security: bool = typer.Option(False, "--no-security", help="Skip the NVIDIA SkillSpector security scan"),
    fail_on: str = typer.Option("high", "--fail-on", help="Exit 1 when a schema, security or dependency finding is at or above this severity: critical, high, medium, low, or never"),
    checks: Optional[str] = typer.Option(None, "--checks", help="Comma-separated SkillEvaluator Tier 1 checks (default: schema,version,pii,license,code-integrity,dependency,unicode,quality,lint)"),
    min_score: Optional[int] = typer.Option(None, "--min-score", min=0, max=100, help="Quality score SkillEvaluator's quality check needs (default 70); advisory: changes SkillEvaluator's Tier 1 status, not the exit code"),
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", "-o", help="Keep each skill's raw JSON reports under DIR/<skill>/"),
    workers: int = typer.Option(4, "--workers", "-j", min=1, help="Skills checked in parallel"),
    max_findings: int = typer.Option(5, "--max-findings", min=0, help="Blocking findings listed per skill (all are in --json)"),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON"),
) -> None:
    from benchflow.skills.validate import parse_options, validate_paths

    options = parse_options(checks=checks, no_security=no_security, fail_on=fail_on, min_score=min_score,
                            workers=workers, output_dir=output_dir)
    report = validate_paths(paths, options)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        _print(report, max_findings)
    raise typer.Exit(0 if report["passed"] else 1)


def _print(report: dict, max_findings: int) -> None:
    for skill in report["skills"]:
        tier1 = skill["tier1"]
        security = skill["security"]
        mark = "ok  " if skill["passed"] else "FAIL"
        typer.echo(f"{mark} {skill['skill']}  tier1 {tier1['status']} (quality {tier1['quality_score']})"
                   f"  security {security['status'] if security else 'skipped'}  {skill['path']}")
        for error in skill["checker_errors"]:
            typer.echo(f"     checker failed: {error}")
        for finding in skill["blocking"][:max_findings]:
            where = finding.get("file", "")
            if finding.get("line"):
                where += f":{finding['line']}"
            typer.echo(f"     {finding['severity']:<8} {finding['check']:<10} {finding['message']}  {where}")
        hidden = len(skill["blocking"]) - max_findings
        if hidden > 0:
            typer.echo(f"     … {hidden} more blocking finding(s) (see --json)")
    failed = sum(not s["passed"] for s in report["skills"])
    typer.echo(f"{len(report['skills'])} skill(s) checked, {failed} blocking (--fail-on {report['fail_on']})")
