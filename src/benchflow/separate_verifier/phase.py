"""A separate verifier sandbox (``verifier.sandbox_mode = "separate"``, ``--verifier-sandbox separate``).

After the agent phase the task's workspace is frozen into the trial's
``evidence/`` (:func:`benchflow.jobs.workspace.freeze_workspace`). A fresh sandbox is then made
from the verifier image (``verifier.sandbox`` when the task gives one, else the
task's own image, single-container) and receives only: the frozen workspace at
the same path, the declared artifacts outside the workspace at their paths,
``/logs/artifacts``, and each ``--separate-verifier-include`` path. Nothing else
of the agent's sandbox — its processes, its ``/tmp``, its home — reaches the
verifier. The verifier runs there as it would in the task's sandbox.
"""

from __future__ import annotations

import dataclasses
import posixpath
import tempfile
import time
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError
from benchflow.jobs.layout import TrialPaths
from benchflow.jobs.phases import TrialState
from benchflow.jobs.trial_request import TrialRequest, seed_env
from benchflow.jobs.workspace import freeze_workspace
from benchflow.sandbox.base import Sandbox
from benchflow.sandbox.from_task import spec_for_task
from benchflow.sandbox.session import SessionSetupError, sandbox_session

AGENT_ARTIFACTS = "/logs/artifacts"
_CLEAR = 'mkdir -p "$0" && find "$0" -mindepth 1 -delete'


def _view(req: TrialRequest, workdir: str) -> Any:
    """The task as the verifier sandbox is built from it: the verifier's sandbox settings (or the
    task's, without setup commands, healthcheck or services), the task's workspace path."""
    task = req.task
    own = task.config.verifier.sandbox
    base = own if own is not None else task.config.sandbox.model_copy(
        update={"setup_commands": [], "healthcheck": None, "mcp_servers": []})
    config = task.config.model_copy(update={"sandbox": base.model_copy(update={"workdir": workdir})})
    return dataclasses.replace(task, config=config, paths=dataclasses.replace(task.paths, compose_file=None))


def _spec(req: TrialRequest, view: Any, trial: str) -> Any:
    spec = spec_for_task(view, digest=req.digest, sandbox_user=req.agent_user,
                         base_image_override=req.spec.base_image_override, ca_bundle=req.ca_bundle,
                         labels={**req.labels, "benchflow.trial": trial, "benchflow.task": req.task.name,
                                 "benchflow.role": "verifier"})
    if req.fit is not None and req.task.config.verifier.sandbox is None:
        spec = req.fit.apply(spec)  # the task's own image, as the plan fitted it
    return spec


def _carried(req: TrialRequest, workdir: str) -> list[str]:
    """Sandbox paths copied over besides the workspace: declared artifacts outside it, the agent's
    artifacts folder, and the run's includes (each once, in order)."""
    paths = [AGENT_ARTIFACTS]
    for entry in req.task.config.artifacts:
        source = entry if isinstance(entry, str) else entry.source
        remote = source if source.startswith("/") else posixpath.join(workdir, source)
        if not (remote + "/").startswith(workdir.rstrip("/") + "/"):
            paths.append(posixpath.normpath(remote))
    paths += [posixpath.normpath(p) for p in req.spec.verifier.include]
    return list(dict.fromkeys(paths))


async def _hand_over(task_sandbox: Sandbox, verifier_sandbox: Sandbox, remotes: list[str], workdir: str,
                     paths: TrialPaths, staging: Path) -> list[str]:
    """Copy the frozen workspace and ``remotes`` into the verifier sandbox; notes of what was missing."""
    notes = []
    cleared = await verifier_sandbox.exec(["sh", "-c", _CLEAR, workdir], timeout=120)
    if not cleared.success:
        raise BenchError(f"separate verifier: could not empty {workdir}: {cleared.stderr.strip()[-200:]}")
    if paths.evidence_workspace.is_dir() and any(paths.evidence_workspace.iterdir()):
        await verifier_sandbox.put(paths.evidence_workspace, workdir)
    for i, remote in enumerate(remotes):
        local = staging / str(i) / (posixpath.basename(remote) or "root")
        local.parent.mkdir(parents=True)
        try:
            await task_sandbox.get(remote, local)
        except (FileNotFoundError, BenchError):
            notes.append(f"separate verifier: {remote} was not in the task's sandbox")
            continue
        if local.exists():
            await verifier_sandbox.put(local, remote)
    return notes


async def separate_verifier_phase(req: TrialRequest, sandbox: Sandbox, paths: TrialPaths, state: TrialState,
                                  timing: dict[str, float]) -> None:
    """Freeze the workspace, then verify it in a fresh sandbox of its own (stopped afterwards)."""
    from benchflow.verify import run_verifier
    from benchflow.verify.runner import VerifierOutcome

    t = time.monotonic()
    workdir = sandbox.workdir
    await freeze_workspace(sandbox, workdir, paths)
    req.on_phase(paths.name, "verifier")
    view = _view(req, workdir)
    try:
        async with sandbox_session(req.backend, _spec(req, view, paths.name)) as session:
            with tempfile.TemporaryDirectory(prefix="benchflow-verifier-") as tmp:
                notes = await _hand_over(sandbox, session.sandbox, _carried(req, workdir), workdir, paths,
                                         Path(tmp))
            state.verifier = await run_verifier(
                session.sandbox, view, paths.verifier_dir, workdir=workdir, agent_user=req.agent_user,
                task_name=req.task.name, extra_env={**state.verifier_env, **seed_env(req.seed)},
                trial_dir=paths.root, gateway=req.models.gateway if req.models is not None else None)
            state.verifier.warnings.extend(notes)
    except (SessionSetupError, BenchError) as exc:
        cause = exc.cause if isinstance(exc, SessionSetupError) else exc
        state.verifier = VerifierOutcome(error=f"verifier crashed: separate verifier sandbox: {cause}",
                                         error_category="verifier_infra")
    if state.verifier.copy_out:
        state.copy_out_info["verifier"] = state.verifier.copy_out
    timing["verifier"] = time.monotonic() - t
