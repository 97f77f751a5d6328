"""Apple containers that outlive a run: ``--keep-sandbox`` and ``bench sandbox create|attach|release``.

``bench sandbox create`` builds the image and makes the container with
``container create``, not started, labelled ``benchflow.kept=true`` and
without an owner pid (``bench sandbox cleanup`` leaves it to ``release`` or
``--id``); its first start sets it up as a trial's sandbox is
(:func:`.sandbox.create_args`), and ``attach`` waits for that setup's ready
line in ``container logs``.

A trial's container (``--keep-sandbox``) was made with its run's owner labels,
and the CLI cannot change labels on an existing container (nor rename one), so
it is marked kept on this machine instead: a file
``<BenchFlow cache>/apple-container/kept/<id>.json`` (:func:`mark`), read by
``bench sandbox list|cleanup`` (:func:`marked`) and removed with the container
(:func:`forget`). The containers are this Mac's too, so the mark is where they
are; a cleanup run with another ``BENCHFLOW_CACHE``, or after that folder was
deleted, no longer sees the mark and deletes the container as its dead run's.

``attach`` starts a stopped container (``container start``), then runs the
command as root through ``container exec``, or, without one, opens a root
shell with ``container exec --interactive --tty``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from benchflow.errors import SandboxError
from benchflow.util import atomic
from benchflow.util.cache_dir import cache_root

from . import cli as cli
from . import exec as ex
from .. import docker_engine as eng
from ..docker_setup import parse_ready

SETUP_WAIT_SEC = 120.0
"""How long ``attach`` waits for a created container's first setup (``--sandbox-setup-timeout``'s default)."""
POLL_SEC = 0.2
SHELL = "command -v bash >/dev/null 2>&1 && exec bash -l || exec sh -l"
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def marks_dir() -> Path:
    return cache_root() / "apple-container" / "kept"


def _mark_path(sandbox_id: str) -> Path | None:
    """The mark file of ``sandbox_id``; None for an id that is no file name (one read from a user's file)."""
    return marks_dir() / f"{sandbox_id}.json" if _SAFE_ID.fullmatch(sandbox_id) else None


def mark(sandbox_id: str, labels: Mapping[str, str]) -> None:
    """Mark the container ``sandbox_id`` kept on this machine."""
    path = _mark_path(sandbox_id)
    if path is None:
        raise SandboxError(f"apple container id {sandbox_id!r} cannot be marked kept")
    atomic.write_json(path, {"sandbox_id": sandbox_id, "job": labels.get(eng.JOB), "trial": labels.get(eng.TRIAL),
                             "kept_at": datetime.now(UTC).isoformat()})


def marked() -> set[str]:
    """The ids marked kept on this machine."""
    try:
        return {path.stem for path in marks_dir().glob("*.json")}
    except OSError:
        return set()


def forget(sandbox_id: str) -> None:
    path = _mark_path(sandbox_id)
    if path is not None:
        path.unlink(missing_ok=True)


async def create_kept(backend, spec) -> dict[str, object]:
    """Build the image (if needed) and create a container for ``spec`` that outlives this process, not started."""
    sandbox = backend.create(spec)
    for owner in (eng.PID, eng.PID_START):
        sandbox.labels.pop(owner, None)
    sandbox.labels[eng.KEPT] = "true"
    await sandbox.create_unstarted()
    await sandbox.keep()
    await sandbox.stop()  # lets go of it
    note = ("an allowlist task's kept sandbox has no network: the egress proxy runs only during a trial"
            if spec.network_mode == "allowlist" else None)
    return {"sandbox_id": sandbox.sandbox_id, "name": sandbox.name, "image": sandbox.image or "",
            "where": None, "built": bool(sandbox.build_log), "network_note": note}


def attach(record: Mapping[str, object], command: list[str]) -> int:
    """Run ``command`` as root in the kept container with live output and return its status (starting the
    container when it is stopped); without a command, replace this process with a root shell in it."""
    sandbox_id = str(record["sandbox_id"])
    found = cli.snapshots([sandbox_id])
    if not found:
        raise SandboxError(f"apple container {sandbox_id} no longer exists (released or cleaned up)")
    if cli.state(found[0]) != "running":
        done = cli.run(["start", sandbox_id])
        if done.returncode != 0:
            raise SandboxError(f"apple container {sandbox_id} did not start: {cli.error_line(done)}")
    if cli.labels(found[0]).get(eng.KEPT) == "true":
        wait_set_up(sandbox_id)
    if not command:
        if not sys.stdin.isatty():
            raise SandboxError("an interactive shell needs a terminal; pass a command after -- instead")
        argv, env = ex.command(sandbox_id, ["sh", "-c", SHELL], interactive=True, tty=True)
        os.execve(argv[0], argv, env)
    argv, env = ex.command(sandbox_id, command)
    return subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, check=False).returncode


def wait_set_up(sandbox_id: str, timeout: float = SETUP_WAIT_SEC) -> None:
    """Wait until the setup of a container made by ``bench sandbox create`` printed its ready line.

    Raises:
        SandboxError: the setup failed, or did not finish within ``timeout``.
    """
    deadline = time.monotonic() + timeout
    while True:
        done = cli.run(["logs", sandbox_id])
        ready = parse_ready((done.stdout or b"").decode(errors="replace")) if done.returncode == 0 else None
        if ready is not None:
            status, output = ready
            if status != 0:
                raise SandboxError(f"apple container {sandbox_id}: sandbox setup failed (rc={status}): "
                                   f"{output.strip()[-500:]}")
            return
        if time.monotonic() > deadline:
            said = cli.error_line(done) if done.returncode != 0 else "no ready line in `container logs`"
            raise SandboxError(f"apple container {sandbox_id}: sandbox setup did not finish within {timeout:g}s "
                               f"({said})")
        time.sleep(POLL_SEC)


def release(backend, record: Mapping[str, object]) -> None:
    """Delete the kept container with ``backend`` (its mark with it); nothing happens when it is already gone."""
    sandbox_id = str(record["sandbox_id"])
    failed = backend.remove([sandbox_id])
    if failed:
        raise SandboxError(f"could not delete kept apple container {sandbox_id}: {failed[sandbox_id]}")
