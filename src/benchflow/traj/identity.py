"""Who contributes a trajectory: flags first, else the local git configuration.

``--github-id`` falls back to ``git config github.user``; ``--email`` to
``git config user.email``; with ``--repo`` the source id is the session's
repository (``owner/name`` of its ``origin`` remote), else ``--source-id``,
else the GitHub id. Nothing is asked over the network.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

_REMOTE = re.compile(r"(?:[:/])([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class Contributor:
    github_id: str | None
    email: str | None
    source_id: str | None
    repo: str | None

    def as_dict(self) -> dict[str, str | None]:
        return asdict(self)


def _git(cwd: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = out.stdout.strip()
    return value if out.returncode == 0 and value else None


def repo_of(folder: Path) -> str | None:
    """``owner/name`` of ``folder``'s git ``origin`` remote (credentials in the URL never kept)."""
    url = _git(folder, "remote", "get-url", "origin")
    match = _REMOTE.search(url or "")
    return f"{match[1]}/{match[2]}" if match else None


def contributor(where: Path, github_id: str | None, email: str | None, source_id: str | None,
                use_repo: bool) -> Contributor:
    folder = where if where.is_dir() else where.parent
    github_id = github_id or _git(folder, "config", "github.user")
    email = email or _git(folder, "config", "user.email")
    repo = repo_of(folder) if use_repo else None
    return Contributor(github_id=github_id, email=email, source_id=source_id or repo or github_id, repo=repo)
