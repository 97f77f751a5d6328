"""``bench view hf://<org>/<dataset>[/<subpath>]``: a trajectory dataset fetched into the HF cache.

The dataset (only ``<subpath>`` when one is given) is downloaded at its current
commit as plain files (the viewer reads files without following links, so not
the library's linked cache) into ``<benchflow cache>/hf-view/<org>--<name>/<commit>/``;
a file already there is not downloaded again, and the viewer then reads the
local copy like any folder it is given. What the repo holds is not trusted: the viewer's own checks (the source
kinds, ids confined to the folder) apply to the copy unchanged.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from benchflow.errors import UserError

from . import client

SCHEME = "hf://"


def parse(target: str) -> tuple[str, str]:
    """``hf://org/name[/sub/path]`` (an optional ``datasets/`` after the scheme) -> (repo id, subpath).

    Raises:
        UserError: not of that shape (exit 2).
    """
    rest = target[len(SCHEME):].strip("/")
    parts = PurePosixPath(rest).parts
    if parts[:1] == ("datasets",):
        parts = parts[1:]
    if len(parts) < 2 or ".." in parts:
        raise UserError(f"ROLLOUT_DIR {target}: give hf://<org>/<dataset>, optionally with /<subpath>")
    repo_id = client.check_repo_id(f"{parts[0]}/{parts[1]}", "ROLLOUT_DIR")
    return repo_id, "/".join(parts[2:])


def fetch(target: str) -> Path:
    """The local folder (or file) for ``target`` after downloading it."""
    from huggingface_hub import snapshot_download

    from benchflow.util.cache_dir import cache_root

    repo_id, sub = parse(target)
    patterns = [sub, f"{sub}/**"] if sub else None
    api = client.api()
    with client.hub_errors(target):
        commit = api.repo_info(repo_id, repo_type="dataset").sha
        folder = cache_root() / "hf-view" / repo_id.replace("/", "--") / commit
        local = Path(snapshot_download(repo_id, repo_type="dataset", revision=commit, allow_patterns=patterns,
                                       endpoint=client.endpoint(), token=client.token(), local_dir=folder))
    path = local.joinpath(*PurePosixPath(sub).parts) if sub else local
    if not path.exists():
        raise UserError(f"ROLLOUT_DIR {target}: the dataset has no {sub!r}; give a folder or .jsonl file in it")
    return path
