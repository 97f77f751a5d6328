"""Mask known secret values in a folder the engine wrote (a trial's, after copy-out).

The values are exact strings the run knows are secret (host variables a task
was allowed to read). Shape-based redaction (:mod:`benchflow.util.redact`)
cannot find them, and they can reach any file: the verifier's output, the
agent's logs, trajectories, the result. So one pass goes over every regular
file below a folder, following no link, and overwrites each occurrence (raw,
and as it appears inside a JSON string) with as many ``*``: the length is
kept, so JSON, JSONL and archives stay readable. Changed files are rewritten
atomically. Values shorter than :data:`MIN_LEN` are left alone (they would mask
ordinary text); callers warn about them.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import atomic, nofollow

MIN_LEN = 6


def needles(values: Iterable[str]) -> list[bytes]:
    """The byte strings to mask: each value as UTF-8, and JSON-escaped (ASCII and UTF-8) when different."""
    out: list[bytes] = []
    for value in values:
        if not value or len(value) < MIN_LEN:
            continue
        for form in (value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]):
            data = form.encode("utf-8", "surrogateescape")
            if data not in out:
                out.append(data)
    return sorted(out, key=len, reverse=True)  # a longer form first, so a shorter one inside it is not left half


def scrub_bytes(data: bytes, patterns: list[bytes]) -> bytes:
    for pattern in patterns:
        if pattern in data:
            data = data.replace(pattern, b"*" * len(pattern))
    return data


def scrub_folder(root: Path, values: Iterable[str]) -> list[Path]:
    """Mask ``values`` in every regular file below ``root`` (links and special files are skipped,
    never followed); returns the files changed."""
    patterns = needles(values)
    changed: list[Path] = []
    if not patterns or not os.path.isdir(root) or os.path.islink(root):
        return changed
    for folder, _dirs, files in os.walk(root, followlinks=False):  # links to folders are not entered
        for name in files:
            path = Path(folder) / name
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
                data = nofollow.read_bytes(path)
            except OSError:
                continue
            clean = scrub_bytes(data, patterns)
            if clean != data:
                atomic.write_bytes(path, clean, mode=stat.S_IMODE(os.lstat(path).st_mode))
                changed.append(path)
    return changed


def scrub_document(document: Any, values: Iterable[str]) -> Any:
    """A JSON-like document with ``values`` masked in every string (keys included)."""
    patterns = needles(values)
    if not patterns:
        return document
    text = json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogateescape")
    clean = scrub_bytes(text, patterns)
    return document if clean == text else json.loads(clean.decode("utf-8", "surrogateescape"))
