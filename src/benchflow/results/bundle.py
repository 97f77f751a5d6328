"""``bench bundle``: one zip of a job's or trial's evidence, redacted, with a ``bundle.json`` manifest.

Every file goes through :mod:`.bundle_redact`: text (UTF-8 or UTF-16, also
inside gzip or zlib compression) is redacted by :mod:`benchflow.util.redact`
(JSON and JSONL records field by field, so secret-named fields are masked too;
other text by secret shapes); a tar (a saved workspace) is repacked with each
member redacted; a binary file is kept as it is unless secret shapes show up in
its bytes, in which case it is left out. Files are streamed through a spooled
temporary file, never read whole, and one that would expand past a bound (a
compression bomb) is left out. Files are opened without following links.
``bundle.json`` lists each file with the SHA-256 of what is in the zip, how
many values were masked, and what was left out and why.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
import zipfile
from pathlib import Path

from pydantic import BaseModel, Field

from benchflow.errors import JobFolderError
from benchflow.util import nofollow

from .bundle_redact import CHUNK, LeftOut, TooBig, redact_file, spool
from .reader import is_job_dir, is_trial_dir, require_dir

MAX_FILE_BYTES = 512 * 1024 * 1024


class BundledFile(BaseModel):
    path: str
    sha256: str
    size: int
    redacted: bool
    """True when the file was read as text (or a tar of text) and passed through the redactor."""
    masked: int = 0


class BundleReport(BaseModel):
    kind: str = "benchflow.bundle"
    schema_version: int = 1
    source: str
    out: str
    created_at: str
    workspace: bool
    files: list[BundledFile] = Field(default_factory=list)
    masked_total: int = 0
    left_out: list[dict[str, str]] = Field(default_factory=list)


def _walk(root: Path, workspace: bool, left_out: list[dict[str, str]]) -> list[Path]:
    """Files to bundle under ``root``, leaving out locks, set-aside trials and (maybe) workspaces."""
    files: list[Path] = []
    for current, dirs, names in os.walk(root):
        here = Path(current)
        for name in sorted(dirs):
            rel = (here / name).relative_to(root).as_posix()
            if name == ".set-aside":
                left_out.append({"path": rel + "/", "reason": "trials set aside by --restart-changed"})
                dirs.remove(name)
            elif name == "evidence" and not workspace:
                left_out.append({"path": rel + "/", "reason": "saved workspace left out (--no-workspace)"})
                dirs.remove(name)
        dirs.sort()
        for name in sorted(names):
            path = here / name
            if name == ".lock" or (name.startswith(".") and name.endswith(".tmp")):
                continue
            if path.is_symlink() or not path.is_file():
                left_out.append({"path": path.relative_to(root).as_posix(), "reason": "not a regular file"})
                continue
            files.append(path)
    return files


def default_out(path: Path) -> Path:
    return path.parent / f"{path.name}.bundle.zip"


def bundle(path: str | Path, out: str | Path | None = None, *, workspace: bool = True) -> BundleReport:
    """Write the redacted zip of a job or trial folder; returns the manifest also stored as bundle.json.

    Raises:
        JobFolderError: ``path`` is neither a job nor a trial folder (exit 2).
    """
    source = Path(path).resolve()
    require_dir(source, "a job folder or a trial folder")
    if not (is_job_dir(source) or is_trial_dir(source)):
        raise JobFolderError(f"{source}: not a job or trial folder; give one job folder or one trial in it")
    target = Path(out) if out else default_out(source)
    if target.resolve().is_relative_to(source):
        raise JobFolderError(f"{target}: the zip cannot be written inside the folder it bundles; pass -o elsewhere")
    report = BundleReport(source=str(source), out=str(target), workspace=workspace,
                          created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    prefix = source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for file in _walk(source, workspace, report.left_out):
                _add(archive, source, prefix, file, report)
            report.masked_total = sum(f.masked for f in report.files)
            archive.writestr(f"{prefix}/bundle.json", json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return report


def _add(archive: zipfile.ZipFile, root: Path, prefix: str, file: Path, report: BundleReport) -> None:
    rel = file.relative_to(root).as_posix()
    size = os.lstat(file).st_size
    if size > MAX_FILE_BYTES:
        report.left_out.append({"path": rel, "reason": f"larger than {MAX_FILE_BYTES // 2**20} MiB"})
        return
    with spool() as out:
        try:
            redacted, masked = redact_file(file.name, lambda: nofollow.open_file(file, root), out,
                                           report.left_out, rel)
        except TooBig as exc:
            report.left_out.append({"path": rel, "reason": f"{exc}; not expanded further"})
            return
        except LeftOut as exc:
            report.left_out.append({"path": rel, "reason": str(exc)})
            return
        except nofollow.UnsafeFile:
            report.left_out.append({"path": rel, "reason": "not a regular file"})
            return
        out.seek(0)
        digest, written = hashlib.sha256(), 0
        with archive.open(f"{prefix}/{rel}", "w", force_zip64=True) as member:
            while chunk := out.read(CHUNK):
                digest.update(chunk)
                member.write(chunk)
                written += len(chunk)
    report.files.append(BundledFile(path=rel, sha256=digest.hexdigest(), size=written,
                                    redacted=redacted, masked=masked))
