"""``org/name@version``: how a dataset version is named on a hub."""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchflow.errors import ConfigError

_PART = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"
_SPEC = re.compile(rf"^(?P<org>{_PART})/(?P<name>{_PART})@(?P<version>{_PART})$")
NAME_SHAPE = _SPEC
TASK_NAME = re.compile(rf"^{_PART}$")


@dataclass(frozen=True)
class DatasetRef:
    org: str
    name: str
    version: str

    @property
    def full_name(self) -> str:
        return f"{self.org}/{self.name}"

    def __str__(self) -> str:
        return f"{self.org}/{self.name}@{self.version}"

    @property
    def path(self) -> str:
        """The URL path segment: ``org/name/version``."""
        return f"{self.org}/{self.name}/{self.version}"


def parse_ref(spec: str, flag: str = "--name") -> DatasetRef:
    """Parse ``org/name@version``.

    Raises:
        ConfigError: not of that shape (exit 2).
    """
    match = _SPEC.match(spec.strip())
    if not match:
        raise ConfigError(f"{flag} {spec!r}: give a dataset version as org/name@version "
                          "(letters, digits, '.', '_' and '-'), e.g. robouse/metaworld-sample@0.6.1")
    return DatasetRef(match["org"], match["name"], match["version"])
