"""Where local sandboxes keep their state, and which of them still have a live owner.

Each sandbox is a folder ``<cache>/local/sandboxes/<id>`` with an
``owner.json`` (id, task name, owning pid and its start time, labels, the
key of the cached image under ``<cache>/local/images`` it uses, if any, and
its user namespace, ``userns``, once it runs). Its
processes die with the owner (``--die-with-parent``/``--kill-child``), so what
a ``kill -9`` of BenchFlow leaves behind is the folder (and, if the kill hit a
sandbox process while it started, its namespace init), which ``bench sandbox
cleanup`` can list and remove with these helpers.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Mapping
from pathlib import Path

from benchflow.util import cache_dir

cache_root = cache_dir.cache_root


def sandboxes_dir() -> Path:
    return cache_root() / "local" / "sandboxes"


def start_ticks(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_alive(owner: Mapping[str, object]) -> bool:
    """Whether the process that created a sandbox (per its ``owner.json``) still runs."""
    pid = owner.get("pid")
    return isinstance(pid, int) and start_ticks(pid) is not None and start_ticks(pid) == owner.get("start_ticks")


def list_sandboxes() -> list[dict[str, object]]:
    """Every local sandbox state folder with its ``owner.json`` and whether its owner lives."""
    out = []
    root = sandboxes_dir()
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            owner = json.loads((entry / "owner.json").read_text())
        except (OSError, ValueError):
            owner = {"id": entry.name}
        out.append({**owner, "path": str(entry), "alive": owner_alive(owner)})
    return out


def sweep(state: Path) -> int:
    """SIGKILL every process of the sandbox whose state folder is ``state``. Returns how many were killed.

    Those are the processes in its user namespace (named in ``owner.json`` as ``userns``), which
    every sandbox process joins, and those whose command line names ``state`` (its namespace
    holder). Killing the owner normally takes them all down; this catches what outlived it (the
    owner was killed while a process started).
    """
    needle = str(state).encode() + b"/"
    try:
        userns = json.loads((state / "owner.json").read_text()).get("userns")
    except (OSError, ValueError):
        userns = None
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            ours = userns is not None and os.readlink(f"/proc/{entry}/ns/user") == userns
            if ours or needle in Path(f"/proc/{entry}/cmdline").read_bytes():
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
        except (OSError, ProcessLookupError):
            continue
    return killed


def remove_sandbox(sandbox_id: str) -> bool:
    """Kill what is left of one local sandbox and remove its state. True when removed."""
    target = sandboxes_dir() / sandbox_id
    if "/" in sandbox_id or not target.is_dir():
        return False
    sweep(target)
    shutil.rmtree(target, ignore_errors=True)
    return not target.exists()
