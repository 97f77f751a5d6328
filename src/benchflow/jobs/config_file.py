"""Read a ``--config`` run-config YAML (native or a Harbor job config) into RunSpec fields.

Native keys are the flat ones of the contracts (§7.1); a Harbor ``job.yaml`` or
``config.json`` is recognised and mapped onto them (``harbor_job_config``).
Unknown keys are refused with the file and key named, never ignored. A feature's
keys (``checkpoint_keep``, ``skill_mode``) land in its section of ``RunSpec``
(``checkpoints.keep``, ``skills.mode``: ``feature_settings``), and an error in one
names the key as it was given.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError
from benchflow.util.durations import parse_duration

# native key -> (RunSpec path, converter)
_NATIVE: dict[str, tuple[str, Any]] = {
    "tasks_dir": ("tasks_dir", str), "dataset": ("dataset", str), "registry": ("registry", str), "hub": ("hub", str),
    "ignore_bench_version": ("ignore_bench_version", bool), "source_repo": ("source_repo", str),
    "source_path": ("source_path", str), "source_ref": ("source_ref", str), "jobs_dir": ("jobs_dir", str), "agent": ("agent", str),
    **{key: (key, kind) for key, kind in (
        ("source_env", str), ("source_env_version", str), ("source_env_args", dict), ("source_env_num_examples", int),
        ("source_env_rollouts_per_example", int), ("source_env_max_tokens", int), ("source_env_temperature", float),
        ("source_env_sampling_args", dict), ("source_env_verifiers_version", str), ("source_env_base_url", str),
        ("source_env_api_key_var", str))},
    "model": ("model", str), "reasoning_effort": ("reasoning_effort", str), "harness": ("harness", str),
    "environment": ("sandbox", str), "sandbox": ("sandbox", str), "concurrency": ("concurrency", int),
    "build_concurrency": ("build_concurrency", int), "warm_pool": ("warm_pool", int),
    "worker_concurrency": ("workers.concurrency", int), "worker_retries": ("workers.retries", int),
    "worker_start_stagger_sec": ("workers.start_stagger_sec", float), "executor": ("executor", str),
    "max_retries": ("retry.attempts", int), "retry_policy": ("retry.policy", str), "retry_concurrency": ("retry.concurrency", int),
    "agent_env": ("agent_env", dict), "allow_task_env": ("allow_task_env", list), "include": ("selection.include", list), "exclude": ("selection.exclude", list),
    "limit": ("selection.limit", int), "sample_seed": ("selection.sample_seed", int),
    "expected_tasks": ("selection.expected_tasks", int), "sandbox_user": ("sandbox_user", str),
    "agent_idle_timeout_sec": ("agent_idle_timeout_sec", "duration"), "agent_idle_timeout": ("agent_idle_timeout_sec", "duration"),
    "base_image_override": ("base_image_override", str), "config_override": ("config_override", dict),
    "timeout_multiplier": ("timeout_multiplier", float), "freeze_workspace": ("freeze_workspace", bool),
    "keep_sandbox": ("keep_sandbox", str),
    "sandbox_setup_timeout_sec": ("sandbox_setup_timeout_sec", "duration"),
    "sandbox_setup_timeout": ("sandbox_setup_timeout_sec", "duration"), "extra_instruction": ("extra_instruction", str),
    "job_name": ("job_name", str), "trials": ("trials", int), "ca_bundle": ("ca_bundle", str),
    "targets": ("targets", list), "fresh_install": ("fresh_install", bool), "host_login": ("host_login", bool), "capture_tokens": ("capture_tokens", bool), "allow_cloud_metadata": ("allow_cloud_metadata", bool), "usage_tracking": ("usage_tracking", str), "seeds": ("seeds", str), "fresh": ("fresh", bool), "restart_changed": ("restart_changed", bool),
    "prompt_list": ("prompts", list), "quiet": ("quiet", bool), "matrix": ("matrix", str),
    "summary_out": ("summary_out", str), "task_manifest_out": ("task_manifest_out", str),
    "health_summary_out": ("health_summary_out", str), "canonicalize": ("canonicalize", str),
    "canonical_selection_out": ("canonical_selection_out", str), "canonical_jobs_dir": ("canonical_jobs_dir", str),
    "run_config_out": ("run_config_out", str), "accept_deviations": ("accept_deviations", str),
    "max_rollouts": ("budget.max_rollouts", int), "max_sandbox_seconds": ("budget.max_sandbox_seconds", float),
    "max_cost_usd": ("budget.max_cost_usd", float), "max_tokens": ("budget.max_tokens", int),
    "token_budget": ("budget.token_budget", int), "turn_budget": ("budget.turn_budget", int),
    "fail_under": ("gates.fail_under", float), "fail_on": ("gates.fail_on", list),
    "checkpoints": ("checkpoints.after", str), "checkpoint_keep": ("checkpoints.keep", int),
    "retry_from_checkpoint": ("checkpoints.retry", str), "retry_prompt": ("checkpoints.retry_prompt", str),
    "retry_resume_session": ("checkpoints.retry_resume_session", bool),
    "task_skills": ("skills.task_skills", bool), "include_task_skills": ("skills.task_skills", bool),
    "skills_dir": ("skills.dir", str), "skill_mode": ("skills.mode", str),
    "skill_creator_dir": ("skills.creator_dir", str), "verifier_sandbox": ("verifier.sandbox", str),
    "separate_verifier": ("verifier.sandbox", "separate"),
    "separate_verifier_include": ("verifier.include", list),
    "integrity": ("review.integrity", str), "reviewer": ("review.reviewer", dict), "scenes": ("scenes", "scenes"),
    "loop_strategy": ("loop_strategy", "as-given"), "environment_manifest": ("environment_manifest", str),
    "state": ("state", "state"), "context_root": ("context_root", str),
    "self_gen_no_internet": ("skills.no_internet", bool), "codex_apps_policy": ("codex_apps_policy", str),
}
"""A run config's keys are the contracts' flat ones (§7.1); a feature's land in its section of ``RunSpec``."""


def _set(out: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = out
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def _convert(source: str, key: str, value: Any, kind: Any) -> Any:
    if value is None:
        return None
    if kind == "separate":
        return "separate" if value else None
    if kind == "scenes":
        from .extensions import feature

        return feature("scenes").parse_config(source, value)
    if kind == "as-given":  # the feature reads it (loop_strategy: text or {strategy, params})
        return value
    if kind == "state":  # --state's inline JSON may be written as a mapping in YAML
        return json.dumps(value) if isinstance(value, dict) else str(value)
    if kind == "duration":
        try:
            return parse_duration(value) or 0.0  # 0 / none: off
        except ValueError as exc:
            raise ConfigError(f"{source}: {key}: {exc}") from None
    if kind is list and isinstance(value, str):
        return [value]
    if kind in (int, float) and isinstance(value, bool):
        raise ConfigError(f"{source}: {key}: expected a number, got {value!r}")
    try:
        return kind(value) if kind not in (dict, list) or isinstance(value, kind) else _bad(source, key, value, kind)
    except (TypeError, ValueError):
        return _bad(source, key, value, kind)


def _bad(source: str, key: str, value: Any, kind: Any) -> Any:
    raise ConfigError(f"{source}: {key}: expected {getattr(kind, '__name__', kind)}, got {value!r}")


def _prompts(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return ["@instruction" if p is None else str(p) for p in items]


def _legacy_aliases(data: dict[str, Any]) -> dict[str, Any]:
    """The 0.7 Harbor-style form's spellings of include and exclude."""
    data = dict(data)
    for alias, key in (("includes", "include"), ("include_tasks", "include"), ("excludes", "exclude"),
                       ("exclude_tasks", "exclude")):
        if alias in data:
            data[key] = data.pop(alias)
    return data


def load_run_config(path: str | Path) -> dict[str, Any]:
    """RunSpec fields (nested dict) from a run-config file.

    Raises:
        ConfigError: unreadable file, not a mapping, unknown key or wrong type.
    """
    import yaml

    source = str(path)
    try:
        text = Path(path).expanduser().read_text()
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read the run config ({exc.strerror})") from None
    try:
        data = yaml.safe_load(text) if not source.endswith(".json") else json.loads(text)
    except (yaml.YAMLError, ValueError) as exc:
        raise ConfigError(f"{source}: not valid YAML/JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a run config must be a mapping of keys to values")
    from .harbor_job_config import harbor_fields, is_harbor

    if is_harbor(data):  # a Harbor job.yaml / config.json: its keys mapped, the rest refused by name
        data = harbor_fields(_legacy_aliases(data), source)
    return spec_fields(data, source)


def spec_fields(data: dict[str, Any], source: str) -> dict[str, Any]:
    """Map run-config keys onto nested RunSpec fields.

    Raises:
        ConfigError: unknown key or wrong type, naming ``source``.
    """
    out: dict[str, Any] = {}
    if isinstance(data.get("source"), dict):  # source: {repo, path, ref} (contracts §7.1)
        data = {**{f"source_{k}": v for k, v in data["source"].items()},
                **{k: v for k, v in data.items() if k != "source"}}
    for key, value in data.items():
        if key == "prompts":
            out["prompts"] = _prompts(value)
            continue
        if key not in _NATIVE:
            close = difflib.get_close_matches(key, [*_NATIVE, "prompts"], n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"{source}: unknown key '{key}'{hint}")
        target, kind = _NATIVE[key]
        converted = _convert(source, key, value, kind)
        if converted is not None:
            _set(out, target, converted)
    return out


def _on_top(under: Any, over: Any, depth: int) -> Any:
    """``over`` on top of ``under``, mappings merged ``depth`` levels down."""
    if depth == 0 or not (isinstance(under, dict) and isinstance(over, dict)):
        return over
    return {**under, **{key: _on_top(under.get(key), value, depth - 1) for key, value in over.items()}}


def build_run_spec(config: str | Path | None = None, *, options: dict[str, Any] | None = None,
                   fields: dict[str, Any] | None = None, source: str = "run") -> Any:
    """The one way a ``RunSpec`` is made, for ``bench run`` and ``bf.run`` alike.

    ``config`` is a run-config file (the whole run); ``options`` are run-config keys on top of it
    (``bf.run``'s keywords); ``fields`` are dotted RunSpec paths on top of both (``bench run``'s
    flags; None, ``[]`` and False mean "not given").

    Raises:
        ConfigError: an unreadable config, an unknown key, or a bad value (named with ``source``).
    """
    from pydantic import ValidationError

    from .feature_settings import FLAT_NAMES, SECTIONS
    from .spec import RunSpec

    data: dict[str, Any] = load_run_config(config) if config else {}
    for key, value in spec_fields(options or {}, source).items():  # a feature's section: its reviewer mapping too
        data[key] = _on_top(data.get(key), value, 2 if key in SECTIONS else 1)
    for key, value in (fields or {}).items():
        if value is None or value == [] or value is False:
            continue
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    try:
        return RunSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        message = str(err["msg"]).removeprefix("Value error, ")  # pydantic's prefix for a validator's own words
        where = ".".join(str(p) for p in err["loc"])  # empty for a check across fields
        where = FLAT_NAMES.get(where, where)  # checkpoints.keep as given: checkpoint_keep
        raise ConfigError(f"{source}: {where + ': ' if where else ''}{message}") from None
