"""The environment manifest (``environment.toml`` / ``.yaml``, contracts §7.4): a stateful environment's
services, how to tell them the task, when they are ready.

Keys live under a top-level ``[environment]`` table (``environment:`` in YAML)::

    name            str, required
    image           a ready-to-run image whose entrypoint starts the services   } exactly one
    base_image      the image per-task images build FROM                         }
    ports           [int]                      more ports the environment exposes
    owns_lifecycle  bool = true                true: the image starts its services; false: [[services]] are started
    keep_alive      bool = true
    isolation       per_task | persistent
    [[services]]    name, command, port, health_path = "/health"   (required iff owns_lifecycle = false)
    [task_selection] mechanism = image | env_var (default), key = BENCHFLOW_TASK_ID, inject_into = entrypoint | exec
    [readiness]     http = [urls], tcp = [ports], timeout_sec = 120 (no probes given: each service's health URL)
    [forward_env]   keys = [host variable names]
    [state]         kind = sqlite, paths = [globs]  (read by bench branch --snapshot-layers environment)
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from benchflow.errors import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Service(_Strict):
    name: str = Field(min_length=1)
    command: str = Field(min_length=1)
    """One command line, run with ``sh -c`` as root inside the trial's sandbox; its first word is the
    program whose ``--help`` tells whether this image has the service."""
    port: int = Field(ge=1, le=65535)
    health_path: str = "/health"

    @property
    def program(self) -> str:
        return self.command.split()[0]

    @property
    def health_url(self) -> str:
        return f"http://localhost:{self.port}{self.health_path}"


class TaskSelection(_Strict):
    mechanism: Literal["image", "env_var"] = "env_var"
    """``image``: the task's data is baked into its image; ``env_var``: the task's name goes to ``key``."""
    key: str = "BENCHFLOW_TASK_ID"
    inject_into: Literal["entrypoint", "exec"] = "entrypoint"


class Readiness(_Strict):
    http: list[str] = []
    tcp: list[int] = []
    timeout_sec: float = Field(default=120, gt=0)


class ForwardEnv(_Strict):
    keys: list[str] = []


class State(_Strict):
    kind: Literal["sqlite"] = "sqlite"
    paths: list[str] = []


class EnvironmentManifest(_Strict):
    name: str = Field(min_length=1)
    image: str | None = None
    base_image: str | None = None
    ports: list[int] = []
    services: list[Service] = []
    owns_lifecycle: bool = True
    keep_alive: bool = True
    isolation: Literal["per_task", "persistent"] = "per_task"
    task_selection: TaskSelection = Field(default_factory=TaskSelection)
    readiness: Readiness = Field(default_factory=Readiness)
    forward_env: ForwardEnv = Field(default_factory=ForwardEnv)
    state: State | None = None

    @model_validator(mode="after")
    def _consistent(self) -> EnvironmentManifest:
        if bool(self.image) == bool(self.base_image):
            raise ValueError("set exactly one of image (a ready-to-run image) and base_image (what per-task "
                             "images build FROM)")
        if not self.owns_lifecycle and not self.services:
            raise ValueError("owns_lifecycle = false needs [[environment.services]]: something has to start them")
        if self.owns_lifecycle and self.services:
            raise ValueError("owns_lifecycle = true means the image starts its services; remove "
                             "[[environment.services]] or set owns_lifecycle = false")
        names = [s.name for s in self.services]
        if len(set(names)) != len(names):
            raise ValueError("two services share a name; give each its own")
        return self

    def probes(self, started: list[Service]) -> list[tuple[str, str]]:
        """(kind, target) pairs the environment must answer before the agent starts: the declared
        ``readiness`` probes, else the health URL of each service that was started."""
        http = self.readiness.http or [s.health_url for s in started]
        return [("http", url) for url in http] + [("tcp", str(port)) for port in self.readiness.tcp]

    def record(self) -> dict[str, object]:
        """The manifest as ``config.json``'s ``environment_manifest`` shows it (contracts §3.2)."""
        return {"name": self.name, "image": self.image, "base_image": self.base_image,
                "owns_lifecycle": self.owns_lifecycle, "isolation": self.isolation,
                "services": [s.name for s in self.services]}


def load_manifest(path: Path) -> EnvironmentManifest:
    """The manifest in ``path`` (TOML, or YAML for ``.yaml``/``.yml``).

    Raises:
        ConfigError: unreadable, no ``environment`` table, or a key that is wrong (named, with the fix).
    """
    try:
        text = path.read_text(encoding="utf-8")
        document = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else tomllib.loads(text)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not a readable environment manifest ({str(exc).splitlines()[0]}); "
                          "fix the file") from None
    section = document.get("environment") if isinstance(document, dict) else None
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: no [environment] table; an environment manifest keeps its keys under "
                          "[environment] (environment: in YAML)")
    try:
        return EnvironmentManifest.model_validate(section)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(["environment", *(str(p) for p in err["loc"])])
        raise ConfigError(f"{path}: {where}: {str(err['msg']).removeprefix('Value error, ')}") from None
