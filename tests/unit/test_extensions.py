"""The engine's extension seam (``jobs.extensions``): every feature row loads, offers only hooks the
engine calls, and is loaded only by a run that switches it on."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchflow.jobs import extensions
from benchflow.jobs.spec import RunSpec

POINTS = set(re.findall(r"^- ``(\w+)\(", extensions.__doc__ or "", re.M))
WITHOUT_OPTIONS = {"steps", "scenes", "sim-user"}
"""Features a task switches on (or a run config's ``scenes:``) that have no ``bench run`` option."""


def test_the_docstring_names_the_points():
    assert {"check_spec", "prompts", "preflight", "executor", "trial_mode", "after_trials"} <= POINTS


@pytest.mark.parametrize("row", extensions.FEATURES, ids=lambda row: row.name)
def test_each_feature_loads_and_offers_only_the_engine_s_points(row):
    feature = extensions._load(row)
    assert feature.name == row.name
    offered = {name for name in dir(feature) if not name.startswith("_") and callable(getattr(feature, name))}
    assert offered and offered <= POINTS, offered - POINTS
    assert ("parse_field" in offered) == bool(row.parses)


def test_a_plain_run_loads_no_feature_it_does_not_use():
    """Nor, of a feature every run asks (a task switches it on), more than its small ``feature`` module."""
    code = ("import sys; from benchflow.jobs.spec import RunSpec; RunSpec(); import benchflow.jobs.api; "
            "print(sorted(m for m in sys.modules if m.startswith('benchflow.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = [name.split(".")[1:] for name in ast.literal_eval(done.stdout)]
    assert [m for m in loaded if m[0] in ("branch", "executors", "review", "shards", "loop", "environment_plane",
                                           "context_root")] == []
    every_run = ("steps", "scenes", "sim_user", "separate_verifier", "codex_apps")  # a task or agent switches these on
    assert sorted(m for m in loaded if m[0] in every_run) == sorted([[p] for p in every_run] +
                                                                     [[p, "feature"] for p in every_run])


def test_a_spec_switches_on_the_features_its_settings_name(tmp_path: Path):
    names = lambda spec: [f.name for f in extensions.active(spec)]  # noqa: E731
    every_run = ["skills", "steps", "scenes", "sim-user", "separate-verifier", "codex-apps"]  # a task or agent may
    assert names(RunSpec()) == every_run                                                     # switch these on
    assert names(RunSpec(checkpoints={"after": "every-prompt"}, executor="ray", review={"integrity": "audit"},
                         workers={"concurrency": 2})) == [
        "skills", "steps", "checkpoints", "scenes", "sim-user", "separate-verifier", "shards", "executors", "review",
        "codex-apps"]
    assert names(RunSpec(workers={"retries": 3})) == every_run  # a shard's tuning alone runs no shards
    assert names(RunSpec(loop_strategy="self-review", environment_manifest="env0@prod", context_root=str(tmp_path))) == [
        "skills", "steps", "loop", "scenes", "sim-user", "separate-verifier", "environment-plane", "context-root",
        "codex-apps"]


def test_a_feature_s_own_field_is_read_and_refused_by_it():
    assert RunSpec(checkpoints={"after": "prompt:1,3"}).checkpoints.after == [1, 3]
    assert RunSpec(loop_strategy="verify-retry").loop_strategy == "verify-retry:k=3,feedback=names"
    with pytest.raises(ValueError, match="unknown strategy 'retry-forever'"):
        RunSpec(loop_strategy="retry-forever")
    with pytest.raises(ValueError, match="--executor 'nowhere'"):
        RunSpec(executor="nowhere")
    with pytest.raises(ValueError, match="checkpoints"):
        RunSpec(checkpoints={"after": "sometimes"})


def test_bench_run_help_all_shows_each_feature_s_options_in_a_panel_of_its_own():
    env = {**__import__("os").environ, "COLUMNS": "200", "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "benchflow.cli", "run", "--help-all"], capture_output=True,
                          text=True, env=env, check=True)
    panels = re.findall(r"^╭─ (.+?) ─", done.stdout, re.M)
    for row in extensions.FEATURES:
        if row.name in WITHOUT_OPTIONS:
            continue
        assert any(p.lower().replace(" ", "-").startswith(row.name) and p.endswith("(feature)") for p in panels), (
            row.name, panels)
    general = done.stdout.split("╭─ Options ─", 1)[1].split("╰", 1)[0]
    assert re.findall(r"^│ (--[\w-]+)", general, re.M) == ["--help-all", "--help"]  # every run setting has its panel
    assert "--reviewer-model" in done.stdout.split("╭─ Review and integrity (feature) ─", 1)[1].split("╰", 1)[0]


def test_one_runner_picks_one_mode_per_trial():
    """Steps, then a feature's mode (--checkpoints), then scenes, then the simulated user, then plain."""
    from types import SimpleNamespace

    from benchflow.jobs.modes import PlainMode, trial_mode
    from benchflow.scenes.feature import ScenesMode
    from benchflow.sim_user.feature import SimUserMode
    from benchflow.steps.feature import StepsMode

    def req(steps=(), scenes=(), user=False, control=False):
        task = SimpleNamespace(config=SimpleNamespace(steps=list(steps)), scenes=list(scenes), has_user=user)
        return SimpleNamespace(task=task, spec=RunSpec(), agent=SimpleNamespace(is_control=control))

    assert type(trial_mode(req(), None, ["p"])) is PlainMode
    steps = trial_mode(req(steps=["a"], scenes=["s"], user=True), None, [])
    assert type(steps) is StepsMode and not steps.verifier_runs  # each step is verified as it goes
    assert type(trial_mode(req(scenes=["s"], user=True), None, [])) is ScenesMode  # each turn converses
    assert type(trial_mode(req(scenes=["s"], control=True), None, [])) is PlainMode  # the oracle solves it whole
    assert type(trial_mode(req(user=True), None, [])) is SimUserMode
    assert type(trial_mode(req(user=True, control=True), None, [])) is PlainMode

    from benchflow.loop.mode import LoopMode

    looped = req()
    looped.spec = RunSpec(loop_strategy="self-review:k=2")
    assert type(trial_mode(looped, None, ["p"])) is LoopMode and trial_mode(looped, None, ["p"]).verifier_runs
    looped.spec = RunSpec(loop_strategy="single-shot")  # given, but nothing to loop: the plain mode
    assert type(trial_mode(looped, None, ["p"])) is PlainMode


def test_a_task_s_verifier_sandbox_of_its_own_is_the_separate_verifier_s_phase():
    from types import SimpleNamespace

    from benchflow.separate_verifier.phase import separate_verifier_phase

    def verifiers(verifier_sandbox="task", mode=None):
        verifier = SimpleNamespace(sandbox_mode=mode, sandbox=None)
        req = SimpleNamespace(spec=RunSpec(verifier={"sandbox": verifier_sandbox}),
                              task=SimpleNamespace(config=SimpleNamespace(verifier=verifier)))
        return [phase for own in extensions.hooks(req.spec, "verifier") if (phase := own(req)) is not None]

    assert verifiers() == []
    assert verifiers(mode="separate") == [separate_verifier_phase]
    assert verifiers(verifier_sandbox="separate") == [separate_verifier_phase]
