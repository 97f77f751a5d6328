"""What a run binds as its stateful environment: ``--state`` (which wins) or ``--environment-manifest``.

Either takes a manifest path or a ``name@version`` registry spec (:mod:`.registry`); ``--state`` also takes
inline JSON ``{"name": <path or spec>, "tools": [...]}``, which keeps only the services the tools name (a
tool names the service called that, or ``<anything>-<tool>``: ``gmail`` is env0's ``mock-gmail``). The
binding is content-addressed: ``env_hash`` is the sha256 of the manifest file's bytes, so a trial records
exactly which environment it ran against.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError

from .manifest import EnvironmentManifest, load_manifest
from .registry import is_spec, resolve


@dataclass(frozen=True)
class Binding:
    manifest: EnvironmentManifest
    flag: str
    """``--state`` or ``--environment-manifest``: which setting bound it."""
    path: Path
    spec: str | None
    """``name@version`` when it came from a registry, else None."""
    env_hash: str
    tools: tuple[str, ...] | None = None

    def record(self) -> dict[str, Any]:
        """``config.json``'s ``environment_manifest``: the manifest (contracts §3.2) and where it came from."""
        return {**self.manifest.record(), "bound_by": self.flag, "spec": self.spec, "path": str(self.path),
                "env_hash": self.env_hash, "tools": list(self.tools) if self.tools is not None else None}


def bind(spec: Any) -> Binding | None:
    """The binding a ``RunSpec`` asks for (``state`` over ``environment_manifest``), or None.

    Raises:
        ConfigError: a value that names no manifest, a manifest that does not load, an unknown tool.
    """
    if spec.state:
        return _from_state(spec.state)
    if spec.environment_manifest:
        return _load(spec.environment_manifest, "--environment-manifest")
    return None


def _load(value: str, flag: str) -> Binding:
    path, name = Path(value).expanduser(), None
    if not path.is_file():
        if not is_spec(value):
            raise ConfigError(f"{flag} {value}: no such file; give an environment.toml path or name@version "
                              "(env0@prod, env0@outage)")
        path, name = resolve(value, flag)
    data = path.read_bytes()
    return Binding(manifest=load_manifest(path), flag=flag, path=path.resolve(), spec=name,
                   env_hash="sha256:" + hashlib.sha256(data).hexdigest())


def _from_state(value: str) -> Binding:
    text = value.strip()
    if not text.startswith("{"):
        return _load(text, "--state")
    try:
        given = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"--state: not valid JSON ({exc}); e.g. '{{\"name\": \"env0\", \"tools\": [\"gmail\"]}}'") \
            from None
    if not isinstance(given, dict) or not isinstance(given.get("name"), str) or set(given) - {"name", "tools"}:
        raise ConfigError('--state: the JSON takes "name" (a manifest path or name@version) and optionally '
                          '"tools", e.g. {"name": "env0", "tools": ["gmail", "gcal"]}')
    binding = _load(given["name"], "--state")
    tools = given.get("tools")
    if tools is None:
        return binding
    if not isinstance(tools, list) or not tools or not all(isinstance(t, str) and t for t in tools):
        raise ConfigError('--state: "tools" must be a non-empty list of service names, e.g. ["gmail", "gcal"]')
    services = binding.manifest.services
    kept, missing = [], []
    for tool in tools:
        found = [s for s in services if s.name == tool or s.name.endswith(f"-{tool}")]
        if len(found) != 1:
            missing.append(tool)
        kept.extend(s for s in found if s not in kept)
    if missing:
        raise ConfigError(f"--state: tools {', '.join(missing)} name no single service of {binding.manifest.name} "
                          f"(it has {', '.join(s.name for s in services) or 'none it starts'})")
    manifest = binding.manifest.model_copy(update={"services": [s for s in services if s in kept]})
    return Binding(manifest=manifest, flag="--state", path=binding.path, spec=binding.spec,
                   env_hash=binding.env_hash, tools=tuple(tools))
