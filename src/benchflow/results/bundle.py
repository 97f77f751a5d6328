"""``bench bundle``: one zip of a job's or trial's evidence, redacted, with a ``bundle.json`` manifest.

Every text file goes through :mod:`benchflow.util.redact` (JSON and JSONL
records field by field, so secret-named fields are masked too; other text by
secret shapes). A saved workspace tar is repacked with each text member
redacted. A binary file is kept as it is unless secret shapes show up in its
bytes, in which case it is left out. ``bundle.json`` lists each file with the
SHA-256 of what is in the zip, how many values were masked, and what was left
out and why.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

from pydantic import BaseModel, Field

from benchflow.errors import JobFolderError
from benchflow.util.redact import MASK, redact_obj, redact_text

from .reader import is_job_dir, is_trial_dir, require_dir

MAX_FILE_BYTES = 512 * 1024 * 1024
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz")


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


def _is_text(data: bytes) -> bool:
    if b"\0" in data[:8192]:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _masks(text: str) -> int:
    return text.count(MASK)


def redact_bytes(name: str, data: bytes) -> tuple[bytes, int] | None:
    """Redacted text and the number of values masked; ``None`` when ``data`` is not text."""
    if not _is_text(data):
        return None
    text = data.decode("utf-8")
    before = _masks(text)
    if name.endswith(".json"):
        try:
            out = json.dumps(redact_obj(json.loads(text)), indent=2, ensure_ascii=False) + "\n"
        except ValueError:
            out = redact_text(text)
    elif name.endswith(".jsonl"):
        out = "".join(_redact_line(line) for line in text.splitlines(keepends=True))
    else:
        out = redact_text(text)
    return out.encode("utf-8"), max(0, _masks(out) - before)


def _redact_line(line: str) -> str:
    if not line.strip():
        return line
    try:
        return json.dumps(redact_obj(json.loads(line)), ensure_ascii=False) + "\n"
    except ValueError:
        return redact_text(line)


def _repack_tar(data: bytes, gz: bool) -> tuple[bytes, int]:
    """The tar with every text member redacted; binary members holding secret shapes are dropped."""
    masked = 0
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as src, \
            tarfile.open(fileobj=out, mode="w:gz" if gz else "w") as dst:
        for member in src:
            if not member.isfile():
                if member.isdir() or member.issym() or member.islnk():
                    dst.addfile(member)
                continue
            handle = src.extractfile(member)
            content = handle.read() if handle else b""
            redacted = redact_bytes(member.name, content)
            if redacted is None:
                if redact_text(content.decode("latin-1")) != content.decode("latin-1"):
                    masked += 1
                    continue
            else:
                content, count = redacted
                masked += count
            member.size = len(content)
            dst.addfile(member, io.BytesIO(content))
    return out.getvalue(), masked


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
    size = file.stat().st_size
    if size > MAX_FILE_BYTES:
        report.left_out.append({"path": rel, "reason": f"larger than {MAX_FILE_BYTES // 2**20} MiB"})
        return
    data = file.read_bytes()
    redacted = True
    if file.name.endswith(_TAR_SUFFIXES) and _is_tar(data):
        data, masked = _repack_tar(data, gz=not file.name.endswith(".tar"))
    else:
        result = redact_bytes(file.name, data)
        if result is None:
            if redact_text(data.decode("latin-1")) != data.decode("latin-1"):
                report.left_out.append({"path": rel, "reason": "binary file holding a secret-looking value"})
                return
            redacted, masked = False, 0
        else:
            data, masked = result
    archive.writestr(f"{prefix}/{rel}", data)
    report.files.append(BundledFile(path=rel, sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                                    redacted=redacted, masked=masked))


def _is_tar(data: bytes) -> bool:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*"):
            return True
    except (tarfile.TarError, EOFError, OSError):
        return False
