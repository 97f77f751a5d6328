"""Reading a legacy ``task.toml`` (contracts §1.7).

The Harbor spelling ``environment`` becomes ``sandbox`` (also
``verifier.environment`` and ``environment_mode``). Keys BenchFlow does not
know do not fail the load: they are moved into a compat envelope, reported as
warnings, and kept so ``bench import`` and ``bench export`` can carry them.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchflow.errors import TaskError

from .config import TaskConfig
from .validation import issues_of, problems_error

_RENAMES = (("environment", "sandbox"), ("environment_mode", "sandbox_mode"))


@dataclass
class LegacyConfig:
    """A parsed task.toml: the config, what the author declared, and what was set aside."""

    config: TaskConfig
    declared: dict[str, Any]
    """The TOML after renames, minus the unknown keys (what a migration writes back)."""
    warnings: list[str] = field(default_factory=list)
    compat: dict[str, Any] | None = None
    """``{"status": "preserved-extra", "source": "legacy", "extra": {...}, "extra_paths": [...]}``."""


def _rename(table: dict[str, Any], where: str, source: str) -> None:
    for old, new in _RENAMES:
        if old in table:
            if new in table:
                raise TaskError(f"{source}: both '{where}{old}' and '{where}{new}' are set; "
                                f"keep only '{where}{new}'")
            table[new] = table.pop(old)


def apply_renames(data: dict[str, Any], source: str = "task.toml") -> dict[str, Any]:
    data = copy.deepcopy(data)
    _rename(data, "", source)
    if isinstance(data.get("verifier"), dict):
        _rename(data["verifier"], "verifier.", source)
    for i, step in enumerate(data.get("steps") or []):
        if isinstance(step, dict) and isinstance(step.get("verifier"), dict):
            _rename(step["verifier"], f"steps[{i}].verifier.", source)
    if "version" in data:
        data.setdefault("schema_version", data.pop("version"))
        data.pop("version", None)
    return data


def _pop_path(data: Any, loc: tuple[Any, ...]) -> Any:
    node = data
    for part in loc[:-1]:
        node = node[part]
    return node.pop(loc[-1])


def _set_nested(target: dict[str, Any], loc: tuple[Any, ...], value: Any) -> None:
    node = target
    for part in loc[:-1]:
        node = node.setdefault(str(part), {})
    node[str(loc[-1])] = value


def _path_text(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc)


def parse_toml(task_dir: Path) -> dict[str, Any]:
    path = Path(task_dir) / "task.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TaskError(f"{path.name}: is not UTF-8 text; save it as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"task.toml: TOML error: {exc}; fix the syntax") from None


def read_legacy(task_dir: str | Path) -> LegacyConfig:
    """Parse and validate ``task_dir/task.toml``, setting unknown keys aside.

    Raises:
        TaskError: TOML syntax errors, conflicting spellings, invalid values.
    """
    data = apply_renames(parse_toml(Path(task_dir)))
    extra: dict[str, Any] = {}
    paths: list[str] = []
    notes: list[str] = []
    if _builds_instead_of_image(data, Path(task_dir)):
        _set_nested(extra, ("sandbox", "image"), data["sandbox"].pop("image"))
        paths.append("sandbox.image")
        notes.append("task.toml: [environment] image is not a Harbor key: environment/Dockerfile is built, as "
                     "Harbor does (docker_image names a prebuilt image)")
    if str(data.get("schema_version", "")).split(".")[0] == "0":
        notes.append(f"task.toml: version {data['schema_version']!r} is read as 1.0: a Harbor task.toml before "
                     "1.0 has the same keys, and Harbor runs it")
        data["schema_version"] = "1.0"
    for _ in range(50):  # each round removes at least one key; the cap guards odd inputs
        try:
            config = TaskConfig.model_validate(data)
            break
        except ValidationError as exc:
            errors = exc.errors()
            unknown = [e for e in errors if e["type"] == "extra_forbidden"]
            if len(unknown) != len(errors):
                raise problems_error(issues_of(exc, "task.toml", TaskConfig)) from None
            for err in unknown:
                loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p[:1].isupper()))
                try:
                    value = _pop_path(data, loc)
                except (KeyError, IndexError, TypeError):
                    raise problems_error(issues_of(exc, "task.toml", TaskConfig)) from None
                _set_nested(extra, loc, value)
                paths.append(_path_text(loc))
    else:
        raise TaskError("task.toml: too many unknown keys; check the file is a task.toml")
    warnings = notes + [f"task.toml: unknown key '{p}' is kept aside (BenchFlow does not use it)"
                        for p in paths[len(notes):]]
    compat = ({"status": "preserved-extra", "source": "legacy", "extra": extra, "extra_paths": paths}
              if paths else None)
    return LegacyConfig(config=config, declared=data, warnings=warnings, compat=compat)


def _builds_instead_of_image(data: dict[str, Any], task_dir: Path) -> bool:
    """``[environment] image`` beside an ``environment/Dockerfile``: Harbor ignores the key and builds
    the Dockerfile (SkillsBench tasks carry it as a note of their base image). Without a Dockerfile it
    stays the native alias of ``docker_image``: there is nothing else to run."""
    sandbox = data.get("sandbox")
    if not isinstance(sandbox, dict) or "image" not in sandbox or "docker_image" in sandbox:
        return False
    environment = task_dir / "environment"
    return any((environment / name).is_file() for name in
               ("Dockerfile", "docker-compose.yaml", "docker-compose.yml"))


def load_legacy_config(task_dir: str | Path) -> tuple[TaskConfig, list[str]]:
    """(TaskConfig, warnings) of a legacy task.toml; see :func:`read_legacy`."""
    legacy = read_legacy(task_dir)
    return legacy.config, legacy.warnings
