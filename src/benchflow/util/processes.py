"""Whether a process recorded by pid (a job's lock, a daemon's state file) still runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def pid_alive(pid: Any) -> bool:
    """True while ``pid`` runs; a zombie (exited, not yet reaped by its parent) counts as gone.

    A process of another user that we may not signal counts as running."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text(errors="replace").rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
