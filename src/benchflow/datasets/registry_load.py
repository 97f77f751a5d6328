"""Where a registry comes from: a local file, a URL, or a BenchFlow Hub (``hub:<url>``).

``--registry`` takes a path, a ``file://`` URL, an ``http(s)://`` URL or
``hub:<url>`` (the hub's ``<url>/api/registry.json``); ``--hub URL`` is the same as
``hub:URL``. With neither, a ``name@version`` dataset is read from BenchFlow's
registry and an ``org/name@version`` one from ``$BENCHFLOW_HUB_URL``.

A registry read over the network is kept in the user cache, so a later run (or
``bench eval resume``) without network reads the copy it fetched last.
Registries from the network may pin tasks to github.com repositories only; a
registry that is itself a local file may also pin local repositories
(``file://`` URLs or paths), which is how private mirrors and tests use it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from benchflow.errors import ConfigError, DatasetError
from benchflow.util import atomic
from benchflow.util.cache_dir import cache_root

from .registry import DatasetRef, DatasetVersion, parse_registry

DEFAULT_REGISTRY_URL = "https://raw.githubusercontent.com/benchflow-ai/skillsbench/main/registry.json"
HUB_ENV = "BENCHFLOW_HUB_URL"
HUB_REGISTRY_PATH = "/api/registry.json"

log = logging.getLogger(__name__)


@dataclass
class LoadedRegistry:
    versions: list[DatasetVersion]
    location: str
    """What was read: a resolved file path or a URL."""
    local: bool
    """True for a registry that is a local file: it may pin local git repositories."""

    def resolve_url(self, url: str) -> str:
        """``url`` read against the registry's own location (a hub's archive links are relative)."""
        if "://" in url or url.startswith("/"):
            return url
        if self.local:
            return str((Path(self.location).parent / url).resolve())
        import httpx

        return str(httpx.URL(self.location).join(url))


def registry_location(registry: str | None, hub: str | None, ref: DatasetRef | None = None) -> str:
    """The registry ``--registry``/``--hub`` name, with the defaults of the module docstring.

    Raises:
        ConfigError: both given, or an org/name dataset with no hub to read it from.
    """
    if registry and hub:
        raise ConfigError("--registry and --hub both name a registry; give one (--hub URL = --registry hub:URL)")
    if hub:
        return "hub:" + hub
    if registry:
        return registry
    if ref is not None and ref.on_hub:
        env = os.environ.get(HUB_ENV)
        if not env:
            raise ConfigError(f"{ref}: an org/name dataset lives on a BenchFlow Hub; give --hub URL "
                              f"or set ${HUB_ENV}")
        return "hub:" + env
    return DEFAULT_REGISTRY_URL


def load_registry(location: str) -> LoadedRegistry:
    """Read and parse the registry at ``location`` (see the module docstring).

    Raises:
        ConfigError: a local registry file that cannot be read (bad input, exit 2).
        DatasetError: unreachable with no cached copy, or not a registry.
    """
    if location.startswith("hub:"):
        base = location[4:].rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise ConfigError(f"registry {location!r}: give hub:<http(s) URL of the hub>")
        location = base + HUB_REGISTRY_PATH
    if location.startswith(("http://", "https://")):
        text = _fetch(location)
        return LoadedRegistry(parse_registry(_json(text, location), location), location, local=False)
    path = Path(location.removeprefix("file://")).expanduser()
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the registry ({exc.strerror}); give a registry JSON file or URL") from None
    return LoadedRegistry(parse_registry(_json(text, str(path)), str(path)), str(path.resolve()), local=True)


def _json(text: str, source: str) -> object:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise DatasetError(f"{source}: not JSON ({exc})") from None


def _copy_path(url: str) -> Path:
    return cache_root() / "datasets" / "registries" / (hashlib.sha256(url.encode()).hexdigest()[:24] + ".json")


def _fetch(url: str) -> str:
    import httpx

    copy = _copy_path(url)
    try:
        response = httpx.get(url, timeout=30.0, follow_redirects=True)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        if copy.is_file():
            log.warning("registry %s unreachable (%s); using the copy fetched earlier", url, exc)
            return copy.read_text()
        raise DatasetError(f"registry {url}: cannot fetch it ({exc}); check the network, or pass --registry FILE") from None
    atomic.write_text(copy, response.text)
    return response.text
