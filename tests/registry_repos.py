"""Local git repositories of fixture tasks and a registry file pinning them (no network)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from benchflow.tasks.digest import task_digest
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


def git(repo: Path, *args: str) -> str:
    import os

    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True,
                          env={**os.environ, **GIT_ENV})
    return done.stdout.strip()


def task_repo(root: Path, name: str, tasks: list[str], *, folder: str = "tasks") -> tuple[Path, str]:
    """A git repository ``root/name`` holding ``folder/<task>`` for each task, one commit; (repo, sha)."""
    repo = root / name
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for task in tasks:
        make_task(repo / folder, task, solve=WRITE_HELLO, test=PASS_IF_HELLO, prompt=f"Do task {task}.")
    (repo / "README.md").write_text("not a task\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tasks")
    return repo, git(repo, "rev-parse", "HEAD")


def commit_all(repo: Path, message: str = "change") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def entry(repo: Path, sha: str, name: str, version: str, tasks: list[str], *, folder: str = "tasks",
          digests: dict[str, str] | None = None, **extra: object) -> dict:
    """A registry entry pinning ``tasks`` of ``repo`` at ``sha`` (digests from the working tree)."""
    url = repo.resolve().as_uri()
    rows = [{"name": t, "git_url": url, "git_commit_id": sha, "path": f"{folder}/{t}",
             "digest": (digests or {}).get(t) or task_digest(repo / folder / t)} for t in tasks]
    return {"name": name, "version": version, "git_tag": f"v{version}", **extra, "tasks": rows}


def write_registry(path: Path, entries: list[dict]) -> Path:
    path.write_text(json.dumps(entries, indent=2))
    return path


def harbor_entry(repo: Path, sha: str | None, name: str, version: str, tasks: list[str], *,
                 folder: str = "tasks") -> dict:
    """A Harbor ``registry.json`` entry (a DatasetSpec): tasks by git_url, git_commit_id and path, no digest;
    ``sha=None`` leaves git_commit_id out (Harbor: the repository's HEAD)."""
    url = repo.resolve().as_uri()
    rows = [{"name": t, "git_url": url, **({"git_commit_id": sha} if sha else {}), "path": f"{folder}/{t}"}
            for t in tasks]
    return {"name": name, "version": version, "description": f"{name} from Harbor", "tasks": rows, "metrics": []}
