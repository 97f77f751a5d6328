"""Fetch only some folders of a git repository at one commit or ref, with the ``git`` CLI.

A sparse, shallow fetch of exactly the commit asked for (``git fetch --depth 1
origin <sha|ref>``, blobs outside the sparse paths filtered when the server can);
a server that refuses a bare SHA gets a full fetch instead. The caller checks
that the commit it got is the one pinned.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from benchflow.errors import DatasetError

_TIMEOUT_SEC = 600


def _git(args: list[str], cwd: Path, what: str) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}
    try:
        done = subprocess.run(["git", "-c", "advice.detachedHead=false", "-c", "protocol.ext.allow=never",
                               *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=_TIMEOUT_SEC)
    except FileNotFoundError:
        raise DatasetError(f"{what}: git is not installed; install git (apt-get install git) to fetch "
                           "tasks that are not in the cache yet") from None
    except subprocess.TimeoutExpired:
        raise DatasetError(f"{what}: git {args[0]} took over {_TIMEOUT_SEC} s") from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise DatasetError(f"{what}: git {args[0]} failed: {tail}")
    return done.stdout.strip()


def sparse_checkout(url: str, ref: str, paths: list[str], dest: Path) -> str:
    """Check out ``paths`` of ``url`` at ``ref`` (a commit SHA, branch or tag) into ``dest``.

    Returns:
        The full SHA of the commit checked out.

    Raises:
        DatasetError: git missing, the repository or ref unreachable.
    """
    what = f"{url}@{ref}"
    if url.startswith(("-", "ext::")) or ref.startswith("-"):
        raise DatasetError(f"{what}: not a repository URL and ref git may be given")  # no option injection
    if shutil.which("git") is None:
        _git(["--version"], dest, url)  # raises the "install git" error
    dest.mkdir(parents=True, exist_ok=True)
    _git(["init", "-q"], dest, what)
    _git(["remote", "add", "origin", url], dest, what)
    wanted = [p.strip("/") for p in paths if p.strip("/")]
    if wanted:
        _git(["sparse-checkout", "set", "--no-cone", *[f"/{p}/" for p in wanted]], dest, what)
    try:
        _git(["fetch", "-q", "--depth", "1", "--filter=blob:none", "origin", ref], dest, what)
    except DatasetError:
        # servers that refuse a bare SHA: fetch everything, then pick the commit
        _git(["fetch", "-q", "--filter=blob:none", "origin"], dest, what)
        _git(["checkout", "-q", ref], dest, what)
    else:
        _git(["checkout", "-q", "FETCH_HEAD"], dest, what)
    return _git(["rev-parse", "HEAD"], dest, what)
