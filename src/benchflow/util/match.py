"""The one task-name matcher used by ``--include`` / ``--exclude``.

Patterns are names or shell globs (``'hard-*'``), given comma-separated or
repeated. A name matches when it equals a pattern or fits its glob.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable


def split_patterns(values: Iterable[str] | str | None) -> list[str]:
    """Flatten repeated and comma-separated pattern values into one list."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        out.extend(part.strip() for part in str(value).split(",") if part.strip())
    return out


def matches(name: str, patterns: Iterable[str]) -> bool:
    """True when ``name`` equals one of ``patterns`` or fits its glob."""
    return any(name == pattern or fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def select(names: Iterable[str], include: Iterable[str] | str | None = None,
           exclude: Iterable[str] | str | None = None) -> list[str]:
    """The names kept by ``include`` (all when empty) minus those hit by ``exclude``, in order."""
    inc = split_patterns(include)
    exc = split_patterns(exclude)
    return [n for n in names if (not inc or matches(n, inc)) and not (exc and matches(n, exc))]
