"""Where the hub keeps bytes: task archives, pushed run bundles, trajectory captures.

Blobs are content-addressed: the key is ``sha256:<hex>`` of the bytes, so a
blob written twice is stored once and a key names exactly one content. A
store implements :class:`BlobStore`; :class:`FilesystemBlobStore` is the
default (``--blobs DIR``); :class:`.blobs_azure.AzureBlobStore` keeps them in
an Azure Blob Storage container (``--blobs az://CONTAINER``).
"""

from __future__ import annotations

from benchflow.errors import UserError
import hashlib
import os
import re
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Protocol

_KEY = re.compile(r"^sha256:[0-9a-f]{64}$")
CHUNK = 1 << 20


class TooLarge(UserError):
    """An upload went past the size the hub accepts."""


class BlobStore(Protocol):
    def has(self, key: str) -> bool: ...

    def open(self, key: str) -> IO[bytes]: ...

    def put_file(self, key: str, path: Path) -> None:
        """Store the file at ``path`` (already hashed to ``key``) under ``key``; the file may be moved."""

    def delete(self, key: str) -> None: ...

    def local_path(self, key: str) -> Path:
        """A local file holding the blob, for checks that read it as a file (a remote store downloads it)."""

    def spool_dir(self) -> Path:
        """A local folder for uploads being received and hashed."""


def check_key(key: str) -> str:
    if not _KEY.match(key):
        raise ValueError(f"not a blob key: {key!r}")
    return key


class FilesystemBlobStore:
    """``<root>/sha256/ab/cd/<hex>``; written by rename, so a reader never sees half a blob."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        (self.root / "sha256").mkdir(parents=True, exist_ok=True)
        (self.root / "incoming").mkdir(exist_ok=True)

    def _path(self, key: str) -> Path:
        hex_ = check_key(key).split(":", 1)[1]
        return self.root / "sha256" / hex_[:2] / hex_[2:4] / hex_

    def has(self, key: str) -> bool:
        return self._path(key).is_file()

    def local_path(self, key: str) -> Path:
        return self._path(key)

    def open(self, key: str) -> IO[bytes]:
        return self._path(key).open("rb")

    def put_file(self, key: str, path: Path) -> None:
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def spool_dir(self) -> Path:
        """Where an incoming upload is written before it is hashed (same filesystem: a rename stores it)."""
        return self.root / "incoming"


async def receive(chunks: AsyncIterator[bytes], spool_dir: Path | None, limit: int) -> tuple[Path, str, int]:
    """Write an upload to a temporary file while hashing it: (file, ``sha256:<hex>``, size).

    Raises:
        TooLarge: more than ``limit`` bytes (the partial file is removed).
    """
    fd, name = tempfile.mkstemp(prefix="upload-", dir=spool_dir)
    digest, size = hashlib.sha256(), 0
    try:
        with os.fdopen(fd, "wb") as out:
            async for chunk in chunks:
                size += len(chunk)
                if size > limit:
                    raise TooLarge(f"larger than {limit} bytes")
                digest.update(chunk)
                out.write(chunk)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name), "sha256:" + digest.hexdigest(), size
