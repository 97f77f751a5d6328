"""Library side of ``bench sandbox create|attach|release`` (what a backend with ``keep`` offers).

A kept sandbox is described by the trial's ``kept-sandbox.json`` (written by
the run engine from the sandbox's ``keep()``), for example on Docker::

    {"schema_version": 1, "backend": "docker", "sandbox_id": "<container id>",
     "docker_host": null, "trial": "<trial dir name>", "created_at": "<iso>"}

``backend`` picks the backend that attaches to and releases it; the other
fields are that backend's.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

from benchflow.errors import ConfigError, SandboxError, UserError

from . import get_backend
from .fit import fit
from .from_task import spec_for_task

KEPT_FILE = "kept-sandbox.json"
DEFAULT_BACKEND = "docker"
"""The backend of a kept-sandbox.json written before the file named one."""


@dataclass
class Created:
    sandbox_id: str
    name: str
    image: str
    backend: str
    where: str | None
    """Where it lives when that is not the backend's usual place (e.g. a remote engine's URL)."""
    built: bool
    network_note: str | None


def _keeping_backend(name: str, what: str):
    backend = get_backend(name)
    if not backend.capabilities.keep:
        raise ConfigError(f"--sandbox {name}: {what} needs a sandbox that can outlive a run, and {name} "
                          f"cannot keep one: {backend.no_keep_reason}")
    return backend


def create_from_task_dir(task_dir: Path, backend: str = DEFAULT_BACKEND) -> Created:
    """Build the task's image (if needed) and create its sandbox, not started.

    The sandbox carries no owner pid: it outlives this command, and
    ``bench sandbox cleanup`` removes it after ``--max-age`` (or by ``--id``).
    """
    from benchflow.tasks import load_task

    chosen = _keeping_backend(backend, "bench sandbox create")
    spec = spec_for_task(load_task(task_dir))
    made = asyncio.run(chosen.create_kept(fit(chosen, spec).apply(spec)))
    return Created(sandbox_id=str(made["sandbox_id"]), name=str(made["name"]), image=str(made["image"]),
                   backend=backend, where=made.get("where"), built=bool(made["built"]),
                   network_note=made.get("network_note"))


@dataclass
class Kept:
    path: Path
    record: dict
    backend: str
    trial: str

    @property
    def sandbox_id(self) -> str:
        return str(self.record["sandbox_id"])


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
    backend = str(data.get("backend") or DEFAULT_BACKEND)
    try:
        keeps = get_backend(backend).capabilities.keep
    except ConfigError:
        keeps = False
    if not keeps:
        raise UserError(f"{path}: backend {backend!r} has no attach/release in this build")
    return Kept(path=path, record=data, backend=backend, trial=str(data.get("trial") or path.parent.name))


def attach(trial: Path, command: list[str]) -> int:
    """Run ``command`` as root in the kept sandbox with live output; its exit status.

    Without a command, an interactive root shell (the backend's own terminal).
    """
    kept = read_kept(trial)
    try:
        return get_backend(kept.backend).attach(kept.record, command)
    except SandboxError as exc:
        raise SandboxError(f"{kept.path}: {exc}") from exc


def release(trial: Path) -> str:
    """Delete the kept sandbox and its kept-sandbox.json; returns the sandbox id."""
    kept = read_kept(trial)
    get_backend(kept.backend).release(kept.record)
    kept.path.unlink(missing_ok=True)
    return kept.sandbox_id
