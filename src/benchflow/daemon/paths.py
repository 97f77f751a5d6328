"""Where this user's daemon lives: a private folder holding its socket and its state file.

``$XDG_RUNTIME_DIR/benchflow`` when the runtime dir exists (a per-user tmpfs
that systemd makes 0700), else ``<cache>/daemon``. Either way the folder is
created 0700 and refused when it belongs to someone else or others may enter
it, so no other user can plant or reach the socket.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from benchflow.errors import UserError
from benchflow.util.cache_dir import cache_root


class DaemonFolderError(UserError):
    """The daemon's folder is not private to this user."""

    category = "daemon_folder"


def folder() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) / "benchflow" if runtime and Path(runtime).is_dir() else cache_root() / "daemon"
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = base.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise DaemonFolderError(f"{base}: the daemon's folder must be a directory of yours with mode 0700 "
                                f"(chmod 700 {base}, or remove it)")
    return base


def socket_path() -> Path:
    return folder() / "daemon.sock"


def state_path() -> Path:
    """``daemon.json``: pid and start time of the running daemon (no secrets)."""
    return folder() / "daemon.json"
