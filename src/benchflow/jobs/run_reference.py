"""A task set's ``run-reference.toml``: the run its published scores come from, and how a run differs.

The file sits in the task set's folder (the folder of tasks a run names, or the
folder holding the one task it names). Its keys are run settings, spelled as in
a run config (``RunSpec`` fields, tables for ``budget``, ``retry``, ``selection``,
``gates`` and each feature's section: ``[checkpoints]``, ``[skills]``, …; a
feature's flat key such as ``skill_mode`` is read into its section), plus ``strict``::

    strict = true                 # a run that differs is refused unless --accept-deviations says why
    agent = "claude"
    model = "claude-haiku-4-5"
    timeout_multiplier = 1.0
    [budget]
    token_budget = 200000

Every setting the file names is compared with the run's; each difference is a
deviation, listed in run-card.json. A strict reference refuses a run with a
deviation unless ``--accept-deviations TEXT`` gives the reason (kept beside
them); a lax one warns.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError

from .feature_settings import lift_legacy
from .spec import RunSpec

NAME = "run-reference.toml"
OPERATIONAL = frozenset({"targets", "tasks_dir", "dataset", "registry", "hub", "source_repo", "source_path",
                         "source_ref", "jobs_dir", "job_name", "fresh", "restart_changed", "quiet",
                         "accept_deviations", "task_manifest_out", "run_config_out", "summary_out",
                         "health_summary_out", "canonicalize", "canonical_selection_out", "canonical_jobs_dir"})
"""Settings that say where a run reads or writes, not how it runs: not part of a reference."""


def find(tasks_dir: str | None) -> Path | None:
    """The task set's reference: in ``tasks_dir``, or (a single task named) in its parent folder."""
    if not tasks_dir:
        return None
    folder = Path(tasks_dir)
    for candidate in (folder / NAME, folder.parent / NAME):
        if candidate.is_file():
            return candidate
    return None


def load(path: Path) -> tuple[bool, dict[str, Any]]:
    """(strict, the reference's settings as a run spec dumps them).

    Raises:
        ConfigError: not TOML, a setting that is no run setting or an operational one, or a bad value.
    """
    from pydantic import ValidationError

    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable TOML file ({exc}); fix it or remove it") from None
    strict = data.pop("strict", False)
    if not isinstance(strict, bool):
        raise ConfigError(f"{path}: strict: give true or false")
    data = lift_legacy(data)  # skill_mode = "with-skill" is [skills] mode = "with-skill"
    for key in sorted(data):
        if key in OPERATIONAL:
            raise ConfigError(f"{path}: {key} says where a run reads or writes, not how it runs; remove it")
        if key not in RunSpec.model_fields:
            raise ConfigError(f"{path}: unknown key {key!r}; give run settings as a run config spells them "
                              "(agent, model, timeout_multiplier, [budget], …)")
    try:
        full = RunSpec.model_validate(data).model_dump(mode="json")
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"{path}: {where + ': ' if where else ''}{err['msg']}") from None
    return strict, {key: _given(full[key], data[key]) for key in data}


def _given(value: Any, written: Any) -> Any:
    """Of a table (``[budget]``), only the keys the file wrote."""
    if isinstance(value, dict) and isinstance(written, dict):
        return {k: value[k] for k in written if k in value}
    return value


def deviations(spec: RunSpec, reference: dict[str, Any], resolved: dict[str, Any]) -> list[str]:
    """One line per setting where ``spec`` differs from the reference: ``key: reference X, this run Y``;
    ``resolved``: settings the plan chose for the run (the sandbox when ``--sandbox`` was not given)."""
    run = {**spec.model_dump(mode="json"), **resolved}
    out = []
    for key, want in sorted(reference.items()):
        pairs = ([(f"{key}.{k}", v, run[key].get(k)) for k, v in sorted(want.items())] if isinstance(want, dict)
                 else [(key, want, run[key])])
        out.extend(f"{name}: reference {ref!r}, this run {got!r}" for name, ref, got in pairs if ref != got)
    return out


def judge(plan: Any, card: Any) -> None:
    """Judge the run against its task set's run-reference.toml: deviations listed; a strict reference
    refuses them unless ``--accept-deviations`` says why."""
    path = find(plan.tasks_dir)
    accepted = plan.spec.accept_deviations
    if path is None:
        if accepted:
            card.warnings.append(f"--accept-deviations: the task set has no {NAME}, so there is "
                                 "nothing to deviate from; the reason is kept as given")
        return
    strict, reference = load(path)
    card.reference = str(path)
    card.deviations = deviations(plan.spec, reference, {"sandbox": plan.sandbox})
    if not card.deviations:
        if accepted:
            card.warnings.append(f"--accept-deviations: this run matches {path}; nothing to accept")
        return
    listed = "; ".join(card.deviations)
    if strict and not accepted:
        card.refusals.append(f"this run differs from {path} ({listed}); run as the reference does, or say why "
                             "with --accept-deviations TEXT")
    elif not accepted:
        card.warnings.append(f"this run differs from {path} ({listed}); its scores are not the reference's")
