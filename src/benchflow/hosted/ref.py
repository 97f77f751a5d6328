"""``owner/name[@version]``: which hosted environment, and the ``KEY=VALUE`` arguments given for it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from benchflow.errors import ConfigError

_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class HostedRef:
    """A hosted environment on Prime Intellect's Environments Hub."""

    owner: str
    name: str
    version: str | None = None
    """None: the hub's latest."""

    @property
    def env_id(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def package(self) -> str:
        """The distribution name the hub's index serves (``prime env install``'s normalisation)."""
        return self.name.replace("-", "_").lower()

    @property
    def label(self) -> str:
        return f"{self.env_id}@{self.version or 'latest'}"


def parse_ref(source: str, version: str | None = None) -> HostedRef:
    """``owner/name`` or ``owner/name@version`` (with ``--source-env-version``, which must agree).

    Raises:
        ConfigError: not ``owner/name``, or two different versions.
    """
    text = source.strip()
    if text.startswith("primeintellect:"):
        text = text[len("primeintellect:"):]
    embedded = None
    if "@" in text:
        text, embedded = text.rsplit("@", 1)
    owner, _, name = text.partition("/")
    if not (_PART.match(owner) and _PART.match(name or "")) or "/" in name:
        raise ConfigError(f"--source-env {source!r}: give owner/name or owner/name@version "
                          "(e.g. primeintellect/general-agent@0.1.1)")
    if embedded is not None and not embedded:
        raise ConfigError(f"--source-env {source!r}: nothing after '@'; give a version or leave '@' out")
    if embedded and version and embedded != version:
        raise ConfigError(f"--source-env {source!r} names version {embedded} and --source-env-version "
                          f"{version}; give one")
    return HostedRef(owner, name, embedded or version or None)


def parse_settings(entries: list[str] | None, flag: str) -> dict[str, Any]:
    """Repeated ``KEY=VALUE``: a value that parses as JSON (``5``, ``true``, ``[1,2]``) is that value, else text.

    Raises:
        ConfigError: an entry without ``=`` or with an empty key.
    """
    out: dict[str, Any] = {}
    for entry in entries or []:
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} {entry!r}: give KEY=VALUE")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out
