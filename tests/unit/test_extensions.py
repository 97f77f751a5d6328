"""The engine's extension seam (``jobs.extensions``): every feature row loads, offers only hooks the
engine calls, and is loaded only by a run that switches it on."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchflow.jobs import extensions
from benchflow.jobs.spec import RunSpec

POINTS = set(re.findall(r"^- ``(\w+)\(", extensions.__doc__ or "", re.M))


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
    code = ("import sys; from benchflow.jobs.spec import RunSpec; RunSpec(); "
            "print(sorted(m for m in sys.modules if m.split('.')[1:2] in (['branch'], ['executors'], ['review'])))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_spec_switches_on_the_features_its_settings_name(tmp_path: Path):
    names = lambda spec: [f.name for f in extensions.active(spec)]  # noqa: E731
    assert names(RunSpec()) == ["skills"]
    assert names(RunSpec(checkpoints="every-prompt", executor="ray", integrity="audit")) == [
        "skills", "checkpoints", "executors", "review"]


def test_a_feature_s_own_field_is_read_and_refused_by_it():
    assert RunSpec(checkpoints="prompt:1,3").checkpoints == [1, 3]
    with pytest.raises(ValueError, match="--executor 'nowhere'"):
        RunSpec(executor="nowhere")
    with pytest.raises(ValueError, match="checkpoints"):
        RunSpec(checkpoints="sometimes")


def test_bench_run_help_all_shows_each_feature_s_options_in_a_panel_of_its_own():
    env = {**__import__("os").environ, "COLUMNS": "200", "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "benchflow.cli", "run", "--help-all"], capture_output=True,
                          text=True, env=env, check=True)
    panels = re.findall(r"^╭─ (.+?) ─", done.stdout, re.M)
    for row in extensions.FEATURES:
        assert any(p.lower().startswith(row.name) and p.endswith("(feature)") for p in panels), (row.name, panels)
    general = done.stdout.split("╭─ Options ─", 1)[1].split("╰", 1)[0]
    assert re.findall(r"^│ (--[\w-]+)", general, re.M) == ["--help-all", "--help"]  # every run setting has its panel
    assert "--reviewer-model" in done.stdout.split("╭─ Review and integrity (feature) ─", 1)[1].split("╰", 1)[0]


def test_one_runner_picks_one_mode_per_trial():
    from types import SimpleNamespace

    from benchflow.jobs.modes import PlainMode, ScenesMode, StepsMode, trial_mode

    def req(steps=(), scenes=(), control=False):
        task = SimpleNamespace(config=SimpleNamespace(steps=list(steps)), scenes=list(scenes))
        return SimpleNamespace(task=task, spec=RunSpec(), agent=SimpleNamespace(is_control=control))

    assert type(trial_mode(req(), None, ["p"])) is PlainMode
    steps = trial_mode(req(steps=["a"]), None, [])
    assert type(steps) is StepsMode and not steps.verifier_runs  # each step is verified as it goes
    assert type(trial_mode(req(scenes=["s"]), None, [])) is ScenesMode
    assert type(trial_mode(req(scenes=["s"], control=True), None, [])) is PlainMode  # the oracle solves it whole
