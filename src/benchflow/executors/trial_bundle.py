"""A folder as bytes and back: how a trial folder made on a cluster node reaches the job folder.

The node runs the trial in a scratch folder of its own and returns the folder packed
(:func:`pack`); the driver, the job folder's only writer, unpacks it beside the trial folders
and renames it into place (:func:`install`), so a reader sees the whole folder or none of it.
The same packing carries a task's folder to the node.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from pathlib import Path

from benchflow.errors import InfraError
from benchflow.util.tarfile_filters import tarfile


def pack(folder: Path) -> bytes:
    """``folder`` (and everything under it, links followed) as a gzip'd tar named by its own name."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1, dereference=True) as tar:
        tar.add(folder, arcname=folder.name)
    return buffer.getvalue()


def unpack(blob: bytes, into: Path, name: str) -> Path:
    """Extract a :func:`pack` blob of a folder called ``name`` under ``into``; returns the folder.

    Raises:
        InfraError: the blob holds something other than that one folder, or an unsafe member
            (absolute path, a link out of the folder, a device): the ``data`` extraction filter.
    """
    into.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:*") as tar:
            for member in tar.getmembers():
                if member.name != name and not member.name.startswith(name + "/"):
                    raise InfraError(f"trial bundle: unexpected member {member.name!r} (expected {name}/…)")
            tar.extractall(into, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise InfraError(f"trial bundle of {name}: {exc}") from exc
    return into / name


def install(blob: bytes, destination: Path) -> Path:
    """Unpack a packed folder as ``destination`` in one rename: staged in a hidden folder beside it
    (same file system; readers skip dot-folders), then moved into place.

    Raises:
        InfraError: an unreadable or unsafe blob, or ``destination`` already exists.
    """
    staging = Path(tempfile.mkdtemp(prefix=f".incoming-{destination.name}-", dir=destination.parent))
    try:
        folder = unpack(blob, staging, destination.name)
        try:
            os.rename(folder, destination)
        except OSError as exc:
            raise InfraError(f"trial bundle: cannot move {destination.name} into the job ({exc})") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return destination
