"""``bench tasks snapshot-hf``: a Hugging Face dataset's task folders on disk, pinned and with provenance.

The revision asked for (branch, tag or commit) is resolved to its commit once,
and everything is read at that commit, so the tree on disk is one consistent
snapshot. Task folders are the folders (directly under ``--path``, or the repo
root) holding a ``task.md`` or ``task.toml``; only their files are downloaded
(through the library's cache, so a second snapshot of the same commit is
offline). Each task gets a ``.benchflow-source.json`` (repo, commit, path in
the repo, content digest — the file the digest leaves out by design) and the
folder a ``provenance.json`` listing every task with its digest and every file
with its SHA-256 and size. The tree is built beside OUTPUT_DIR and renamed into
place, so an interrupted snapshot never leaves half a tree.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from benchflow.errors import UserError
from benchflow.util import atomic
from benchflow.util.files import sha256_digest

from . import client

TASK_MARKERS = ("task.md", "task.toml")
SOURCE_FILE = ".benchflow-source.json"
PROVENANCE_FILE = "provenance.json"


@dataclass
class SnapshotTask:
    name: str
    path_in_repo: str
    digest: str
    files: list[dict[str, object]] = field(default_factory=list)


@dataclass
class Snapshot:
    """What :func:`snapshot_hf` wrote; :meth:`document` is ``provenance.json``."""

    repo_id: str
    revision: str
    commit: str
    path: str
    output_dir: Path
    endpoint: str
    created_at: str
    tasks: list[SnapshotTask] = field(default_factory=list)

    def document(self) -> dict[str, object]:
        return {"kind": "benchflow.hf-snapshot", "schema_version": 1, "source": f"hf://datasets/{self.repo_id}",
                "repo_id": self.repo_id, "repo_type": "dataset", "endpoint": self.endpoint,
                "revision": self.revision, "commit": self.commit, "path": self.path, "created_at": self.created_at,
                "tasks": [{"name": t.name, "path_in_repo": t.path_in_repo, "digest": t.digest, "files": t.files}
                          for t in self.tasks]}


def task_folders(files: list[str], prefix: str) -> list[str]:
    """Folders (repo paths) under ``prefix`` that hold a task marker directly; ``prefix`` itself if it is one."""
    base = prefix.strip("/")
    found: set[str] = set()
    for path in files:
        pure = PurePosixPath(path)
        if pure.name not in TASK_MARKERS:
            continue
        parent = pure.parent.as_posix()
        parent = "" if parent == "." else parent
        if parent == base:
            return [base]
        if PurePosixPath(parent).parent.as_posix() in ((base or "."), base):
            found.add(parent)
    return sorted(found)


def snapshot_hf(repo_id: str, output_dir: str | Path, *, revision: str | None = None, path: str | None = None,
                cache_dir: str | Path | None = None, overwrite: bool = False,
                include_tasks: list[str] | None = None) -> Snapshot:
    """Download the task folders of dataset ``repo_id`` at ``revision`` into ``output_dir``.

    Raises:
        UserError: bad repo id or path, output exists without ``overwrite``, no tasks,
            an ``include_tasks`` name that is not a task, repo or revision not found (exit 2).
        client.HubError: the Hub failed or cannot be reached (exit 1).
    """
    client.check_repo_id(repo_id, "REPO_ID")
    out = Path(output_dir)
    prefix = _clean_prefix(path)
    if out.exists() and not out.is_dir():
        raise UserError(f"OUTPUT_DIR {out}: is a file; pass a folder path")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise UserError(f"OUTPUT_DIR {out}: already exists and is not empty; pass --overwrite to replace it")
    api = client.api()
    what = f"hf://datasets/{repo_id}" + (f"@{revision}" if revision else "")
    with client.hub_errors(what):
        info = api.repo_info(repo_id, repo_type="dataset", revision=revision)
        commit = info.sha
        files = [entry.path for entry in api.list_repo_tree(repo_id, repo_type="dataset", revision=commit,
                                                             recursive=True)
                 if type(entry).__name__ == "RepoFile"]
    folders = task_folders(files, prefix)
    if not folders:
        raise UserError(f"{what}: no task folders (a folder holding task.md or task.toml) "
                        f"{'under ' + repr(prefix) if prefix else 'at the repo root'}; pass the folder with --path")
    folders = _select(folders, include_tasks, what)
    patterns = [f"{folder}/**" if folder else "**" for folder in folders]
    with client.hub_errors(what):
        from huggingface_hub import snapshot_download

        local = Path(snapshot_download(repo_id, repo_type="dataset", revision=commit, allow_patterns=patterns,
                                       cache_dir=str(cache_dir) if cache_dir else None, endpoint=client.endpoint(),
                                       token=client.token()))
    snap = Snapshot(repo_id=repo_id, revision=revision or "main", commit=commit, path=prefix, output_dir=out,
                    endpoint=client.endpoint(), created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    _materialise(local, folders, snap)
    return snap


def _clean_prefix(path: str | None) -> str:
    if not path:
        return ""
    pure = PurePosixPath(path.strip("/"))
    if pure.is_absolute() or ".." in pure.parts:
        raise UserError(f"--path {path!r}: must be a folder inside the dataset repo, e.g. tasks")
    return pure.as_posix() if pure.as_posix() != "." else ""


def _select(folders: list[str], include: list[str] | None, what: str) -> list[str]:
    if not include:
        return folders
    by_name = {PurePosixPath(folder).name: folder for folder in folders}
    missing = [name for name in include if name not in by_name]
    if missing:
        shown = ", ".join(sorted(by_name)[:10])
        raise UserError(f"--include-task {missing[0]}: no such task in {what}; tasks there: {shown}")
    return [by_name[name] for name in dict.fromkeys(include)]


def _materialise(local: Path, folders: list[str], snap: Snapshot) -> None:
    """Copy each task out of the cache into a staging folder, stamp provenance, rename into place."""
    from benchflow.tasks.digest import task_digest, task_files

    out = snap.output_dir
    staging = atomic.staging_folder(out, ".new")
    with atomic.swap_in_when_done(staging, out):
        for folder in folders:
            name = PurePosixPath(folder).name or snap.repo_id.split("/")[1]  # a task at the repo root
            target = staging / name
            _copy_tree(local / folder if folder else local, target, repo_cache=local.resolve().parent.parent)
            files = [{"path": rel, "sha256": sha256_digest(full).hex(), "size": full.stat().st_size}
                     for rel, full in task_files(target)]
            task = SnapshotTask(name=name, path_in_repo=folder, digest=task_digest(target), files=files)
            atomic.write_json(target / SOURCE_FILE, {
                "kind": "benchflow.task-source", "source": f"hf://datasets/{snap.repo_id}", "repo_id": snap.repo_id,
                "revision": snap.revision, "commit": snap.commit, "path_in_repo": folder, "digest": task.digest})
            snap.tasks.append(task)
        atomic.write_json(staging / PROVENANCE_FILE, snap.document())


def _copy_tree(source: Path, target: Path, repo_cache: Path) -> None:
    """Copy files (the cache links each to its blob) as plain files; a link leaving ``repo_cache`` is skipped."""
    for item in sorted(source.rglob("*")):
        rel = item.relative_to(source)
        dest = target / rel
        if item.is_dir() and not item.is_symlink():
            dest.mkdir(parents=True, exist_ok=True)
            continue
        real = item.resolve()
        if not real.is_file() or not real.is_relative_to(repo_cache):
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(real, dest)
        if dest.suffix == ".sh":
            dest.chmod(0o755)  # the Hub keeps no file modes; scripts are meant to run
