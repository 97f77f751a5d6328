"""From a RunSpec to a Plan: which tasks, which agent, which sandbox, and the run card's verdict.

Everything that can be refused is refused here, before any sandbox starts:
bad targets, an empty selection, a task the backend cannot run.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError, TaskError, UserError
from benchflow.records import RunCardRecord
from benchflow.util.match import select

from .extensions import hooks
from .layout import unit_key
from .spec import RunSpec

log = logging.getLogger(__name__)


@dataclass
class PlannedTask:
    name: str
    path: Path
    task: Any
    digest: str
    seed: int | None = None
    fit: Any = None
    """How the chosen backend meets the task's sandbox request (``benchflow.sandbox.fit.Fit``);
    None when the backend cannot run here."""
    secrets: tuple[str, ...] = ()
    """Host values the task reads through ``--allow-task-env``: redacted from its trial folders."""
    prompts: list[str] = field(default_factory=list)
    """The prompts the agent gets, resolved once (``--prompt``, the task's prefix, ``--extra-instruction``)."""

    @property
    def key(self) -> str:
        return unit_key(self.name, self.seed)


@dataclass
class RunCard:
    """The plan's verdict: accept or refuse, with reasons (written to run-card.json)."""

    refusals: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    accepted_deviations: str | None = None
    deviations: list[str] = field(default_factory=list)
    """How this run differs from its task set's run-reference.toml (``jobs.run_reference``)."""
    reference: str | None = None
    """That run-reference.toml, when the task set has one."""
    env_refusals: list[str] = field(default_factory=list)
    """The refusals that are the user's to fix with ``--allow-task-env`` (``bench run`` exits 2)."""
    notes: list[str] = field(default_factory=list)
    """Warnings a run prints once as it starts (a network fallback and its fix), not only ``--dry-run``."""

    @property
    def accepted(self) -> bool:
        return not self.refusals

    def document(self, plan: "Plan") -> dict[str, Any]:
        """``run-card.json`` as written (``benchflow.records.RunCardRecord``)."""
        return RunCardRecord(verdict="accept" if self.accepted else "refuse", refusals=self.refusals,
                             warnings=self.warnings, accepted_deviations=self.accepted_deviations,
                             deviations=self.deviations if self.reference else None, reference=self.reference,
                             agent=plan.spec.agent, model=plan.spec.model, sandbox=plan.sandbox,
                             n_tasks=len(plan.tasks)).to_json()


@dataclass
class Plan:
    spec: RunSpec
    tasks: list[PlannedTask]
    sandbox: str
    sandbox_reason: str
    tasks_dir: str | None
    skipped: list[tuple[str, str]] = field(default_factory=list)
    card: RunCard = field(default_factory=RunCard)
    backend: Any = None
    """The chosen sandbox backend object (``benchflow.sandbox.get_backend(sandbox)``), looked up once."""
    provenance: dict[str, Any] | None = None
    """``source``, ``dataset_name``, ``dataset_version`` of fetched tasks (``benchflow.datasets``); None: local."""
    registry_digests: dict[str, str] = field(default_factory=dict)
    """Task name → the digest its registry pins (``-d``); every planned task matched it."""

    @property
    def units(self) -> list[PlannedTask]:
        """What runs: every task, once per seed with ``--seeds``."""
        if not self.spec.seeds:
            return self.tasks
        return [replace(t, seed=seed) for t in self.tasks for seed in self.spec.seeds]

    def document(self) -> dict[str, Any]:
        """The plan as ``--dry-run`` prints it."""
        spec = self.spec
        return {"schema_version": 1, "kind": "benchflow.plan", "agent": spec.agent, "model": spec.model,
                "reasoning_effort": spec.reasoning_effort, "sandbox": self.sandbox,
                "sandbox_reason": self.sandbox_reason, "jobs_dir": spec.jobs_dir, "tasks_dir": self.tasks_dir,
                "seeds": spec.seeds, "concurrency": spec.concurrency, "warm_pool": spec.effective_warm_pool, "trials": spec.trials,
                "budget": spec.budget.model_dump(), "retry": spec.retry.model_dump(),
                "tasks": [{"name": t.name, "path": str(t.path), "digest": t.digest,
                           "sandbox_fit": t.fit.record() if t.fit is not None else None} for t in self.tasks],
                "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
                **(self.provenance or {}), "run_card": self.card.document(self)}

    def manifest(self) -> dict[str, Any]:
        """``--task-manifest-out`` (contracts §7.6)."""
        where = self.provenance or {"source": None, "dataset_name": None, "dataset_version": None}
        sel = self.spec.selection
        return {"schema_version": 1, "tasks_dir": self.tasks_dir, **where, "total": len(self.tasks),
                "selection": {"limit": sel.limit, "sample_seed": sel.sample_seed},
                "tasks": [{"task_id": t.name, "path": str(t.path), "digest": t.digest,
                           **({"registry_digest": self.registry_digests[t.name],
                               "registry_digest_match": self.registry_digests[t.name] == t.digest}
                              if t.name in self.registry_digests else {})} for t in self.tasks]}


def _task_dirs(spec: RunSpec) -> tuple[list[Path], str | None]:
    from benchflow.tasks import discover_tasks

    targets = list(spec.targets) or ([spec.tasks_dir] if spec.tasks_dir else [])
    if not targets:
        raise UserError("no tasks: give a task folder or a folder of tasks (bench run PATH), or --tasks-dir")
    dirs: list[Path] = []
    for target in targets:
        path = Path(target).expanduser()
        if not path.exists():
            raise UserError(f"{target}: no such folder; give a task folder or a folder of tasks")
        found = discover_tasks(path)
        if not found:
            raise UserError(f"{target}: no task here (a task folder holds task.md or task.toml)")
        dirs.extend(found)
    tasks_dir = str(Path(targets[0]).resolve()) if len(targets) == 1 else None
    return dirs, tasks_dir


def deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in patch.items():
        out[key] = deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def apply_override(task: Any, override: dict[str, Any] | None) -> None:
    """Deep-merge ``--config-override`` into the task's resolved config (the sections ``RunSpec`` allows).

    Raises:
        ConfigError: the patched config is not valid; the message names the key.
    """
    if not override:
        return
    from pydantic import ValidationError

    from benchflow.tasks import TaskConfig

    merged = deep_merge(task.config.model_dump(by_alias=True), override)
    try:
        task.config = TaskConfig.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"--config-override: {'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from None


def _load(dirs: list[Path], override: dict[str, Any] | None = None) -> tuple[list[PlannedTask], list[tuple[str, str]]]:
    from benchflow.tasks import load_task

    loaded, skipped = [], []
    for path in dirs:
        try:
            task = load_task(path)
            apply_override(task, override)
        except TaskError as exc:
            if len(dirs) == 1:
                raise TaskError(f"{path}/{exc}", problems=exc.problems) from None
            log.warning("skipping %s: %s", path.name, exc)
            skipped.append((str(path), str(exc)))
            continue
        loaded.append(PlannedTask(name=task.name, path=task.path, task=task, digest=task.digest()))
    names = [t.name for t in loaded]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UserError(f"two tasks share the name {dupes[0]!r}; task folder names must be unique in a run")
    return loaded, skipped


def _match_registry(loaded: list[PlannedTask], pinned: dict[str, str]) -> None:
    """Refuse the run when a fetched task's content is not what its registry pins (checked on every run,
    so a cached copy changed by hand is caught too).

    Raises:
        DatasetError: names the first task that does not match.
    """
    from benchflow.errors import DatasetError

    for planned in loaded:
        want = pinned.get(planned.name)
        if want is not None and want != planned.digest:
            raise DatasetError(f"task {planned.name}: content digest {planned.digest} does not match the "
                               f"registry's {want} ({planned.path}); refusing the run (remove that folder from "
                               "the cache to fetch it again)")


def _select(tasks: list[PlannedTask], spec: RunSpec) -> list[PlannedTask]:
    sel = spec.selection
    keep = set(select([t.name for t in tasks], sel.include, sel.exclude))
    chosen = sorted((t for t in tasks if t.name in keep), key=lambda t: t.name)
    if sel.limit is not None and len(chosen) > sel.limit:
        if sel.sample_seed is not None:
            chosen = sorted(random.Random(sel.sample_seed).sample(chosen, sel.limit), key=lambda t: t.name)
        else:
            chosen = chosen[: sel.limit]
    return chosen


def choose_sandbox(spec: RunSpec, tasks: list[PlannedTask] | None = None) -> tuple[str, str, tuple[bool, str]]:
    """(backend name, why it was chosen, its availability); without ``--sandbox``, the default for ``tasks``
    (one that gives GPUs when a task asks for them)."""
    from benchflow.sandbox import default_backend, get_backend

    if spec.sandbox:
        return spec.sandbox, "--sandbox", get_backend(spec.sandbox).available()
    needs_gpus = any(t.task.config.sandbox.gpus or t.task.config.sandbox.gpu_types for t in tasks or [])
    return default_backend(needs_gpus=needs_gpus)


def make_plan(spec: RunSpec, *, pull_images: bool = True) -> Plan:
    """Resolve tasks and sandbox, fit each task to the sandbox, and judge the run.

    ``pull_images=False`` (dry runs) pulls no pinned image: the plan says a run would.

    Raises:
        UserError: bad targets, an unreadable single task, or an empty selection.
    """
    from benchflow.datasets import resolve_source

    fetched = resolve_source(spec)  # -d, --source-repo, a repository target: fetched and pinned
    dirs, tasks_dir = (fetched.dirs, fetched.tasks_dir) if fetched else _task_dirs(spec)
    loaded, skipped = _load(dirs, spec.config_override)
    if fetched is not None:
        _match_registry(loaded, fetched.registry_digests)
    chosen = _select(loaded, spec)
    if not chosen:
        raise UserError("no task selected: check --include/--exclude against the task folder names")
    sandbox, why, availability = choose_sandbox(spec, chosen)
    from benchflow.sandbox import get_backend

    from .prompts import resolve_prompts

    for planned in chosen:
        planned.prompts = resolve_prompts(planned.task.instruction, spec.prompts,
                                          prefix=planned.task.config.agent.prompt_prefix,
                                          extra_instruction=spec.extra_instruction)
        for prompts in hooks(spec, "prompts"):  # e.g. self-gen skills asks for the agent's own first
            planned.prompts = prompts(spec, planned.prompts)
    plan = Plan(spec=spec, tasks=chosen, sandbox=sandbox, sandbox_reason=why, tasks_dir=tasks_dir, skipped=skipped,
                backend=get_backend(sandbox), provenance=fetched.provenance() if fetched else None,
                registry_digests=fetched.registry_digests if fetched else {})
    plan.card = judge(plan, availability, pull_images=pull_images)
    if fetched is not None and fetched.warnings:  # e.g. a Harbor task at HEAD: not pinned
        plan.card.warnings.extend(fetched.warnings)
        plan.card.notes.extend(fetched.warnings)
    return plan


def judge(plan: Plan, availability: tuple[bool, str], *, pull_images: bool = True) -> RunCard:
    from benchflow.tasks.capability import runtime_issues

    card = RunCard(accepted_deviations=plan.spec.accept_deviations)
    backend = plan.backend
    ok, reason = availability
    if not ok:
        card.refusals.append(f"sandbox {plan.sandbox} cannot run here: {reason}")
    expected = plan.spec.selection.expected_tasks
    if expected is not None and expected != len(plan.tasks):
        card.refusals.append(f"--expected-tasks {expected}, but {len(plan.tasks)} tasks are selected")
    if plan.spec.keep_sandbox != "never" and not backend.capabilities.keep:
        card.refusals.append(_cannot_keep(plan))
    for planned in plan.tasks:
        _task_env(planned, plan.spec, card)
    for refusals in hooks(plan.spec, "plan_refusals"):  # e.g. --checkpoints on a sandbox without snapshots
        card.refusals.extend(refusals(plan))  # (the tasks' host variables filled in by now)
    for warnings in hooks(plan.spec, "plan_warnings"):  # e.g. --prompt, which a scene's turns do not use
        card.warnings.extend(warnings(plan))
    for planned in plan.tasks:
        issues, warnings = runtime_issues(planned.task, backend.capabilities, plan.sandbox)
        card.refusals.extend(f"{planned.name}: {issue}" for issue in issues)
        card.warnings.extend(f"{planned.name}: {w}" for w in warnings)
        if ok:
            _fit(planned, backend, card, pull_images)
        if plan.spec.agent == "oracle" and not _has_oracle(plan.spec, planned.task):
            card.refusals.append(f"{planned.name}: no oracle (oracle/solve.sh or solution/solve.sh) to run")
    from .run_reference import judge as against_reference

    against_reference(plan, card)
    note = _fallback_note(plan)
    if note:
        card.warnings.append(note)
        card.notes.append(note)
    for path, why in plan.skipped:
        card.warnings.append(f"skipped {Path(path).name}: {why}")
    return card


def _cannot_keep(plan: Plan) -> str:
    """The refusal of ``--keep-sandbox`` on a backend whose sandboxes cannot outlive their run."""
    from benchflow.sandbox import get_backend, names

    keeping = [name for name in names() if get_backend(name).capabilities.keep]
    return (f"--keep-sandbox {plan.spec.keep_sandbox}: sandbox {plan.sandbox} cannot keep a sandbox after its trial; "
            f"use --sandbox {' or '.join(keeping) or '(none here can)'}, or leave --keep-sandbox out")


def _has_oracle(spec: RunSpec, task: Any) -> bool:
    """The oracle can run ``task``: as a feature that runs it says (a multi-step task's steps), else by its
    ``solve.sh``."""
    for has_oracle in hooks(spec, "has_oracle"):
        ready = has_oracle(task)
        if ready is not None:
            return ready
    return task.paths.solve_path.is_file()


def _fallback_note(plan: Plan) -> str | None:
    """Once per run, why a task's network runs stricter than asked here, and the fix (a missing tool)."""
    caps = plan.backend.capabilities
    if not caps.fallback_note:
        return None
    for planned in plan.tasks:
        config = planned.task.config
        for mode in (config.sandbox.network_mode, config.agent.network_mode, config.verifier.network_mode):
            if mode is not None and mode not in caps.network_modes and mode in caps.network_fallbacks:
                return f"sandbox {plan.sandbox}: {caps.fallback_note}"
    return None


def _task_env(planned: PlannedTask, spec: RunSpec, card: RunCard) -> None:
    """Refuse a task that reads a host variable ``--allow-task-env`` does not name; fill the rest."""
    from benchflow.tasks.task_env import env_problems, resolve_task_env, short_values

    problems = [f"{planned.name}: {line}" for line in env_problems(planned.task, spec.allow_task_env)]
    if problems:
        card.refusals.extend(problems)
        card.env_refusals.extend(problems)
        return
    planned.task, used = resolve_task_env(planned.task, spec.allow_task_env)
    planned.secrets = tuple(used.values())
    card.warnings.extend(short_values(planned.name, used))


def _fit(planned: PlannedTask, backend: Any, card: RunCard, pull_images: bool) -> None:
    """Meet the task's sandbox request on ``backend``: a fallback build, clamped resources."""
    from benchflow.sandbox.fit import fit
    from benchflow.sandbox.from_task import spec_for_task

    planned.fit = fit(backend, spec_for_task(planned.task, digest=planned.digest), pull=pull_images)
    card.warnings.extend(f"{planned.name}: {note}" for note in planned.fit.notes())
    if planned.fit.refusal:
        card.refusals.append(f"{planned.name}: {planned.fit.refusal}")
    elif not planned.fit.usable:
        card.refusals.append(f"{planned.name}: prebuilt image {planned.fit.prebuilt} "
                             f"{planned.fit.fallback_reason}, and the task has no environment/Dockerfile "
                             "to build instead; load the image into the engine or add the Dockerfile")
