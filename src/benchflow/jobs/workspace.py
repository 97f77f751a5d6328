"""``--freeze-workspace``: keep the final workspace before the verifier runs, for ``bench regrade``."""

from __future__ import annotations

from benchflow.sandbox.base import Sandbox
from benchflow.util import atomic
from benchflow.util.files import sha256_digest

from .layout import TrialPaths


async def freeze_workspace(sandbox: Sandbox, workdir: str, paths: TrialPaths) -> None:
    """Copy ``workdir`` to ``evidence/workspace/`` and write ``evidence/manifest.json``."""
    target = paths.evidence_workspace
    await sandbox.get(workdir, target)
    files = []
    for path in sorted(p for p in target.rglob("*") if p.is_file() and not p.is_symlink()):
        files.append({"path": path.relative_to(target).as_posix(), "size": path.stat().st_size,
                      "sha256": sha256_digest(path).hex()})
    atomic.write_json(paths.evidence_manifest, {"schema_version": 1, "workdir": workdir,
                                                "n_files": len(files), "files": files})
