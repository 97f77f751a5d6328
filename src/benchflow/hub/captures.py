"""A trajectory capture as the hub keeps it, and the hub's check of one.

A capture is a zip: ``manifest.json`` (``benchflow.trajectory-capture``:
contributor, source, one entry per file with its SHA-256, what was masked),
``trajectory/<name>.jsonl`` (redacted on the contributor's machine) and,
optionally, ``workspace.zip``. Its digest is the SHA-256 of the zip's bytes.
The hub verifies a capture after receiving it: the manifest parses, every
listed file is there with its hash, every JSONL line is JSON, and running the
project's redactor over the text changes nothing (a capture still holding a
secret-looking value is rejected and its bytes deleted).
"""

from __future__ import annotations

from benchflow.errors import UserError
import hashlib
import json
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

KIND = "benchflow.trajectory-capture"
MAX_TEXT_BYTES = 256 << 20


class Rejected(UserError):
    """A capture the hub will not keep (the message says why)."""


def _redacts_anything(line: str) -> bool:
    from benchflow.util.redact import redact_obj, redact_text

    try:
        return redact_obj(json.loads(line)) != json.loads(line)
    except ValueError:
        return redact_text(line) != line


def verify(path: Path) -> dict[str, Any]:
    """The capture's manifest, once every check passed.

    Raises:
        Rejected: what is wrong with it.
    """
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise Rejected(f"not a capture zip ({exc})") from exc
    with archive:
        try:
            manifest = json.loads(archive.read("manifest.json"))
        except (KeyError, ValueError) as exc:
            raise Rejected(f"manifest.json missing or not JSON ({exc})") from exc
        if not isinstance(manifest, dict) or manifest.get("kind") != KIND:
            raise Rejected(f"manifest.json is not a {KIND} document")
        for entry in manifest.get("files") or []:
            _check_file(archive, entry)
    return manifest


def _check_file(archive: zipfile.ZipFile, entry: dict[str, Any]) -> None:
    name = str(entry.get("path", ""))
    if PurePosixPath(name).is_absolute() or ".." in PurePosixPath(name).parts:
        raise Rejected(f"{name!r}: a path outside the capture")
    try:
        info = archive.getinfo(name)
    except KeyError as exc:
        raise Rejected(f"{name}: listed in the manifest but not in the capture") from exc
    if info.file_size > MAX_TEXT_BYTES and name.endswith(".jsonl"):
        raise Rejected(f"{name}: larger than {MAX_TEXT_BYTES >> 20} MiB")
    digest = hashlib.sha256()
    with archive.open(info) as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != entry.get("sha256"):
        raise Rejected(f"{name}: its SHA-256 does not match the manifest")
    if not name.endswith(".jsonl"):
        return
    with archive.open(info) as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            try:
                json.loads(line)
            except ValueError as exc:
                raise Rejected(f"{name} line {number}: not JSON") from exc
            if _redacts_anything(line):
                raise Rejected(f"{name} line {number}: still holds a secret-looking value; redact it and upload again")
