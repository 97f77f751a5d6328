"""``bench skills validate``: run the Tier 1 checks and the security scan over skills, one report each.

A finding blocks when it is a schema, security or dependency finding at or above
``fail_on`` (the reference's rule); a checker that fails to run blocks too.
Quality stays advisory: it changes a skill's Tier 1 status, never the exit code.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError
from benchflow.util import atomic

from .checks import CHECKS, RANK, SEVERITIES, Finding, quality_score
from .discover import find_skills, read_skill
from .security import scan

BLOCKING = frozenset({"schema", "security", "dependency"})
FAIL_ON = (*SEVERITIES[:4], "never")
DEFAULT_MIN_SCORE = 70


@dataclass
class Options:
    checks: list[str] = field(default_factory=lambda: list(CHECKS))
    security: bool = True
    fail_on: str = "high"
    min_score: int = DEFAULT_MIN_SCORE
    workers: int = 4
    output_dir: Path | None = None


def parse_options(*, checks: str | None, no_security: bool, fail_on: str, min_score: int | None,
                  workers: int, output_dir: Path | None) -> Options:
    """Options from the flags.

    Raises:
        ConfigError: an unknown check or severity.
    """
    chosen = [c.strip() for c in checks.split(",") if c.strip()] if checks else list(CHECKS)
    unknown = [c for c in chosen if c not in CHECKS]
    if unknown:
        raise ConfigError(f"--checks {unknown[0]!r}: not a check; use some of {','.join(CHECKS)}")
    if fail_on not in FAIL_ON:
        raise ConfigError(f"--fail-on {fail_on!r}: use one of {', '.join(FAIL_ON)}")
    return Options(checks=chosen, security=not no_security, fail_on=fail_on,
                   min_score=DEFAULT_MIN_SCORE if min_score is None else min_score,
                   workers=max(workers, 1), output_dir=output_dir)


def _blocks(finding: Finding, fail_on: str) -> bool:
    return fail_on != "never" and finding.check in BLOCKING and RANK[finding.severity] >= RANK[fail_on]


def check_skill(folder: Path, options: Options) -> dict[str, Any]:
    """One skill's report: Tier 1 per check, the security scan, and what blocks."""
    skill = read_skill(folder)
    tier1: dict[str, Any] = {}
    errors: list[str] = []
    findings: list[Finding] = []
    for name in options.checks:
        try:
            found = CHECKS[name](skill, options.min_score)
        except Exception as exc:  # noqa: BLE001 - a checker that fails to run is reported and blocks
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            tier1[name] = {"status": "error", "error": str(exc), "findings": []}
            continue
        findings.extend(found)
        worst = max((RANK[f.severity] for f in found), default=-1)
        tier1[name] = {"status": "pass" if worst <= RANK["low"] else "fail",
                       "findings": [f.to_json() for f in found]}
    score = quality_score(skill)
    tier1_ok = not errors and all(v["status"] == "pass" for v in tier1.values()) and score >= options.min_score
    security = None
    if options.security:
        found = scan(skill)
        findings.extend(found)
        security = {"status": "pass" if not any(RANK[f.severity] >= RANK["high"] for f in found) else "fail",
                    "findings": [f.to_json() for f in found]}
    blocking = [f for f in findings if _blocks(f, options.fail_on)]
    report = {"skill": skill.name, "path": str(folder), "description": skill.description,
              "tier1": {"status": "pass" if tier1_ok else "fail", "quality_score": score,
                        "min_score": options.min_score, "checks": tier1},
              "security": security, "checker_errors": errors,
              "blocking": [f.to_json() for f in blocking], "passed": not blocking and not errors}
    if options.output_dir is not None:
        out = options.output_dir / skill.name
        atomic.write_json(out / "tier1.json", report["tier1"])
        if security is not None:
            atomic.write_json(out / "security.json", security)
    return report


def validate_paths(paths: list[Path], options: Options) -> dict[str, Any]:
    """Every skill under ``paths`` checked (``options.workers`` at a time); the whole report.

    Raises:
        ConfigError: a path that does not exist, or no skill found.
    """
    for path in paths:
        if not Path(path).exists():
            raise ConfigError(f"{path}: no such file or folder; give skill folders or a folder to search")
    folders = find_skills(paths)
    if not folders:
        raise ConfigError(f"no SKILL.md found under {', '.join(str(p) for p in paths)}; give skill folders")
    with ThreadPoolExecutor(max_workers=options.workers) as pool:
        reports = list(pool.map(lambda folder: check_skill(folder, options), folders))
    return {"schema": "benchflow.skills-validate/1", "fail_on": options.fail_on, "checks": options.checks,
            "security": options.security, "skills": reports,
            "passed": all(r["passed"] for r in reports)}
