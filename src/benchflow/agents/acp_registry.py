"""``-a acp:<id>[@<version>]``: an agent entry of the ACP registry (github.com/agentclientprotocol/registry).

The registry is a git repository with one ``<id>/agent.json`` per agent. As Harbor's ACP runner reads
it: the entry at the tip of ``main`` when no version (or the tip's version) is asked for; otherwise the
file's history (GitHub's commits API, newest first) is walked until an ``agent.json`` of that version
turns up. A pinned version, once found, is kept under the cache folder (``acp-registry/<id>/<version>``)
so a resumed or repeated run reads the same entry without the network.

Where to read it: ``$BENCHFLOW_ACP_REGISTRY_RAW`` (the raw files; default raw.githubusercontent.com)
and ``$BENCHFLOW_ACP_REGISTRY_API`` (the repository's API; default api.github.com); ``$GITHUB_TOKEN``,
when set, goes in the request header (never on disk). :mod:`.acp_entry` turns an entry into an agent.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchflow.errors import ConfigError
from benchflow.util import atomic
from benchflow.util.cache_dir import cache_root

PREFIX = "acp:"
RAW_ENV, API_ENV = "BENCHFLOW_ACP_REGISTRY_RAW", "BENCHFLOW_ACP_REGISTRY_API"
DEFAULT_RAW = "https://raw.githubusercontent.com/agentclientprotocol/registry"
DEFAULT_API = "https://api.github.com/repos/agentclientprotocol/registry"
BRANCH = "main"
_ID = re.compile(r"^[a-z][a-z0-9-]*$")  # the registry's own pattern for an agent id
_TIMEOUT = 30.0


class _Open(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class BinaryTarget(_Open):
    archive: str
    cmd: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    sha256: str | None = None


class PackageDistribution(_Open):
    package: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)


class Distribution(_Open):
    binary: dict[str, BinaryTarget] | None = None
    npx: PackageDistribution | None = None
    uvx: PackageDistribution | None = None


class RegistryEntry(_Open):
    """One ``agent.json`` (the fields bench uses; the rest is ignored)."""

    id: str
    name: str = ""
    version: str
    description: str = ""
    distribution: Distribution


def parse(spec: str) -> tuple[str, str | None]:
    """``acp:<id>[@<version>]`` -> (id, version or None).

    Raises:
        ConfigError: no id, an id the registry would not hold, or an empty version.
    """
    agent_id, at, version = spec.removeprefix(PREFIX).strip().partition("@")
    if not _ID.match(agent_id):
        raise ConfigError(f"agent {spec!r}: write an ACP registry agent as acp:<id>[@<version>] "
                          "(id: lowercase letters, digits and '-', starting with a letter)")
    if at and not version:
        raise ConfigError(f"agent {spec!r}: the version after '@' is empty; give one or leave '@' out")
    return agent_id, version or None


def resolve(spec: str) -> RegistryEntry:
    """The registry entry ``spec`` names (see the module docstring).

    Raises:
        ConfigError: the registry cannot be read, has no such agent or version, or the entry is malformed.
    """
    agent_id, version = parse(spec)
    cached = _cache_file(agent_id, version) if version else None
    if cached is not None and cached.is_file():
        return _entry(json.loads(cached.read_text()), spec)
    with _client() as client:
        entry = _entry(_get(client, f"{_raw()}/{BRANCH}/{agent_id}/agent.json", spec), spec)
        if version is not None and entry.version != version:
            entry = _older(client, agent_id, version, spec)
    if version is not None:
        atomic.write_json(_cache_file(agent_id, version), entry.model_dump(exclude_none=True))
    return entry


def _older(client: Any, agent_id: str, version: str, spec: str) -> RegistryEntry:
    """The ``agent.json`` of ``version`` from the file's history, newest commit first."""
    page = 1
    while True:
        commits = _get(client, f"{_api()}/commits", spec,
                       params={"path": f"{agent_id}/agent.json", "per_page": 100, "page": page})
        if not isinstance(commits, list) or not commits:
            raise ConfigError(f"agent {spec!r}: the ACP registry has no version {version} of {agent_id}; "
                              f"leave @{version} out for its latest, or pick one its history has")
        for commit in commits:
            sha = commit.get("sha") if isinstance(commit, dict) else None
            if isinstance(sha, str) and sha:
                entry = _entry(_get(client, f"{_raw()}/{sha}/{agent_id}/agent.json", spec), spec)
                if entry.version == version:
                    return entry
        page += 1


def _entry(payload: Any, spec: str) -> RegistryEntry:
    try:
        return RegistryEntry.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigError(f"agent {spec!r}: the ACP registry's agent.json field {where}: {first['msg']}") from None


def _get(client: Any, url: str, spec: str, params: dict[str, Any] | None = None) -> Any:
    import httpx

    try:
        response = client.get(url, params=params)
    except httpx.HTTPError as exc:
        raise ConfigError(f"agent {spec!r}: cannot reach the ACP registry at {url} ({exc}); "
                          f"check the network or set {RAW_ENV}/{API_ENV}") from None
    if response.status_code == 404:
        raise ConfigError(f"agent {spec!r}: not in the ACP registry ({url} is 404); check the id")
    if response.status_code != 200:
        raise ConfigError(f"agent {spec!r}: the ACP registry answered {response.status_code} for {url}")
    try:
        return response.json()
    except ValueError:
        raise ConfigError(f"agent {spec!r}: the ACP registry's answer from {url} is not JSON") from None


def _client() -> Any:
    import httpx

    headers = {"Accept": "application/vnd.github+json", "User-Agent": "benchflow-acp-registry"}
    token = os.environ.get("GITHUB_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(headers=headers, timeout=_TIMEOUT, follow_redirects=True)


def _raw() -> str:
    return (os.environ.get(RAW_ENV) or DEFAULT_RAW).rstrip("/")


def _api() -> str:
    return (os.environ.get(API_ENV) or DEFAULT_API).rstrip("/")


def _cache_file(agent_id: str, version: str) -> Path:
    """Per registry (a stand-in's entries never pass for the real one's), agent and version."""
    registry = hashlib.sha256(_raw().encode()).hexdigest()[:12]
    return cache_root() / "acp-registry" / registry / agent_id / re.sub(r"[^\w.+-]", "_", version) / "agent.json"
