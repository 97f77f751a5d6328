"""``bench hub publish``: a folder of tasks as an immutable dataset version on a hub.

Each task is digested by the same code as ``bench tasks digest``, packed as a
reproducible tar.gz (:mod:`.archives`), uploaded by content (``PUT
/api/blobs/sha256:…``; one the hub already holds is sent again, cheaply
deduplicated there), then the version is created in one request naming each
task's digest and archive. The hub unpacks every archive, recomputes the
digest and refuses a mismatch or a version that already exists.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.errors import UserError

from .archives import pack
from .client import HubClient
from .names import TASK_NAME, DatasetRef


@dataclass
class Published:
    name: str
    url: str
    tasks: list[dict[str, str]]


def _tasks(tasks_dir: Path) -> list[Path]:
    from benchflow.tasks.discovery import discover_tasks, is_task_dir

    if not tasks_dir.is_dir():
        raise UserError(f"{tasks_dir}: no such folder; give a folder holding one folder per task")
    if is_task_dir(tasks_dir):
        raise UserError(f"{tasks_dir}: this is one task; give the folder that holds the task folders")
    tasks = discover_tasks(tasks_dir)
    if not tasks:
        raise UserError(f"{tasks_dir}: holds no task (a task folder holds task.md or task.toml)")
    for task in tasks:
        if not TASK_NAME.match(task.name):
            raise UserError(f"{task}: a published task's folder name is letters, digits, '.', '_' and '-'; "
                            "rename it")
    return tasks


def publish(client: HubClient, tasks_dir: Path, ref: DatasetRef, meta: dict[str, Any],
            progress=lambda _line: None) -> Published:
    """Publish every task under ``tasks_dir`` as ``ref``.

    Raises:
        UserError: no tasks, a task name the hub cannot take.
        HubRefused: the hub refused (exists already, bad token, digest mismatch).
    """
    from benchflow.tasks.digest import task_digest

    tasks = _tasks(tasks_dir)
    existing = client.request("GET", f"/api/datasets/{ref.path}?per_page=1", ok=(200, 404))
    if existing.status_code == 200:
        raise UserError(f"{ref} is already published on {client.url}; versions are immutable, publish a new "
                        "version")
    entries = []
    with tempfile.TemporaryDirectory(prefix="bench-publish-") as tmp:
        for task in tasks:
            digest = task_digest(task)
            archive = Path(tmp) / f"{task.name}.tar.gz"
            with archive.open("wb") as out:
                pack(task, out)
            key = "sha256:" + hashlib.sha256(archive.read_bytes()).hexdigest()
            client.upload("PUT", f"/api/blobs/{key}", archive)
            archive.unlink()
            entries.append({"name": task.name, "digest": digest, "archive": key})
            progress(f"{task.name} {digest}")
    body = {"name": str(ref), **meta, "tasks": entries}
    answer = client.request("POST", "/api/datasets", write=True, json=body).json()
    return Published(name=answer["name"], url=answer["url"], tasks=entries)
