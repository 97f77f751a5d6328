"""The sandboxes the ``local`` backend made: its ``leftovers``, ``remove`` and ``exists``.

One per state folder under ``<cache>/local/sandboxes`` (:mod:`.local.state`);
its ``owner.json`` names the owning process. A ``kill -9`` of the owner leaves
the folder (and, if the kill landed as an exec started, its namespace init,
which removal sweeps). A folder without a readable ``owner.json`` has no known
owner, so its age governs it like an unowned container's.
"""

from __future__ import annotations

from pathlib import Path

from ..base import OwnedSandbox
from ..docker_engine import JOB, TASK, TRIAL  # the ownership label names every backend records
from . import state as local_state

ENGINE = "local"


def list_owned(backend: str, owner: str | None = None) -> list[OwnedSandbox]:
    """The state folders of local sandboxes (with ``owner``, only the job ``owner``'s)."""
    rows = []
    for entry in local_state.list_sandboxes():
        path = Path(str(entry["path"]))
        pid = entry.get("pid")
        alive = bool(entry["alive"]) if isinstance(pid, int) else None
        who = "none" if alive is None else (f"live pid {pid}" if alive else f"gone (pid {pid})")
        labels = entry.get("labels") if isinstance(entry.get("labels"), dict) else {}
        if owner is not None and labels.get(JOB) != owner:
            continue
        created = entry.get("created")
        if not isinstance(created, (int, float)):
            try:
                created = path.stat().st_mtime
            except OSError:
                created = 0.0
        key = entry.get("image")
        rows.append(OwnedSandbox(
            id=path.name, name=path.name, sandbox=backend, engine=ENGINE, state="running" if alive else "stale",
            image=f"local:{key}" if key else "host", created=float(created),
            job=labels.get(JOB), trial=labels.get(TRIAL),
            task=labels.get(TASK) or entry.get("name"), owner=who, owner_alive=alive, kept=False))
    return rows


def remove(ids: list[str]) -> dict[str, str]:
    """Kill what is left of each sandbox and delete its state; id -> reason for those that stay."""
    failed = {}
    for sandbox_id in ids:
        if not local_state.remove_sandbox(sandbox_id) and exists(sandbox_id):
            failed[sandbox_id] = f"could not remove {local_state.sandboxes_dir() / sandbox_id}"
    return failed


def exists(sandbox_id: str) -> bool:
    return "/" not in sandbox_id and (local_state.sandboxes_dir() / sandbox_id).exists()
