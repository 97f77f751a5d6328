"""Daytona sandboxes that outlive a run: ``--keep-sandbox`` and ``bench sandbox create|attach|release``.

A kept sandbox carries the label ``benchflow.kept=true`` (``bench sandbox
cleanup`` leaves it to ``release``, like a kept container) and its
``kept-sandbox.json`` names it by ``sandbox_id``. ``bench sandbox create``
makes one without an owner pid, sets it up, then stops it (a stopped Daytona
sandbox keeps its disk and uses no compute); ``attach`` starts it again.
An interactive shell is refused: Daytona's terminal is a websocket PTY, so
``attach`` takes a command after ``--``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from benchflow.errors import SandboxError

from .. import docker_engine as eng
from ..live_output import relay

KEPT = eng.KEPT


async def create_kept(backend, spec, where) -> dict[str, object]:
    """Build, create and set up a sandbox for ``spec`` that outlives this process, then stop it.

    ``where`` is a callable giving the line that names the Daytona it runs in.
    """
    sandbox = backend.create(spec)
    for owner in (eng.PID, eng.PID_START):
        sandbox.labels.pop(owner, None)
    sandbox.labels[KEPT] = "true"
    await sandbox.start()
    try:
        await sandbox._require().stop()
    finally:
        await sandbox.keep()
        await sandbox.stop()
    return {"sandbox_id": sandbox.sandbox_id, "name": sandbox.name, "image": "built by Daytona",
            "where": where(), "built": True, "network_note": None}


def attach(record: Mapping[str, object], command: list[str]) -> int:
    """Run ``command`` as root in the kept sandbox with live output (starting it if stopped)."""
    if not command:
        raise SandboxError("the daytona sandbox has no interactive shell here; pass a command after --")
    return asyncio.run(_run_live(str(record["sandbox_id"]), command))


async def _run_live(sandbox_id: str, command: list[str]) -> int:
    from .sandbox import DaytonaSandbox

    sandbox = await DaytonaSandbox.attached(sandbox_id)
    try:
        return await relay(await sandbox.exec_stream(command))
    finally:
        await sandbox.stop()


def release(backend, record: Mapping[str, object]) -> None:
    """Delete the kept sandbox with ``backend``; nothing happens when it is already gone."""
    failed = backend.remove([str(record["sandbox_id"])])
    if failed:
        raise SandboxError(f"could not delete kept Daytona sandbox {record['sandbox_id']}: "
                           f"{next(iter(failed.values()))}")
