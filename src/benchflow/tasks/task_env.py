"""Host variables a task reads through ``${NAME}`` templates, under ``--allow-task-env``.

A task's ``env`` maps (``verifier.env``, ``sandbox.env``, ``oracle.env``, and
every other ``env`` map of its config) and its ``environment/docker-compose.yaml``
may read this machine's environment as ``${NAME}`` or ``${NAME:-default}``. Tasks are code nobody reviewed, so only
the names the user passes with ``--allow-task-env`` are read: a task that needs
any other one without a default is refused before anything starts, and
``${NAME:-default}`` for a name not allowed gets the default, never the host
value. The values that were read are secrets of the run: the caller redacts
them wherever they would be written (:mod:`benchflow.util.scrub`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

FLAG = "--allow-task-env"
TEMPLATE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MIN_SECRET_LEN = 6
"""Shorter values are not redacted (they would mask ordinary text); the run card says so."""


@dataclass(frozen=True)
class EnvRead:
    """One ``${NAME}`` in one env value of a task."""

    where: str
    """The key that reads it, e.g. ``verifier.env.API_KEY``."""
    name: str
    default: str | None


def check_names(names: Iterable[str]) -> list[str]:
    """The names as given, each checked to be a variable name.

    Raises:
        ValueError: a name that is not ``[A-Za-z_][A-Za-z0-9_]*``.
    """
    out = []
    for name in names:
        if not NAME.match(name):
            raise ValueError(f"{FLAG} {name!r}: give a variable name such as MY_TOKEN (letters, digits, _)")
        if name not in out:
            out.append(name)
    return out


def _env_maps(node: Any, where: str) -> Iterable[tuple[str, Mapping[str, str]]]:
    """Every ``env`` mapping inside a config model, with its dotted location."""
    if isinstance(node, BaseModel):
        for field in type(node).model_fields:
            value = getattr(node, field)
            path = f"{where}.{field}" if where else field
            if field == "env" and isinstance(value, Mapping):
                yield path, value
            else:
                yield from _env_maps(value, path)
    elif isinstance(node, (list, tuple)):
        for i, item in enumerate(node):
            yield from _env_maps(item, f"{where}[{i}]")


def env_reads(config: Any) -> list[EnvRead]:
    """Every ``${NAME}`` the task's config reads from the host, in config order."""
    out = []
    for path, values in _env_maps(config, ""):
        for key, value in values.items():
            for match in TEMPLATE.finditer(str(value)):
                out.append(EnvRead(f"{path}.{key}", match.group(1), match.group(2)))
    return out


COMPOSE_TEMPLATE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}")
"""Compose's forms: ``${NAME}``, ``${NAME:-default}`` and ``${NAME-default}``."""


def compose_reads(task: Any) -> list[EnvRead]:
    """Every ``${NAME}`` of the task's ``environment/docker-compose.yaml`` (none without one) but the
    harness's own (:data:`~benchflow.tasks.harbor_compose.HARNESS_VARIABLES`) and those of a host-folder
    volume, which is never mounted."""
    path = getattr(getattr(task, "paths", None), "compose_file", None)
    if path is None or not path.is_file():
        return []
    import yaml  # only for a task with a compose file: a plain run loads no PyYAML

    from .harbor_compose import HARNESS_VARIABLES, without_host_mounts

    try:
        data, _ = without_host_mounts(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []  # the compose loader reports an unreadable file
    return [EnvRead(f"environment/{path.name}", m.group(1), m.group(2)) for text in _strings(data)
            for m in COMPOSE_TEMPLATE.finditer(text)
            if text[max(0, m.start() - 1):m.start()] != "$"  # $${NAME} is a literal in compose
            and m.group(1) not in HARNESS_VARIABLES]


def _strings(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(key)
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


def env_problems(task: Any, allowed: Iterable[str], host_env: Mapping[str, str] | None = None) -> list[str]:
    """One line per variable the task would need but may not (or cannot) read; empty when it can run.

    Lines name the config key, the variable and the flag (callers add the task's name)."""
    allowed = set(allowed)
    env = os.environ if host_env is None else host_env
    out: list[str] = []
    seen: set[tuple[str, str]] = set()
    for read in [*env_reads(task.config), *compose_reads(task)]:
        if read.default is not None or (read.where, read.name) in seen:
            continue
        seen.add((read.where, read.name))
        if read.name not in allowed:
            out.append(f"{read.where} reads ${{{read.name}}} from your environment, which is not "
                       f"allowed; pass {FLAG} {read.name} to let it, or give it a default (${{{read.name}:-value}})")
        elif read.name not in env:
            out.append(f"{read.where} reads ${{{read.name}}}, which {FLAG} allows but your "
                       f"environment does not set; set it, or give it a default (${{{read.name}:-value}})")
    return out


@dataclass
class _Filler:
    allowed: frozenset[str]
    host_env: Mapping[str, str]
    used: dict[str, str] = dataclasses.field(default_factory=dict)
    """Allowed names whose host value was filled in: the run's secrets."""

    def fill(self, text: str, where: str) -> str:
        def one(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in self.allowed and name in self.host_env:
                self.used[name] = self.host_env[name]
                return self.host_env[name]
            if default is not None:
                return default
            from benchflow.errors import TaskError

            raise TaskError(f"{where}: ${{{name}}} is not allowed or not set; pass {FLAG} {name} and set it, "
                            f"or give it a default (${{{name}:-value}})")
        return TEMPLATE.sub(one, text)

    def model(self, node: Any, where: str) -> Any:
        if isinstance(node, BaseModel):
            update = {}
            for field in type(node).model_fields:
                value = getattr(node, field)
                path = f"{where}.{field}" if where else field
                if field == "env" and isinstance(value, Mapping):
                    update[field] = {k: self.fill(str(v), f"{path}.{k}") for k, v in value.items()}
                elif isinstance(value, (BaseModel, list, tuple)):
                    new = self.model(value, path)
                    if new is not value:
                        update[field] = new
            return node.model_copy(update=update) if update else node
        if isinstance(node, (list, tuple)):
            items = [self.model(item, f"{where}[{i}]") for i, item in enumerate(node)]
            return type(node)(items) if any(a is not b for a, b in zip(items, node)) else node
        return node


def fill_values(values: Mapping[str, str], where: str, allowed: Iterable[str] = (),
                host_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``values`` with their templates filled: allowed names from the host, others by their default.

    Raises:
        TaskError: a name without a default that is not allowed or not set.
    """
    filler = _Filler(frozenset(allowed), os.environ if host_env is None else host_env)
    return {key: filler.fill(str(value), f"{where}.{key}") for key, value in values.items()}


def resolve_task_env(task: Any, allowed: Iterable[str],
                     host_env: Mapping[str, str] | None = None) -> tuple[Any, dict[str, str]]:
    """(a copy of ``task`` whose env maps hold the filled values, {allowed name: host value read}).

    The copy's ``env_resolved`` is True so the verifier does not fill its values again.
    The loaded task is not changed.

    Raises:
        TaskError: as :func:`env_problems` would report (call that first for all the lines).
    """
    filler = _Filler(frozenset(allowed), os.environ if host_env is None else host_env)
    config = filler.model(task.config, "")
    compose = {read.name: filler.host_env[read.name] for read in compose_reads(task)
               if read.name in filler.allowed and read.name in filler.host_env}
    filler.used.update(compose)
    resolved = dataclasses.replace(task, config=config, env_resolved=True, compose_env=compose)
    return resolved, dict(filler.used)


def short_values(task_name: str, used: Mapping[str, str]) -> list[str]:
    """Run-card warnings for allowed values too short to redact."""
    return [f"{task_name}: ${{{name}}} ({FLAG}) is shorter than {MIN_SECRET_LEN} characters, so its value is "
            "not redacted from the job folder" for name, value in used.items() if 0 < len(value) < MIN_SECRET_LEN]
