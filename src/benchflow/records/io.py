"""Read a record file into its model; the one place readers open ``config.json``, ``result.json``, ….

``read_record`` returns ``None`` for a missing file and raises
:class:`Unreadable` (a note for the user, naming the file) for one that does
not parse; values of the wrong type are left out with a note (see
:mod:`.upgrade`). Writers use :func:`write_record`, which goes through the one
atomic writer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeVar

from benchflow.util import atomic, nofollow

from .base import Block, Record
from .upgrade import Unreadable, upgrade

R = TypeVar("R", bound=Any)


def read_json(path: str | os.PathLike[str]) -> Any:
    """The parsed file, ``None`` when it does not exist; ``Unreadable`` when it does not parse."""
    try:
        with nofollow.open_file(path) as handle:  # a job folder holds what sandboxes wrote
            data = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unreadable(f"{path}: cannot be read ({exc.strerror})") from exc
    try:
        return json.loads(data)
    except ValueError as exc:
        raise Unreadable(f"{path}: not valid JSON ({exc})") from exc


def read_record(model: type[R], path: str | os.PathLike[str], *, name: str | None = None,
                notes: list[str] | None = None) -> R | None:
    """The record at ``path`` as ``model``, upgraded from any earlier version; ``None`` when missing.

    Raises:
        Unreadable: the file cannot be read, is not JSON, or is not a record of this kind.
    """
    data = read_json(path)
    if data is None:
        return None
    return upgrade(model, data, name=name, notes=notes, source=os.fspath(path))


def read_optional(model: type[R], path: str | os.PathLike[str], notes: list[str], *,
                  name: str | None = None) -> R | None:
    """Like :func:`read_record`, but an unreadable file becomes a note and ``None``."""
    try:
        return read_record(model, path, name=name, notes=notes)
    except Unreadable as exc:
        notes.append(str(exc))
        return None


def write_record(path: str | os.PathLike[str], record: Record | Block) -> Path:
    """Write ``record`` as the contracts name its fields, atomically."""
    data = record.to_json() if isinstance(record, Record) else record.model_dump(mode="json", by_alias=True)
    return atomic.write_json(path, data)
