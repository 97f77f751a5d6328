"""``bench skills eval --export-gepa``: the cases and their outcomes, for GEPA to evolve the skill text.

GEPA optimises a text component (here ``SKILL.md``) from examples scored with feedback. The export
keeps BenchFlow 0.x's layout, under the eval folder::

    gepa/skill.md                           the SKILL.md that was evaluated
    gepa/traces/<case>-<label>-<with|without>.json
                                            one per case, agent and side: prompt, expectations,
                                            score, the verifier's PASS/FAIL lines (a judged
                                            case: the judge's verdict per sentence) as feedback,
                                            and the agent's trajectory (ACP events)
    gepa/summary.json                       per agent: pass rates and lift

Every file is written atomically; a trajectory is capped at ``MAX_EVENTS`` events.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchflow.jobs.layout import TrialPaths
from benchflow.util import atomic

from .discover import skill_md
from .evals_file import EvalSet

MAX_EVENTS = 500
MAX_FEEDBACK = 20_000


def _read(path: Path, limit: int) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:limit] if path.is_file() else None
    except OSError:
        return None


def _feedback(trial: Path) -> str | None:
    """The checks' PASS/FAIL lines, or for a judged case the judge's score and reasoning per sentence."""
    verifier = TrialPaths(trial).verifier_dir
    lines = _read(verifier / "test-stdout.txt", MAX_FEEDBACK)
    if lines is not None:
        return lines
    try:
        details = json.loads(_read(verifier / "reward-details.json", 10_000_000) or "null")
    except ValueError:
        return None
    criteria = details.get("criteria") if isinstance(details, dict) else None
    if not isinstance(criteria, list):
        return None
    return "\n".join(f"{'PASS' if c.get('score') == 1 else 'FAIL'} {c.get('name')} ({c.get('score')}): "
                     f"{c.get('reasoning', '')}" for c in criteria if isinstance(c, dict))[:MAX_FEEDBACK]


def _events(trial: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    text = _read(TrialPaths(trial).acp_trajectory, 10_000_000) or ""
    for line in text.splitlines()[:MAX_EVENTS]:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def export(report: dict[str, Any], evals: EvalSet) -> Path:
    """Write the GEPA export beside ``report`` (under its ``eval_dir``); returns the folder."""
    out = Path(report["eval_dir"]) / "gepa"
    md = skill_md(evals.skill_dir)
    skill_text = md.read_text(encoding="utf-8", errors="replace") if md else None
    if skill_text is not None:
        atomic.write_text(out / "skill.md", skill_text)
    cases = {c.id: c for c in evals.cases}
    for row in report["results"]:
        for entry in row["cases"]:
            case = cases[entry["id"]]
            for mode, key, side in (("with-skill", "with_skill", "with"), ("baseline", "baseline", "without")):
                if mode not in row["jobs"]:
                    continue
                trial = entry["trials"].get(mode)
                atomic.write_json(out / "traces" / f"{case.id}-{row['label']}-{side}.json", {
                    "case_id": case.id, "agent": row["agent"], "model": row["model"], "with_skill": side == "with",
                    "prompt": case.prompt, "expected_output": case.expected_output,
                    "expectations": [c.to_json() for c in case.checks] + case.sentences,
                    "score": entry[key], "passed": entry[key] == 1.0 if entry[key] is not None else None,
                    "feedback": _feedback(Path(trial)) if trial else None,
                    "trajectory": _events(Path(trial)) if trial else [],
                    "trial_dir": trial, "skill_text": skill_text})
    atomic.write_json(out / "summary.json", {
        "skill_name": report["skill"], "n_cases": report["cases"],
        "agents": [row["label"] for row in report["results"]],
        "lifts": [{"agent": row["agent"], "model": row["model"],
                   "with_skill_pass_rate": row["with_skill"]["pass_rate"],
                   "baseline_pass_rate": (row["baseline"] or {}).get("pass_rate"),
                   "lift": (row["lift"] or {}).get("pass_rate_delta"),
                   "lift_ci": (row["lift"] or {}).get("ci")} for row in report["results"]]})
    return out
