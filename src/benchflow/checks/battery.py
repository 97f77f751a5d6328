"""``bench tasks check --level equivalence``: does the verifier judge values, not bytes?

1. The oracle runs through the engine with a frozen workspace; it must score 1.0.
2. The nop agent runs the same way: its untouched workspace is the first
   *wrong* variant, and the baseline that tells which files are the oracle's outputs.
3. Each variant of those outputs (see ``variants.py``) is put into the workdir of
   a fresh sandbox and graded by the task's verifier. Wrong variants must score
   below 1; value-equivalent ones must still score 1.0.

A variant that contradicts its expectation makes the battery fail (exit 1).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from benchflow.errors import TaskError
from benchflow.jobs.layout import TrialPaths

from .live import ControlRun, grade_workspace, is_one, run_control
from .variants import Variant, make_variants, output_files, read_tree

KIND = "benchflow.equivalence-report"
SCHEMA_VERSION = 1
GRADE_CONCURRENCY = 3
EXPECTED = {"wrong": "reward < 1", "equivalent": "reward = 1"}


def _row(name: str, kind: str, description: str, files: list[str], reward: float | None,
         error: str | None) -> dict[str, Any]:
    # A verifier that writes no reward did not judge the output, so it neither accepts nor rejects it.
    ok = reward is not None and (is_one(reward) if kind == "equivalent" else not is_one(reward))
    return {"variant": name, "kind": kind, "description": description, "files_changed": files,
            "reward": reward, "error": error, "expected": EXPECTED[kind], "ok": ok}


def _materialize(reference: Path, variant: Variant, into: Path) -> Path:
    target = into / variant.name
    shutil.copytree(reference, target, symlinks=True)
    for rel, data in variant.changes.items():
        (target / rel).write_bytes(data)
    return target


async def _grade_all(task: Any, backend: str, reference: Path, variants: list[Variant], scratch: Path,
                     remove: list[str]) -> list[dict[str, Any]]:
    slots = asyncio.Semaphore(GRADE_CONCURRENCY)

    async def grade(variant: Variant) -> dict[str, Any]:
        workspace = _materialize(reference, variant, scratch / "variants")
        async with slots:
            reward, error = await grade_workspace(task, backend, workspace, scratch / "verifier" / variant.name,
                                                  remove=remove, labels={"benchflow.check": "equivalence"})
        return _row(variant.name, variant.kind, variant.description, sorted(variant.changes), reward, error)

    return list(await asyncio.gather(*(grade(v) for v in variants)))


def _workdir(run: ControlRun) -> str | None:
    try:
        return json.loads(TrialPaths(run.trial_dir).evidence_manifest.read_text(encoding="utf-8"))["workdir"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _control(run: ControlRun) -> dict[str, Any]:
    return {"agent": run.agent, "reward": run.reward, "error": run.error}


def run_equivalence(task_dir: str | Path, sandbox: str | None = None) -> dict[str, Any]:
    """Run the battery on one task and return its report (nothing is written here).

    Raises:
        TaskError: the task does not load.
        BenchError: the engine refused or could not run the oracle (e.g. no sandbox backend).
    """
    from benchflow.tasks import load_task

    task_path = Path(task_dir)
    task = load_task(task_path)
    if not task.paths.solve_path.is_file():
        raise TaskError(f"{task.name}: no oracle/solve.sh; the equivalence battery grades the oracle's output")
    report: dict[str, Any] = {
        "kind": KIND, "schema_version": SCHEMA_VERSION, "task": task.name, "task_path": str(task_path),
        "task_digest": task.digest(), "created_at": dt.datetime.now(dt.timezone.utc).isoformat(),
    }
    with tempfile.TemporaryDirectory(prefix="benchflow-equivalence-", ignore_cleanup_errors=True) as tmp:
        scratch = Path(tmp)
        oracle = run_control(task_path, "oracle", sandbox, scratch / "oracle", freeze=True)
        report.update(sandbox=oracle.sandbox, oracle={**_control(oracle), "ok": is_one(oracle.reward)})
        if not is_one(oracle.reward) or oracle.workspace is None or not oracle.workspace.is_dir():
            why = oracle.error or f"it scored {oracle.reward}"
            report.update(output_files=[], variants=[], skipped=[], ok=False, contradictions=0,
                          verdict=f"the oracle must score 1.0 before variants can be judged ({why})")
            return report
        nop = run_control(task_path, "nop", oracle.sandbox, scratch / "nop", freeze=True)
        reference = read_tree(oracle.workspace)
        baseline = read_tree(nop.workspace) if nop.workspace else {}
        outputs = output_files(reference, baseline)
        variants, skipped = make_variants({p: reference[p] for p in outputs})
        deleted = sorted(set(baseline) - set(reference))  # files the oracle removed stay removed
        workdir = _workdir(oracle)
        rows = [_row("nop", "wrong", "the untouched workspace (nop agent)", [], nop.reward, nop.error)]
        rows += asyncio.run(_grade_all(task, oracle.sandbox, oracle.workspace, variants, scratch, deleted))
    bad = [r for r in rows if not r["ok"]]
    if bad:
        verdict = "; ".join(f"{r['variant']} ({r['kind']}) was not scored: {r['error']}" if r["reward"] is None
                            else f"{r['variant']} ({r['kind']}) scored {r['reward']}, expected {r['expected']}"
                            for r in bad)
    elif not outputs:
        verdict = (f"the oracle changed no file in the workdir ({workdir}), so only the untouched workspace "
                   "was graded; it scored below 1 as expected")
    else:
        verdict = "every variant scored as expected"
    report.update(workdir=workdir, output_files=outputs, variants=rows, skipped=skipped, ok=not bad,
                  contradictions=len(bad), verdict=verdict)
    return report
