"""Regrade one trial: a fresh sandbox, the frozen workspace put back, the task's current verifier.

The sandbox is built from the *current* task (the one whose verifier changed),
so ``cache_key`` is the current digest, exactly as a new run would build it.
The workspace comes from ``evidence/workspace/`` (written by
``--freeze-workspace`` before the original verifier ran); the trial's
``agent/`` and ``artifacts/`` folders go back to ``/logs/agent`` and
``/logs/artifacts`` because verifiers may read them. Outputs land in
``<trial>/regrade/verifier/``; ``result.json`` and ``verifier/`` are only read.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.jobs.layout import TrialPaths
from benchflow.sandbox.base import Sandbox
from benchflow.sandbox.fit import fitted
from benchflow.sandbox.session import SessionSetupError, sandbox_session
from benchflow.sandbox.from_task import spec_for_task
from benchflow.util import atomic, nofollow
from benchflow.util.files import sha256_digest
from benchflow.util.scrub import scrub_document, scrub_folder

SCHEMA_VERSION = 1
KIND = "benchflow.regrade"

# Empty the workspace (dot-files too) so it holds exactly what was frozen, nothing the image added since.
_CLEAR = 'mkdir -p "$1" && find "$1" -mindepth 1 -maxdepth 1 -exec rm -rf {} +'
_CHOWN = 'chown -R "$2" "$1"'


@dataclass
class Candidate:
    """One trial folder and what regrading it needs; ``skip`` is set when it cannot be regraded."""

    paths: TrialPaths
    task_name: str
    config: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)
    task: Any = None
    """The current ``benchflow.tasks.Task`` (None when it could not be found or loaded)."""
    digest: str | None = None
    """The current task's content digest."""
    backend: str | None = None
    skip: tuple[str, str] | None = None
    """(code, sentence) when it cannot be regraded."""
    secrets: tuple[str, ...] = ()
    """Host values the task reads through ``--allow-task-env``: masked in what the regrade writes."""

    @property
    def workspace(self) -> Path:
        return self.paths.evidence_workspace



def evidence_problem(candidate: Candidate) -> tuple[str, str] | None:
    """Why the frozen workspace cannot be trusted (a file missing or changed since the freeze), or None."""
    manifest = _manifest(candidate.paths)
    for entry in manifest.get("files") or []:
        path = candidate.workspace / str(entry.get("path", ""))
        if not nofollow.is_regular(path):  # a link put here since the freeze is never followed
            return "evidence_changed", (f"evidence/workspace/{entry.get('path')} is listed in "
                                        "evidence/manifest.json but missing or not a plain file")
        expected = entry.get("sha256")
        if expected and sha256_digest(path).hex() != expected:
            return "evidence_changed", (f"evidence/workspace/{entry.get('path')} changed since it was "
                                        "frozen (sha256 differs from evidence/manifest.json)")
    return None


def _manifest(paths: TrialPaths) -> dict[str, Any]:
    try:
        data = json.loads(paths.evidence_manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


async def restore(sandbox: Sandbox, candidate: Candidate, workdir: str) -> None:
    """Put the frozen workspace (and the agent's logs and artifacts) back into a started sandbox."""
    paths, user = candidate.paths, candidate.config.get("sandbox_user")
    await _exec_ok(sandbox, ["sh", "-c", _CLEAR, "clear", workdir], "emptying the workspace")
    await sandbox.put(candidate.workspace, workdir)
    if user:
        await _exec_ok(sandbox, ["sh", "-c", _CHOWN, "chown", workdir, str(user)], f"giving the workspace to {user}")
    for local, remote in ((paths.agent_dir, "/logs/agent"), (paths.artifacts_dir, "/logs/artifacts")):
        if local.is_dir() and any(local.iterdir()):
            await sandbox.put(local, remote)
    task = candidate.task
    if task.paths.instruction_file is not None:
        await sandbox.put(task.paths.instruction_file, "/instruction.md")
        return
    with tempfile.TemporaryDirectory(prefix="bf-regrade-") as staging:
        instruction = Path(staging) / "instruction.md"
        instruction.write_text(task.instruction, encoding="utf-8")
        await sandbox.put(instruction, "/instruction.md")


def _seed_env(seed: Any) -> dict[str, str]:
    """The run's ``--seeds`` value goes to the verifier again, as the run engine exported it."""
    return {} if seed is None else {"BENCHFLOW_SEED": str(seed)}


async def _exec_ok(sandbox: Sandbox, argv: list[str], what: str) -> None:
    from benchflow.errors import InfraError

    done = await sandbox.exec(argv, timeout=300)
    if not done.success:
        raise InfraError(f"{what} failed (rc={done.return_code}): "
                         f"{(done.stderr or done.stdout).strip()[-300:]}")


async def regrade_trial(candidate: Candidate, backend: Any, *, reason: str | None,
                        labels: dict[str, str]) -> dict[str, Any]:
    """Regrade one trial and write its ``regrade.json``; returns that document.

    Sandbox and restore failures become a ``verifier_infra`` verifier error in the
    document (never an exception); cancellation stops the sandbox and writes nothing.
    """
    from benchflow.verify import VerifierOutcome, run_verifier

    task, paths = candidate.task, candidate.paths
    started = time.monotonic()
    digest_now = candidate.digest or await asyncio.to_thread(task.digest)
    out_dir = paths.regrade_verifier_dir
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    spec = spec_for_task(task, digest=digest_now, sandbox_user=candidate.config.get("sandbox_user"),
                         base_image_override=candidate.config.get("base_image_override"),
                         labels={**labels, "benchflow.trial": paths.name, "benchflow.task": task.name})
    workdir: str | None = None
    sandbox_id: str | None = None
    stage = "sandbox setup"
    try:
        async with sandbox_session(backend, await fitted(backend, spec)) as session:
            sandbox = session.sandbox
            sandbox_id = sandbox.sandbox_id
            stage = "workspace restore"
            workdir = str(_manifest(paths).get("workdir") or sandbox.workdir)
            await restore(sandbox, candidate, workdir)
            stage = "verifier"
            outcome = await run_verifier(sandbox, task, out_dir, workdir=workdir,
                                         agent_user=candidate.config.get("sandbox_user"), task_name=task.name,
                                         extra_env=_seed_env(candidate.config.get("seed")),
                                         trial_dir=paths.root)  # a judge reads the rollout's own files
    except Exception as exc:  # noqa: BLE001 - whatever breaks is this trial's infra failure, not the batch's
        cause = exc.cause if isinstance(exc, SessionSetupError) else exc
        outcome = VerifierOutcome(error=f"verifier crashed: regrade {stage} failed: {cause}",
                                  error_category="verifier_infra")
    document = _document(candidate, outcome, digest_now, reason, candidate.backend, sandbox_id, workdir,
                         round(time.monotonic() - started, 1))
    if candidate.secrets:
        await asyncio.to_thread(scrub_folder, out_dir, candidate.secrets)
        document = scrub_document(document, candidate.secrets)
    atomic.write_json(paths.regrade, document)
    return document


def _document(candidate: Candidate, outcome: Any, digest_now: str, reason: str | None, backend: str | None,
              sandbox_id: str | None, workdir: str | None, elapsed: float) -> dict[str, Any]:
    original = candidate.config.get("task_digest") or candidate.result.get("task_digest")
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "trial": candidate.paths.name,
        "task_name": candidate.task_name,
        "task_path": str(candidate.task.path),
        "reason": reason,
        "regraded_at": dt.datetime.now(dt.timezone.utc).isoformat(),
        "task_digest_original": original,
        "task_digest_now": digest_now,
        "verifier_changed": None if not original else original != digest_now,
        "original": {"rewards": candidate.result.get("rewards"),
                     "verifier_error": candidate.result.get("verifier_error")},
        "rewards": outcome.rewards,
        "verifier_error": outcome.error,
        "verifier_error_category": outcome.error_category,
        "verifier_timeout_info": outcome.timeout_info,
        "verifier_dir": candidate.paths.regrade_verifier_dir.relative_to(candidate.paths.root).as_posix(),
        "warnings": list(outcome.warnings),
        "sandbox": backend,
        "sandbox_id": sandbox_id,
        "workdir": workdir,
        "elapsed_sec": elapsed,
    }
