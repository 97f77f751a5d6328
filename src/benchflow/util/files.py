"""Small file readers shared across packages: content hashes and ``.env`` variable names."""

from __future__ import annotations

import hashlib
from pathlib import Path

CHUNK = 1 << 20


def sha256_digest(path: Path) -> bytes:
    """The raw SHA-256 of a file, read in chunks (constant memory for any size)."""
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            h.update(chunk)
    return h.digest()


def sha256_hex(path: Path) -> str:
    """:func:`sha256_digest` as 64 lowercase hex characters."""
    return sha256_digest(path).hex()


def dotenv_names(path: Path) -> set[str]:
    """Names a ``.env`` file sets to a non-empty value (values are never returned)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return set()
    names: set[str] = set()
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.removeprefix("export ").partition("=")
            if value.strip().strip("'\""):
                names.add(key.strip())
    return names
