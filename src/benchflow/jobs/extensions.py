"""The engine's extension seam: features plug into a run at named points; the engine imports none of them.

A feature is an object with any of the hooks of :class:`Feature` (a hook it lacks is skipped) and a row
of :data:`FEATURES`: its name, the ``"module:attribute"`` of the object, and the ``RunSpec`` settings that
switch it on. A feature's settings are its own section of ``RunSpec`` (``spec.checkpoints``, ``spec.skills``:
``jobs/feature_settings.py``), which the feature's ``check_spec`` judges. The engine (``jobs/``) asks
:func:`active` for the features a spec switches on and calls their hooks; a feature's module is imported
only when a run uses it, as the sandbox registry imports a backend only when one is asked for. A feature
imports the engine (``jobs/``), never the other way.

A row with no ``fields`` is asked by every run: a feature a task switches on (its ``steps``, its
``scenes``, its simulated user, its verifier sandbox) answers None, [] or the value it was given for a
task that does not need it. Such a feature's module is imported by every run, so it stays small and
imports what does the work inside the hook that needs it.

The points, in the order a run meets them:

- ``run_job(spec, emit)``: run the whole job another way than planning task folders into sandboxes (a hosted
  environment's rollouts, run by verifiers); returns the run's ``RunOutcome``. The first feature that has the
  point runs it, before any plan is made.
- ``parse_config(source, value)``: a run config's value for the feature's own key (``scenes:``), checked
  and normalised; asked for by name with :func:`feature` (``jobs/config_file.py``).
- ``parse_field(name, value)``: read a given value of a setting the feature's row ``parses`` (a field, or a
  section's: ``checkpoints.after``), before pydantic checks its type (``--checkpoints prompt:2`` -> ``[2]``).
- ``check_spec(spec)``: validate (and normalise) the feature's settings (its section) while the ``RunSpec``
  is built; a ``ValueError`` is the user's one-line error.
- ``prompts(spec, prompts)``: a task's prompts as the run sends them (planning).
- ``plan_refusals(plan)``: why the run card refuses the run (planning).
- ``plan_warnings(plan)``: the run card's warnings (planning).
- ``has_oracle(task)``: whether the oracle can run ``task`` (a multi-step task: a solution for every
  step), or None for a task the feature does not run (then: the task's ``solve.sh``).
- ``preflight(spec)``: refuse what cannot run here, before the job folder is touched.
- ``comparable(spec, task, agent_name)``: settings a resumed job compares with a finished trial's of the
  planned ``task`` run by ``agent_name`` (``--restart-changed``).
- ``run_trials(spec, plan, paths, todo, emit)``: run the job's unfinished tasks somewhere else than this
  process's scheduler (worker subprocesses); returns (task key -> final result or None, budget document).
  The first feature that has the point runs them.
- ``executor(spec, models, tasks)``: an async context manager yielding something with
  ``run_attempt(request)``: where the attempts run (else in this process).
- ``task_view(spec, task)``: the task as the trial runs it (a run config's scenes in place of its own).
- ``trial_record(req)``: keys of the trial's ``config.json``.
- ``sandbox_options(req)``: keyword arguments for the trial's sandbox spec.
- ``before_trial(req, sandbox, paths, state)``: once the trial's sandbox has started and its task files and
  setup commands are in, before the agent's mode (a stateful environment provisioned and gated on
  readiness); a ``BenchError`` is the trial's error and the agent does not run.
- ``trial_mode(req, paths, prompts)``: a :class:`TrialMode` that runs the trial's agent phase (the first
  feature that returns one wins, in the order of :data:`FEATURES`), or None.
- ``layer_agents(req)``: agents besides the run's that the trial runs (a scene's roles), each installed
  as a layer of its own where the backend builds layers.
- ``before_agent(req, sandbox, user)``: after the agent's install, before it runs (as root).
- ``verifier(req)``: the verifier phase to run in place of the task sandbox's (a separate sandbox), or
  None; asked once the trial's sandbox has started.
- ``after_trial(req, sandbox, paths, state)``: after the verifier, before the trial's record, also when the
  agent or verifier failed (the stateful environment torn down); a ``BenchError`` is logged, not the
  trial's.
- ``after_trials(spec, paths, results, tasks, emit)``: after the run's trials, before the summary.
- ``after_regrade(job_root, pairs, changes, rows)``: after ``bench regrade --review``'s regrades (the
  ``review`` feature, asked for by name with :func:`feature`): each summary row's ``review``; returns
  the summary's review counts.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from benchflow.agents.trajectory import AcpTrajectoryFile
    from benchflow.sandbox.base import Sandbox

    from .phases import TrialState

__all__ = ["FEATURES", "PARSED_FIELDS", "Feature", "Row", "TrialMode", "active", "feature", "hooks", "parse_field"]


class TrialMode(Protocol):
    """How a trial's agent phase runs (``jobs/modes.py`` has the engine's plain one; steps, checkpoints, scenes
    and the simulated user are features'; ``bench branch``'s is a caller's: ``run_trial(req, mode)``)."""

    verifier_runs: bool
    """False for a mode that verifies as it goes: the runner's verifier phase is left out."""
    opens_network: bool
    """True for a mode that sets up the agent's network itself, around each agent it runs (a branched
    trial: the parent's stretches and every child, in restored sandboxes): the runner's is left out."""

    async def agent_phase(self, sandbox: Sandbox, sink: AcpTrajectoryFile, state: TrialState,
                          timing: dict[str, float]) -> None:
        """Run the agent; the outcome goes on ``state`` as the plain agent phase's does."""

    async def after_verifier(self, sandbox: Sandbox, state: TrialState) -> None:
        """After the verifier scored the trial (a retry from a snapshot)."""

    def annotate(self, result: dict[str, Any]) -> None:
        """Add the mode's keys to the trial's result document before it is written."""


class Feature(Protocol):
    """What a feature may implement; every hook is optional (see the module docstring for when each runs)."""

    name: str


@dataclass(frozen=True)
class Row:
    name: str
    target: str
    """``"module:attribute"`` of the feature object."""
    fields: tuple[str, ...] = ()
    """The ``RunSpec`` settings that switch the feature on (any of them not at its default): a field, a
    section's field (``workers.concurrency``) or a whole section (``checkpoints``); empty: every run uses it."""
    parses: tuple[str, ...] = ()
    """The ``RunSpec`` settings whose given value the feature reads first (``parse_field``), asked by
    ``RunSpec``'s validator for a field, by the section model's (``feature_settings``) for a section's."""
    ahead: tuple[str, ...] = ()
    """Modules (of a row every run uses) that a trial imports once its sandbox has started: imported while
    the first sandbox starts (``jobs/ahead.py``)."""

    def switched_on(self, spec: Any) -> bool:
        """True when any of :attr:`fields` differs from the ``RunSpec``'s default for it."""
        return not self.fields or any(is_set(spec, path) for path in self.fields)


_defaults: dict[tuple[type, str], Any] = {}


def is_set(spec: Any, path: str) -> bool:
    """Whether the setting at ``path`` (``executor``, ``workers.concurrency``, ``review``) is not its default."""
    section, _, name = path.rpartition(".")
    owner = getattr(spec, section) if section else spec
    key = (type(owner), name)
    if key not in _defaults:  # a section's default is a model built by its factory: built once
        _defaults[key] = type(owner).model_fields[name].get_default(call_default_factory=True)
    return getattr(owner, name) != _defaults[key]


FEATURES: tuple[Row, ...] = (
    Row("skills", "benchflow.skills.feature:SKILLS"),
    Row("steps", "benchflow.steps.feature:STEPS", ahead=("benchflow.steps.runner",)),
    Row("checkpoints", "benchflow.branch.feature:CHECKPOINTS", ("checkpoints",), parses=("checkpoints.after",)),
    Row("loop", "benchflow.loop.feature:LOOP", ("loop_strategy",), parses=("loop_strategy",)),
    Row("scenes", "benchflow.scenes.feature:SCENES", ahead=("benchflow.scenes.runner",)),
    Row("sim-user", "benchflow.sim_user.feature:SIM_USER"),
    Row("separate-verifier", "benchflow.separate_verifier.feature:SEPARATE_VERIFIER",
        ahead=("benchflow.separate_verifier.phase",)),
    Row("shards", "benchflow.shards.feature:SHARDS", ("workers.concurrency",)),
    Row("executors", "benchflow.executors.feature:EXECUTORS", ("executor",), parses=("executor",)),
    Row("review", "benchflow.review.feature:REVIEW", ("review",)),
    Row("hosted-env", "benchflow.hosted.feature:HOSTED_ENV", ("source_env",)),
    Row("environment-plane", "benchflow.environment_plane.feature:ENVIRONMENT_PLANE", ("environment_manifest", "state")),
    Row("context-root", "benchflow.context_root.feature:CONTEXT_ROOT", ("context_root",)),
    Row("codex-apps", "benchflow.codex_apps.feature:CODEX_APPS"),
)
"""The built-in features, in the order their hooks run: a trial's mode is its task's steps, else a feature's
(``--checkpoints``, ``--loop-strategy``), else its scenes, else the simulated user's, else plain
(``jobs/modes.py``); the worker shards' refusal comes before the executor's checks."""

PARSED_FIELDS: tuple[str, ...] = tuple(name for row in FEATURES for name in row.parses)

_loaded: dict[str, Any] = {}


def _load(row: Row) -> Any:
    if row.name not in _loaded:
        module, _, attribute = row.target.partition(":")
        _loaded[row.name] = getattr(importlib.import_module(module), attribute)
    return _loaded[row.name]


def feature(name: str) -> Any:
    """The feature named ``name`` (a row of :data:`FEATURES`), imported on first use.

    Raises:
        KeyError: no such feature.
    """
    for row in FEATURES:
        if row.name == name:
            return _load(row)
    raise KeyError(f"no feature {name!r}")


def active(spec: Any) -> Iterator[Any]:
    """The features ``spec`` switches on, imported on first use."""
    for row in FEATURES:
        if row.switched_on(spec):
            yield _load(row)


def hooks(spec: Any, point: str) -> Iterator[Any]:
    """The bound ``point`` hook of every feature ``spec`` switches on that has one."""
    for feature in active(spec):
        hook = getattr(feature, point, None)
        if hook is not None:
            yield hook


def parse_field(name: str, value: Any) -> Any:
    """``value`` given for the ``RunSpec`` setting ``name`` (``executor``, ``checkpoints.after``) as the feature
    that owns it reads it.

    Raises:
        ValueError: the feature's one-line reason (pydantic names the field with it).
    """
    for row in FEATURES:
        if name in row.parses:
            value = _load(row).parse_field(name, value)
    return value
