"""``--snapshot-layers environment|both``: the task's declared database state, captured at a fork
with a sha256 manifest and put back for each child.

A task declares its state in an environment manifest next to its ``task.md`` (``environment.toml``,
``environment.yaml`` or ``environment.yml``), top-level ``[environment]`` / ``environment:``, key
``state: {kind: sqlite, paths: [globs]}`` (contracts §7.4; other keys of the manifest are not read
here). The globs are absolute paths in the sandbox. At a fork every matching file, with its SQLite
sidecars (``-wal``, ``-shm``, ``-journal``), is copied out to ``branches/<fork>/state/files/<i>`` and
listed in ``branches/<fork>/state/manifest.json`` (path, sha256, size, mode, owner). Before a child
runs, the stored files are checked against the manifest, every file the globs (and sidecars) match
now but the manifest does not list is deleted (a stale write-ahead log would otherwise be replayed
onto the restored database), the files are put back, and their sha256 in the sandbox is checked.
"""

from __future__ import annotations

import json
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from benchflow.errors import ConfigError, SandboxError
from benchflow.util import atomic
from benchflow.util.files import sha256_hex

MANIFEST_NAMES = ("environment.toml", "environment.yaml", "environment.yml")
KINDS = ("sqlite",)
SIDECARS = ("-wal", "-shm", "-journal")
_LIST = ('for g in "$@"; do for p in $g; do for f in "$p" "$p-wal" "$p-shm" "$p-journal"; do '
         '[ -f "$f" ] && [ ! -L "$f" ] && stat -c "%a %u %g %n" "$f"; done; done; done | sort -u -k4')


class StateDeclarationError(ConfigError):
    """A task's environment manifest declares its state in a way that cannot be used."""


@dataclass(frozen=True)
class DeclaredState:
    kind: str
    paths: tuple[str, ...]
    source: Path


def declared_state(task_dir: Path) -> DeclaredState | None:
    """The state the task at ``task_dir`` declares, or None when it has no manifest or no ``state``.

    Raises:
        StateDeclarationError: the manifest is unreadable or its ``state`` is malformed.
    """
    for name in MANIFEST_NAMES:
        path = Path(task_dir) / name
        if path.is_file():
            return _parse(path)
    return None


def _parse(path: Path) -> DeclaredState | None:
    try:
        text = path.read_text(encoding="utf-8")
        document = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        raise StateDeclarationError(f"{path}: not readable as {path.suffix[1:]} ({exc}); fix the file") from exc
    section = (document or {}).get("environment") if isinstance(document, dict) else None
    if not isinstance(section, dict) or section.get("state") is None:
        return None
    state = section["state"]
    where = f"{path}: environment.state"
    if not isinstance(state, dict):
        raise StateDeclarationError(f"{where} must be a table like {{kind: sqlite, paths: [\"/app/*.db\"]}}")
    kind, paths = state.get("kind"), state.get("paths")
    if kind not in KINDS:
        raise StateDeclarationError(f"{where}.kind is {kind!r}; the only kind is sqlite")
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p.startswith("/") for p in paths):
        raise StateDeclarationError(f"{where}.paths must be a non-empty list of absolute paths or globs "
                                    "in the sandbox, like [\"/app/data/*.db\"]")
    if any("\n" in p or "'" in p for p in paths):
        raise StateDeclarationError(f"{where}.paths: a path may hold neither a newline nor a quote")
    return DeclaredState(kind=kind, paths=tuple(paths), source=path)


async def _present(sandbox: Any, state: DeclaredState) -> list[tuple[str, str, str, str]]:
    """(mode, uid, gid, path) of every regular file the globs match now, sidecars included."""
    listed = await sandbox.exec(["sh", "-c", _LIST, "state", *state.paths], user=None, timeout=60)
    if listed.return_code != 0:
        raise SandboxError(f"environment state: listing {', '.join(state.paths)} failed: "
                           f"{(listed.stderr or listed.stdout).strip()[-300:]}")
    rows = []
    for line in listed.stdout.splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4:
            rows.append((parts[0], parts[1], parts[2], parts[3]))
    return rows


async def capture(sandbox: Any, state: DeclaredState, folder: Path) -> dict[str, Any]:
    """Copy the declared state out of ``sandbox`` into ``folder`` and write its manifest (atomically,
    last: a folder without ``manifest.json`` holds no usable capture)."""
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    (folder / "files").mkdir(parents=True)
    files = []
    for i, (mode, uid, gid, path) in enumerate(await _present(sandbox, state)):
        stored = folder / "files" / str(i)
        report = await sandbox.get(path, stored)
        if getattr(report, "stopped", None) or not stored.is_file():
            raise SandboxError(f"environment state: {path} could not be copied out whole "
                               f"({getattr(report, 'stopped', None) or 'not a regular file'})")
        files.append({"path": path, "stored": f"files/{i}", "sha256": sha256_hex(stored), "size": stored.stat().st_size,
                      "mode": mode, "uid": int(uid), "gid": int(gid)})
    manifest = {"kind": "benchflow.environment-state", "schema_version": 1, "state_kind": state.kind,
                "declared_in": state.source.name, "globs": list(state.paths), "files": files}
    atomic.write_json(folder / "manifest.json", manifest)
    return manifest


async def restore(sandbox: Any, state: DeclaredState, folder: Path) -> None:
    """Put the captured state back into ``sandbox`` exactly (see the module docstring).

    Raises:
        SandboxError: no capture there, a stored file differs from its manifest, or the sandbox
            holds other bytes afterwards.
    """
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SandboxError(f"environment state: no readable capture at {folder} ({exc})") from exc
    files = manifest.get("files") or []
    for entry in files:
        stored = folder / entry["stored"]
        if not stored.is_file() or sha256_hex(stored) != entry["sha256"]:
            raise SandboxError(f"environment state: {stored} does not match its manifest (sha256); "
                               "the capture was changed, rerun the branch")
    keep = {entry["path"] for entry in files}
    extra = [path for _, _, _, path in await _present(sandbox, state) if path not in keep]
    if extra:
        gone = await sandbox.exec(["rm", "-f", "--", *extra], user=None, timeout=60)
        if gone.return_code != 0:
            raise SandboxError(f"environment state: could not remove {', '.join(extra)}: {gone.stderr.strip()[-300:]}")
    if not files:
        return
    if hasattr(sandbox, "put_many"):
        await sandbox.put_many([(folder / e["stored"], e["path"]) for e in files])
    else:
        for entry in files:
            await sandbox.put(folder / entry["stored"], entry["path"])
    fix = "; ".join(f"chown {e['uid']}:{e['gid']} {shlex.quote(e['path'])} && chmod {shlex.quote(e['mode'])} "
                    f"{shlex.quote(e['path'])}" for e in files)
    check = await sandbox.exec(["sh", "-c", f"{fix}; sha256sum -- \"$@\"", "state", *(e["path"] for e in files)],
                               user=None, timeout=120)
    seen = {line.split(None, 1)[1].strip(): line.split(None, 1)[0]
            for line in check.stdout.splitlines() if len(line.split(None, 1)) == 2}
    wrong = [e["path"] for e in files if seen.get(e["path"]) != e["sha256"]]
    if wrong:
        raise SandboxError(f"environment state: after the restore {', '.join(wrong)} does not hold the "
                           "captured bytes (sha256 differs)")
