"""Library side of ``bench sandbox create|list|attach|release``.

A kept sandbox is described by the trial's ``kept-sandbox.json`` (written by
the run engine)::

    {"schema_version": 1, "backend": "docker", "sandbox_id": "<container id>",
     "docker_host": null, "trial": "<trial dir name>", "created_at": "<iso>"}

``docker_host`` null means the local engine.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from benchflow.errors import ConfigError, SandboxError, UserError

from . import docker_engine as eng
from .from_task import spec_for_task

DOCKER_BACKENDS = ("docker", "remote-docker")
KEPT_FILE = "kept-sandbox.json"



@dataclass
class Created:
    sandbox_id: str
    name: str
    image: str
    backend: str
    docker_host: str | None
    built: bool
    network_note: str | None


def create_from_task_dir(task_dir: Path, backend: str = "docker") -> Created:
    """Build the task's image (if needed) and create its container, not started.

    The container carries no owner pid: it outlives this command, and
    ``bench sandbox cleanup`` removes it after ``--max-age`` (or by ``--id``).
    """
    from benchflow.sandbox import get_backend
    from benchflow.tasks import load_task

    if backend not in DOCKER_BACKENDS:
        raise ConfigError(f"--sandbox {backend}: bench sandbox create supports "
                          f"{', '.join(DOCKER_BACKENDS)}")
    task = load_task(task_dir)
    sandbox = get_backend(backend).create(spec_for_task(task), detached=True)

    async def go() -> str:
        await sandbox.build()
        return await sandbox.create()

    container = asyncio.run(go())
    info = eng.client(sandbox.url).inspect_container(container)
    return Created(sandbox_id=container, name=info["Name"].lstrip("/"), image=sandbox.image or "",
                   backend=backend, docker_host=sandbox.url, built=bool(sandbox.build_log),
                   network_note=sandbox.network_note)


@dataclass
class Kept:
    path: Path
    sandbox_id: str
    docker_host: str | None
    backend: str
    trial: str


def read_kept(trial: Path) -> Kept:
    """The kept sandbox of a trial folder (or of a kept-sandbox.json given directly).

    Raises:
        UserError: no such file, or one that does not parse.
    """
    path = Path(trial)
    if path.is_dir():
        path = path / KEPT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: not found; give the trial folder of a run with --keep-sandbox "
                        "(or its kept-sandbox.json)") from None
    except ValueError as exc:
        raise UserError(f"{path}: not valid JSON ({exc}); it should be written by --keep-sandbox") from None
    if not isinstance(data, dict) or not data.get("sandbox_id"):
        raise UserError(f"{path}: field sandbox_id is missing; the file should be written by --keep-sandbox")
    backend = data.get("backend", "docker")
    if backend not in DOCKER_BACKENDS:
        raise UserError(f"{path}: backend {backend!r} has no attach/release in this build")
    return Kept(path=path, sandbox_id=str(data["sandbox_id"]), docker_host=data.get("docker_host"),
                backend=backend, trial=str(data.get("trial") or path.parent.name))


def _container(kept: Kept) -> dict:
    from docker.errors import NotFound

    api = eng.client(kept.docker_host)
    try:
        return api.inspect_container(kept.sandbox_id)
    except NotFound:
        raise SandboxError(f"{kept.path}: sandbox {kept.sandbox_id[:12]} no longer exists "
                           "(released or cleaned up)") from None


def attach(trial: Path, command: list[str]) -> int:
    """Run ``command`` as root in the kept sandbox with live output; its exit status.

    Without a command, replaces this process with an interactive root shell
    (``docker exec -it``, the one place a terminal is needed).
    """
    kept = read_kept(trial)
    info = _container(kept)
    api = eng.client(kept.docker_host)
    if not info.get("State", {}).get("Running"):
        api.start(kept.sandbox_id)
    if not command:
        import os
        import shutil

        docker_cli = shutil.which("docker")
        if docker_cli is None:
            raise SandboxError("an interactive shell needs the docker CLI; pass a command after -- instead")
        host = ["-H", kept.docker_host] if kept.docker_host else []
        shell = "command -v bash >/dev/null 2>&1 && exec bash -l || exec sh -l"
        os.execv(docker_cli, [docker_cli, *host, "exec", "-it", "-u", "root", kept.sandbox_id,
                              "sh", "-c", shell])
    return asyncio.run(_run_live(api, kept.sandbox_id, command))


async def _run_live(api, container: str, command: list[str]) -> int:
    from .docker_stream import open_process

    process = await open_process(api, container, command, user="root", env=None, cwd=None)
    process.stdin.close()

    async def copy(reader, out) -> None:
        while chunk := await reader.read(65536):
            out.write(chunk)
            out.flush()

    await asyncio.gather(copy(process.stdout, sys.stdout.buffer), copy(process.stderr, sys.stderr.buffer))
    return await process.wait()


def release(trial: Path) -> str:
    """Delete the kept sandbox and its kept-sandbox.json; returns the container id."""
    from docker.errors import NotFound

    kept = read_kept(trial)
    try:
        eng.client(kept.docker_host).remove_container(kept.sandbox_id, force=True, v=True)
    except NotFound:
        pass
    kept.path.unlink(missing_ok=True)
    return kept.sandbox_id
