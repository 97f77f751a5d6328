"""The one atomic writer: every file a later command reads goes through here.

A write goes to a temporary file in the same folder and is renamed over the
target, so a reader (or a resumed run after ``kill -9``) sees either the old
file or the new one, never half of one. A folder is built in a staging folder
beside its target and swapped in the same way (:func:`staging_folder`,
:func:`swap_in_when_done`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO


PRIVATE = 0o600
"""Mode of files only their owner should read (trajectories: they hold what the agent saw)."""


def write_bytes(path: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> Path:
    """Write ``data`` to ``path`` atomically, creating parent folders; the file gets ``mode``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return target


def write_text(path: str | os.PathLike[str], text: str, mode: int = 0o644) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return write_bytes(path, text.encode("utf-8"), mode)


def dumps_json(obj: Any) -> str:
    """The one JSON rendering used on disk: indented, UTF-8, trailing newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n"


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as JSON to ``path`` atomically."""
    return write_text(path, dumps_json(obj))


def write_jsonl(path: str | os.PathLike[str], rows: list[Any], mode: int = 0o644) -> Path:
    """Write one JSON document per line to ``path`` atomically."""
    text = "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows)
    return write_text(path, text, mode)


@contextlib.contextmanager
def open_for_write(path: str | os.PathLike[str], mode: int = 0o644) -> Iterator[BinaryIO]:
    """A binary handle whose content replaces ``path`` when the block ends without an error.

    For output too large to hold in memory (trainer data): written as it is made, renamed at the
    end like :func:`write_bytes`; an error inside the block leaves ``path`` untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def replace_folder(staged: Path, target: Path) -> None:
    """Put the folder ``staged`` (made beside ``target``) at ``target``. An existing ``target`` is renamed
    aside first, put back if the swap fails, and removed once the new folder is in place."""
    if not target.exists():
        staged.rename(target)
        return
    old = target.with_name(f".{target.name}.old-{time.time_ns()}")
    target.rename(old)
    try:
        staged.rename(target)
    except BaseException:
        old.rename(target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def staging_folder(target: Path, suffix: str) -> Path:
    """A new empty folder beside ``target`` (``.<name>.<random><suffix>``) to build its replacement in."""
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent))


@contextlib.contextmanager
def swap_in_when_done(staging: Path, target: Path) -> Iterator[Path]:
    """Fill ``staging`` inside the block. When the block ends without an error, the folder is made
    readable (0755) and replaces ``target`` (:func:`replace_folder`); on any error it is removed."""
    try:
        yield staging
        staging.chmod(0o755)
        replace_folder(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
