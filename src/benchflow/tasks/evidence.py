"""The static ``acceptance`` level: the evidence a task ships that it was accepted (contracts §1.10).

Nothing runs here: the checks read what task.md declares under
``benchflow.evidence`` and cross-check it against the JSON files it names::

    benchflow:
      evidence:
        oracle_runs: {count: 3, report: evidence/oracle-runs.json}
        verifier_reruns: {count: 5, flake_rate: 0.0, max_flake_rate: 0.0, report: evidence/stability.json}
        review: {anti_cheat: pass, instruction_alignment: pass, report: evidence/review.json}
        calibration:
          bounds:                          # inclusive reward bounds per calibration kind
            no_op: {max_reward: 0.0}
            known_bad: {max_reward: 0.2}
            partial: {min_reward: 0.2, max_reward: 0.8}
            reference: {min_reward: 1.0}
          report: evidence/calibration.json
        files:                             # SHA-256 pins of every primary evidence file
          evidence/oracle-runs.json: sha256:<hex>
          ...

The JSON files: ``oracle-runs.json`` = ``{"runs": [{"reward": 1.0}, ...]}`` (every run 1.0);
``stability.json`` = ``{"reruns": [{"reward": r}, ...]}`` (flake rate = share of reruns whose
reward differs from the most common one); ``review.json`` = ``{"anti_cheat": {"verdict": "pass"},
"instruction_alignment": {"verdict": "pass"}}``; ``calibration.json`` = ``{"results": {"no_op": r,
"known_bad": r, "partial": r, "reference": r}}``. Declared numbers must equal the files' numbers.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

CALIBRATION_KINDS = ("no_op", "known_bad", "partial", "reference")
REVIEWS = ("anti_cheat", "instruction_alignment")
TOL = 1e-9
F = "task.md: benchflow.evidence"


def _block(evidence: dict[str, Any], key: str, issues: list[str], example: str) -> dict[str, Any] | None:
    value = evidence.get(key)
    if not isinstance(value, dict):
        issues.append(f"{F}.{key}: missing; declare it, e.g. {key}: {example}")
        return None
    return value


def _artifact(task_dir: Path, block: dict[str, Any], key: str, issues: list[str],
              reports: list[str]) -> Any:
    """The parsed JSON file ``block['report']`` names, or None (with the issue recorded)."""
    rel = block.get("report")
    if not isinstance(rel, str) or PurePosixPath(rel).is_absolute() or ".." in PurePosixPath(rel).parts:
        issues.append(f"{F}.{key}.report: give the task-relative path of its JSON evidence file")
        return None
    reports.append(rel)
    try:
        return json.loads((task_dir / rel).read_text(encoding="utf-8"))
    except FileNotFoundError:
        issues.append(f"{rel}: missing, but {F}.{key}.report names it; add the file")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        issues.append(f"{rel}: not readable JSON ({exc}); regenerate it")
    return None


def _rewards(doc: Any, key: str, rel: str, issues: list[str]) -> list[float] | None:
    items = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) and _number(i.get("reward")) for i in items):
        issues.append(f"{rel}: needs {{\"{key}\": [{{\"reward\": <number>}}, ...]}}")
        return None
    return [float(i["reward"]) for i in items]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count_at_least(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _oracle_runs(task_dir: Path, block: dict[str, Any], issues: list[str], reports: list[str]) -> None:
    count = block.get("count")
    if not _count_at_least(count, 1):
        issues.append(f"{F}.oracle_runs.count: give the number of oracle runs (at least 1)")
    doc = _artifact(task_dir, block, "oracle_runs", issues, reports)
    runs = None if doc is None else _rewards(doc, "runs", block["report"], issues)
    if runs is None:
        return
    if isinstance(count, int) and len(runs) != count:
        issues.append(f"{block['report']}: holds {len(runs)} oracle runs, but oracle_runs.count says {count}")
    failed = [r for r in runs if abs(r - 1.0) > TOL]
    if failed:
        issues.append(f"{block['report']}: {len(failed)} oracle run(s) scored below 1.0 ({failed[0]:g}); "
                   "fix the oracle or the verifier")


def _verifier_reruns(task_dir: Path, block: dict[str, Any], issues: list[str], reports: list[str]) -> None:
    count, declared = block.get("count"), block.get("flake_rate")
    ceiling = block.get("max_flake_rate", 0.0)
    if not _count_at_least(count, 2):
        issues.append(f"{F}.verifier_reruns.count: give the number of verifier reruns (at least 2)")
    if not _number(declared) or not 0 <= declared <= 1:
        issues.append(f"{F}.verifier_reruns.flake_rate: give the measured flake rate (0 to 1)")
    if not _number(ceiling) or not 0 <= ceiling <= 1:
        issues.append(f"{F}.verifier_reruns.max_flake_rate: must be a number from 0 to 1")
        ceiling = 0.0
    doc = _artifact(task_dir, block, "verifier_reruns", issues, reports)
    reruns = None if doc is None else _rewards(doc, "reruns", block["report"], issues)
    if not reruns:
        return
    if isinstance(count, int) and len(reruns) != count:
        issues.append(f"{block['report']}: holds {len(reruns)} reruns, but verifier_reruns.count says {count}")
    modal = Counter(reruns).most_common(1)[0][1]
    rate = (len(reruns) - modal) / len(reruns)
    if _number(declared) and abs(rate - declared) > TOL:
        issues.append(f"{block['report']}: the reruns give a flake rate of {rate:g}, but "
                   f"verifier_reruns.flake_rate says {declared:g}; declare the measured value")
    if rate > ceiling + TOL:
        issues.append(f"{block['report']}: the verifier is flaky (flake rate {rate:g} > max {ceiling:g}); "
                   "make it deterministic")


def _review(task_dir: Path, block: dict[str, Any], issues: list[str], reports: list[str]) -> None:
    doc = _artifact(task_dir, block, "review", issues, reports)
    for name in REVIEWS:
        declared = block.get(name)
        if declared != "pass":
            issues.append(f"{F}.review.{name}: {declared!r}; the {name.replace('_', '-')} review must pass")
        if doc is None:
            continue
        verdict = (doc.get(name) or {}).get("verdict") if isinstance(doc, dict) else None
        if verdict != declared:
            issues.append(f"{block['report']}: {name} verdict is {verdict!r}, but task.md declares {declared!r}")


def _calibration(task_dir: Path, block: dict[str, Any], issues: list[str], reports: list[str]) -> None:
    bounds = block.get("bounds") if isinstance(block.get("bounds"), dict) else {}
    doc = _artifact(task_dir, block, "calibration", issues, reports)
    results = doc.get("results") if isinstance(doc, dict) else None
    for kind in CALIBRATION_KINDS:
        bound = bounds.get(kind)
        if not isinstance(bound, dict) or not bound or set(bound) - {"min_reward", "max_reward"} \
                or not all(_number(v) for v in bound.values()):
            issues.append(f"{F}.calibration.bounds.{kind}: give min_reward and/or max_reward")
            continue
        if doc is None:
            continue
        value = results.get(kind) if isinstance(results, dict) else None
        if not _number(value):
            issues.append(f"{block['report']}: results.{kind} is missing; record the {kind} calibration reward")
        elif not bound.get("min_reward", value) - TOL <= value <= bound.get("max_reward", value) + TOL:
            issues.append(f"{block['report']}: {kind} scored {value:g}, outside its bounds {bound}")


_CHECKS = (
    ("oracle_runs", "{count: 3, report: evidence/oracle-runs.json}", _oracle_runs),
    ("verifier_reruns", "{count: 5, flake_rate: 0.0, report: evidence/stability.json}", _verifier_reruns),
    ("review", "{anti_cheat: pass, instruction_alignment: pass, report: evidence/review.json}", _review),
    ("calibration", "{bounds: {...}, report: evidence/calibration.json}", _calibration),
)
"""Each declared evidence block: its key under ``benchflow.evidence``, an example, the check of what it says."""


def _pins(task_dir: Path, pins: Any, reports: list[str], issues: list[str]) -> None:
    if not isinstance(pins, dict):
        issues.append(f"{F}.files: missing; pin every evidence file as '<path>: sha256:<hex>'")
        pins = {}
    for rel in reports:
        if rel not in pins:
            issues.append(f"{F}.files: {rel} is not pinned; add '{rel}: sha256:<hex>'")
    for rel, pin in pins.items():
        path = task_dir / str(rel)
        if not path.is_file():
            issues.append(f"{F}.files: {rel} is pinned but missing; add it or drop the pin")
            continue
        actual = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
        if pin != actual:
            issues.append(f"{rel}: its SHA-256 is {actual}, but {F}.files pins {pin}; update the pin")


def acceptance_issues(task_dir: Path, document: dict[str, Any]) -> list[str]:
    """Every problem of the task's static acceptance evidence (empty: accepted)."""
    evidence = (document.get("benchflow") or {}).get("evidence")
    if not isinstance(evidence, dict):
        return [f"{F}: missing; declare oracle_runs, verifier_reruns, review, calibration and files"]
    issues: list[str] = []
    reports: list[str] = []
    for key, example, check in _CHECKS:
        block = _block(evidence, key, issues, example)
        if block is not None:
            check(task_dir, block, issues, reports)
    _pins(task_dir, evidence.get("files"), reports, issues)
    return issues
