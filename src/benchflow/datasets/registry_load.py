"""Where a registry comes from: a local file, a URL, or a BenchFlow Hub (``hub:<url>``).

``--registry`` takes a path, a ``file://`` URL, an ``http(s)://`` URL or
``hub:<url>`` (the hub's ``<url>/api/registry.json``); ``--hub URL`` is the same as
``hub:URL``; ``harbor`` names Harbor's registry and ``benchflow`` BenchFlow's.
With neither, a ``name@version`` dataset is looked up in BenchFlow's registry
first and, when it has no such dataset version, in Harbor's (``open_dataset``);
an ``org/name@version`` one is read from ``$BENCHFLOW_HUB_URL``. A mirror of
either registry is named by ``$BENCHFLOW_REGISTRY_URL`` or
``$BENCHFLOW_HARBOR_REGISTRY_URL``.

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

from .registry import DatasetRef, DatasetVersion, find_version, parse_registry

DEFAULT_REGISTRY_URL = "https://raw.githubusercontent.com/benchflow-ai/skillsbench/main/registry.json"
HARBOR_REGISTRY_URL = "https://raw.githubusercontent.com/laude-institute/harbor/main/registry.json"
REGISTRY_ENV = "BENCHFLOW_REGISTRY_URL"
HARBOR_ENV = "BENCHFLOW_HARBOR_REGISTRY_URL"
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
    if registry == "harbor":
        return harbor_registry()
    if registry == "benchflow":
        return default_registry()
    if registry:
        return registry
    if ref is not None and ref.on_hub:
        env = os.environ.get(HUB_ENV)
        if not env:
            raise ConfigError(f"{ref}: an org/name dataset lives on a BenchFlow Hub; give --hub URL "
                              f"or set ${HUB_ENV}")
        return "hub:" + env
    return default_registry()


def default_registry() -> str:
    """BenchFlow's registry: ``$BENCHFLOW_REGISTRY_URL`` (a mirror) or the one on GitHub."""
    return os.environ.get(REGISTRY_ENV) or DEFAULT_REGISTRY_URL


def harbor_registry() -> str:
    """Harbor's registry: ``$BENCHFLOW_HARBOR_REGISTRY_URL`` (a mirror) or Harbor's default URL."""
    return os.environ.get(HARBOR_ENV) or HARBOR_REGISTRY_URL


def open_dataset(ref: DatasetRef, registry: str | None, hub: str | None) -> tuple[LoadedRegistry, DatasetVersion]:
    """The registry and entry of ``ref``: from the registry named, else BenchFlow's, then Harbor's.

    Raises:
        ConfigError: conflicting flags, or an org/name dataset with no hub.
        DatasetError: a registry that cannot be read, or no such dataset version (in neither registry,
            naming both, when none was named).
    """
    if registry or hub or ref.on_hub:
        loaded = load_registry(registry_location(registry, hub, ref))
        return loaded, find_version(loaded.versions, ref, loaded.location)
    ours = load_registry(default_registry())
    try:
        return ours, find_version(ours.versions, ref, f"BenchFlow's registry {ours.location}")
    except DatasetError as exc:
        mine = str(exc)
    try:
        harbor = load_registry(harbor_registry())
        return harbor, find_version(harbor.versions, ref, f"Harbor's registry {harbor.location}")
    except DatasetError as exc:
        raise DatasetError(f"{ref} is in neither registry: {mine}; {exc}; check the name and version "
                           "(bench hub list, bench hub list --registry harbor) or give --registry") from None


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
