"""Tasks straight from a git repository: ``--source-repo org/repo`` and repository targets.

A target names a repository as ``org/repo[/path][@ref]`` or ``github:org/repo[/path][@ref]``
(GitHub: ``$BENCHFLOW_GITHUB_BASE``/org/repo, default https://github.com, which a
mirror or a test points elsewhere) or as a git URL (``https://…``, ``ssh://…``,
``file://…``, ``git@host:org/repo``) with an optional ``@ref``. Only the folder
asked for is fetched; the checkout is kept in the cache by commit, so a target
pinned to a full commit SHA runs again without git or network.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from benchflow.errors import ConfigError, DatasetError

from . import task_cache
from .resolve import TaskSource

GITHUB_BASE_ENV = "BENCHFLOW_GITHUB_BASE"
_SHORT = re.compile(r"^(?P<org>[A-Za-z0-9_.-]+)/(?P<repo>[A-Za-z0-9_.-]+)(?P<path>/[^@]*)?(?:@(?P<ref>.+))?$")
_URL_SCHEMES = ("https://", "http://", "ssh://", "file://", "git://")
_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class RepoTarget:
    url: str
    """The git URL fetched."""
    display: str
    """How the user named it (org/repo or the URL), for records and messages."""
    path: str = ""
    ref: str | None = None


def github_url(org_repo: str) -> str:
    base = os.environ.get(GITHUB_BASE_ENV, "https://github.com").rstrip("/")
    return f"{base}/{org_repo}"


def _split_url_ref(text: str) -> tuple[str, str | None]:
    if text.startswith("git@"):
        host_end = text.find(":")
        start = host_end + 1 if host_end > 0 else len("git@")
    else:
        scheme_end = text.index("://") + 3
        slash = text.find("/", scheme_end)
        start = slash if slash >= 0 else len(text)
    at = text.find("@", start)
    if at < 0:
        return text, None
    return text[:at], text[at + 1:] or None


def looks_like_repo(target: str) -> bool:
    """True for a target that names a repository rather than a local folder."""
    if target.startswith(("github:", "git@", *_URL_SCHEMES)):
        return True
    # org/repo, unless its first segment is a local folder (then it is a mistyped path)
    return bool(_SHORT.match(target)) and not target.startswith((".", "/", "~")) and not Path(target.split("/")[0]).exists()


def parse_target(target: str) -> RepoTarget:
    """A repository target (module docstring) → RepoTarget.

    Raises:
        ConfigError: not one of the forms.
    """
    if target.startswith(("git@", *_URL_SCHEMES)):
        url, ref = _split_url_ref(target)
        return RepoTarget(url=url, display=url, ref=ref)
    short = target.removeprefix("github:")
    match = _SHORT.match(short)
    if not match:
        raise ConfigError(f"{target}: give a task folder, org/repo[/path][@ref], github:org/repo, or a git URL[@ref]")
    org_repo = f"{match['org']}/{match['repo'].removesuffix('.git')}"
    return RepoTarget(url=github_url(org_repo), display=org_repo, path=(match["path"] or "").strip("/"),
                      ref=match["ref"])


def source_repo_target(repo: str, path: str | None, ref: str | None) -> RepoTarget:
    """``--source-repo org/repo [--source-path P] [--source-ref REF]``."""
    if repo.startswith(("git@", *_URL_SCHEMES)):
        url, inline_ref = _split_url_ref(repo)
        target = RepoTarget(url=url, display=url, ref=inline_ref)
    else:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo.removeprefix("github:")):
            raise ConfigError(f"--source-repo {repo!r}: give org/repo (e.g. benchflow-ai/skillsbench) or a git URL")
        target = parse_target(repo)
    clean = (path or "").strip("/")
    if any(p in {".", ".."} for p in clean.split("/") if p):
        raise ConfigError(f"--source-path {path!r}: give a folder inside the repository")
    return RepoTarget(url=target.url, display=target.display, path=clean or target.path, ref=ref or target.ref)


def _checkout_home(target: RepoTarget, sha: str) -> Path:
    url_key = hashlib.sha256(target.url.encode()).hexdigest()[:16]
    path_key = hashlib.sha256(target.path.encode()).hexdigest()[:8]
    return task_cache.datasets_root() / "repos" / url_key / f"{sha}-{path_key}"


def fetch_repo(target: RepoTarget) -> TaskSource:
    """The tasks of ``target``'s folder at its ref, fetched or reused from the cache.

    Raises:
        DatasetError: git missing, the repository/ref unreachable, or the folder absent at that commit.
    """
    from .git_fetch import sparse_checkout

    ref = target.ref or "HEAD"
    home = _checkout_home(target, ref) if _SHA.match(ref) else None
    if home is None or not home.is_dir():
        work = task_cache.scratch_dir("repo-")
        try:
            sha = sparse_checkout(target.url, ref, [target.path] if target.path else [], work)
            if _SHA.match(ref) and sha != ref:
                raise DatasetError(f"{target.display}: fetched commit {sha}, not the {ref} asked for")
            shutil.rmtree(work / ".git")  # the digest would count it; the tasks never need it
            task_cache.drop_symlinks(work)  # as in the dataset cache: only what the digest covers
            home = _checkout_home(target, sha)
            home.parent.mkdir(parents=True, exist_ok=True)
            if not home.is_dir():
                os.rename(work, home)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    sha = home.name.split("-", 1)[0]
    folder = home / target.path if target.path else home
    if not task_cache.inside(folder, home):
        raise DatasetError(f"{target.display}@{sha[:12]}: no folder {target.path!r} in the repository")
    from benchflow.tasks import discover_tasks

    dirs = discover_tasks(folder)
    if not dirs:
        raise DatasetError(f"{target.display}@{sha[:12]}: no task in {target.path or 'the repository'} "
                           "(a task folder holds task.md or task.toml)")
    source = {"repo": target.display, "url": target.url, "path": target.path or None, "ref": target.ref,
              "commit": sha}
    return TaskSource(dirs=dirs, tasks_dir=str(folder), source=source)
