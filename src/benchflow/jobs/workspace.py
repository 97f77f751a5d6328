"""``--freeze-workspace``: keep the final workspace before the verifier runs, for ``bench regrade``."""

from __future__ import annotations

import hashlib
from pathlib import Path

from benchflow.sandbox.base import Sandbox
from benchflow.util import atomic

from .layout import TrialPaths


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


async def freeze_workspace(sandbox: Sandbox, workdir: str, paths: TrialPaths) -> None:
    """Copy ``workdir`` to ``evidence/workspace/`` and write ``evidence/manifest.json``."""
    target = paths.evidence_dir / "workspace"
    await sandbox.get(workdir, target)
    files = []
    for path in sorted(p for p in target.rglob("*") if p.is_file() and not p.is_symlink()):
        files.append({"path": path.relative_to(target).as_posix(), "size": path.stat().st_size,
                      "sha256": _sha256(path)})
    atomic.write_json(paths.evidence_manifest, {"schema_version": 1, "workdir": workdir,
                                                "n_files": len(files), "files": files})
