"""The agent registry: built-in agents from ``builtin_agents.toml`` plus the user's own.

Sources, later ones overriding earlier ones by name:

1. ``builtin_agents.toml`` beside this module;
2. ``*.toml`` files in ``$BENCHFLOW_AGENTS_DIR`` (else ``~/.config/benchflow/agents``);
3. a path given to ``-a`` (``--agent ./my-agent.toml``).

A file holds either one agent (top-level keys, ``name = ...``) or several
``[agents.NAME]`` tables, each in our schema (``agent_config.py``) or in the
reference's (``install_cmd``, ``launch_cmd``, ...: ``reference_schema.py``). The controls ``oracle`` and ``nop`` are not registry
agents (``benchflow.agents.controls``); they are only named in error messages.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchflow.errors import ConfigError
from benchflow.util.files import dotenv_names

from .agent_config import AgentConfig
from .reference_schema import from_reference, is_reference_entry

BUILTIN_FILE = Path(__file__).with_name("builtin_agents.toml")
CONTROL_NAMES = ("oracle", "nop")


def user_agents_dir() -> Path:
    """The user registry folder: ``$BENCHFLOW_AGENTS_DIR`` or ``~/.config/benchflow/agents``."""
    override = os.environ.get("BENCHFLOW_AGENTS_DIR")
    return Path(override).expanduser() if override else Path.home() / ".config" / "benchflow" / "agents"


def _validation_message(path: Path, prefix: str, exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in (*([prefix] if prefix else []), *first["loc"]))
    fix = "remove it" if first["type"] == "extra_forbidden" else "fix its value"
    return f"{path}: field {where or '(top level)'}: {first['msg']}; {fix} (schema: benchflow/agents/agent_config.py)"


def _parse_file(path: Path) -> list[AgentConfig]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read agent file ({exc.strerror}); check the path") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the syntax") from exc
    if "agents" in data:
        extra = sorted(set(data) - {"agents"})
        if extra:
            raise ConfigError(f"{path}: field {extra[0]}: not allowed beside [agents.*] tables; move it into one")
        tables: dict[str, Any] = data["agents"]
        entries = [(f"agents.{key}", {"name": key, **value}) for key, value in tables.items()]
    else:
        entries = [("", data)]
    configs = []
    for prefix, entry in entries:
        if isinstance(entry, dict) and is_reference_entry(entry):
            entry = from_reference(entry, path, prefix)
        try:
            configs.append(AgentConfig.model_validate(entry))
        except ValidationError as exc:
            raise ConfigError(_validation_message(path, prefix, exc)) from exc
    return configs


@lru_cache(maxsize=1)
def _builtin() -> tuple[AgentConfig, ...]:
    return tuple(_parse_file(BUILTIN_FILE))


def _user(folder: Path) -> list[AgentConfig]:
    if not folder.is_dir():
        return []
    configs: list[AgentConfig] = []
    for path in sorted(folder.glob("*.toml")):
        configs.extend(_parse_file(path))
    return configs


def list_agents() -> list[AgentConfig]:
    """Every registry agent, built-ins first then the user folder (a user entry replaces a built-in)."""
    merged: dict[str, AgentConfig] = {c.name: c for c in _builtin()}
    merged.update({c.name: c for c in _user(user_agents_dir())})
    return list(merged.values())


def _known_names(configs: list[AgentConfig]) -> str:
    return ", ".join([*sorted(c.name for c in configs), *CONTROL_NAMES])


def _looks_like_path(spec: str) -> bool:
    return spec.endswith(".toml") or os.sep in spec or spec.startswith(".")


def get_agent_config(name_or_path: str) -> AgentConfig:
    """The config for a registry name, an alias, a ``.toml`` file, or ``acp:<id>[@<version>]`` (the ACP
    registry's entry: :mod:`.acp_registry`).

    Raises:
        ConfigError: unknown name (the message lists the known ones), a bad file, or an ACP registry
            entry that cannot be read.
    """
    if name_or_path.startswith("acp:"):  # imported only then: the registry's models are not every run's
        from . import acp_registry
        from .acp_entry import agent_config

        return agent_config(acp_registry.resolve(name_or_path), _builtin())
    if _looks_like_path(name_or_path):
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise ConfigError(f"agent file {name_or_path}: not found; give a registry name or an existing .toml")
        configs = _parse_file(path)
        if len(configs) != 1:
            raise ConfigError(f"{path}: holds {len(configs)} agents; an agent file must define exactly one")
        return configs[0]
    configs = list_agents()
    for config in configs:
        if name_or_path == config.name:
            return config
    for config in configs:
        if name_or_path in config.aliases:
            return config
    raise ConfigError(f"unknown agent {name_or_path!r}; known agents: {_known_names(configs)} "
                      "(or a path to an agent .toml, or acp:<id>[@<version>] from the ACP registry)")


def resolve_agent(spec: str) -> Any:
    """The runnable :class:`~benchflow.agents.base.Agent` for a registry name/alias or ``.toml`` path.

    Controls (``oracle``, ``nop``) are handled by the caller (``benchflow.agents.resolve``).

    Raises:
        ConfigError: unknown name, bad file, or a protocol this build cannot drive.
    """
    config = get_agent_config(spec)
    if config.unavailable_reason:
        raise ConfigError(f"agent {config.name} cannot run here: {config.unavailable_reason}")
    if config.protocol != "acp":
        raise ConfigError(f"agent {spec}: protocol {config.protocol!r} has no ACP adapter; "
                          "run it with --harness native, or set protocol = \"acp\"")
    from .acp_runtime import AcpAgent

    return AcpAgent(config)


@dataclass(frozen=True)
class CredentialFound:
    """One credential found on this machine: where it is, never its value."""

    name: str
    source: str
    """``environment``, ``.env (<path>)`` or ``file``."""


def find_credentials(config: AgentConfig, environ: Mapping[str, str] | None = None,
                     home: Path | None = None) -> list[CredentialFound]:
    """The credentials for ``config`` present here: API-key variables, then subscription files."""
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    dotenv = Path(environ.get("BENCHFLOW_DOTENV_PATH") or ".env")
    dotenv_found = dotenv_names(dotenv)
    found: list[CredentialFound] = []
    for name in config.api_key_env:
        if environ.get(name):
            found.append(CredentialFound(name, "environment"))
        elif name in dotenv_found:
            found.append(CredentialFound(name, f".env ({dotenv})"))
    if config.subscription:
        for pattern in config.subscription.host_files:
            path = home / pattern[2:] if pattern.startswith("~/") else Path(pattern)
            if path.is_file():
                found.append(CredentialFound(pattern, "file"))
    return found
