"""Sandboxes that outlive a run on a Docker engine: ``bench sandbox create|attach|release``.

A kept sandbox is named by its ``kept-sandbox.json`` record (``sandbox_id`` and
``docker_host``, null for the local engine), written by ``DockerSandbox.keep()``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from benchflow.errors import SandboxError

from .. import docker_engine as eng


async def create_kept(sandbox) -> dict[str, object]:
    """Build the image (if needed) and create ``sandbox``'s container, not started."""
    await sandbox.build()
    container = await sandbox.create()
    info = await eng.call(eng.client(sandbox.url).inspect_container, container)
    return {"sandbox_id": container, "name": info["Name"].lstrip("/"), "image": sandbox.image or "",
            "where": sandbox.url, "built": bool(sandbox.build_log), "network_note": sandbox.network_note}


def _container(record: Mapping[str, object]) -> dict:
    from ..engine_api import NotFound

    sandbox_id = str(record["sandbox_id"])
    try:
        return eng.client(record.get("docker_host")).inspect_container(sandbox_id)
    except NotFound:
        raise SandboxError(f"sandbox {sandbox_id[:12]} no longer exists (released or cleaned up)") from None


def attach(record: Mapping[str, object], command: list[str]) -> int:
    """Run ``command`` as root in the kept container with live output; its exit status.

    Without a command, replaces this process with an interactive root shell
    (``docker exec -it``, the one place a terminal is needed).
    """
    host = record.get("docker_host")
    sandbox_id = str(record["sandbox_id"])
    info = _container(record)
    api = eng.client(host)
    if not info.get("State", {}).get("Running"):
        api.start(sandbox_id)
    if not command:
        import os
        import shutil

        docker_cli = shutil.which("docker")
        if docker_cli is None:
            raise SandboxError("an interactive shell needs the docker CLI; pass a command after -- instead")
        where = ["-H", str(host)] if host else []
        shell = "command -v bash >/dev/null 2>&1 && exec bash -l || exec sh -l"
        os.execv(docker_cli, [docker_cli, *where, "exec", "-it", "-u", "root", sandbox_id, "sh", "-c", shell])
    return asyncio.run(_run_live(api, sandbox_id, command))


async def _run_live(api, container: str, command: list[str]) -> int:
    from .stream import open_process

    from ..live_output import relay

    return await relay(await open_process(api, container, command, user="root", env=None, cwd=None))


def release(record: Mapping[str, object]) -> None:
    """Force-remove the kept container (with the rest of its multi-service pod); nothing happens when
    it is already gone."""
    from .leftovers import remove

    failed = remove(record.get("docker_host"), [str(record["sandbox_id"])])  # type: ignore[arg-type]
    if failed:
        raise SandboxError(f"could not remove kept sandbox {str(record['sandbox_id'])[:12]}: "
                           f"{next(iter(failed.values()))}")
