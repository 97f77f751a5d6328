"""The run flags of the loop, environment-plane, context-root, skills and Codex Apps features, as a run
config's keys (contracts §7.1) and ``bf.run`` keywords: the same RunSpec as the flags give."""

from __future__ import annotations

import json

import pytest

from benchflow.errors import ConfigError
from benchflow.jobs.config_file import build_run_spec
from benchflow.jobs.public import make_spec


def test_a_run_config_gives_what_the_flags_give(tmp_path, monkeypatch):
    monkeypatch.delenv("BENCHFLOW_ENV_REGISTRY", raising=False)
    creator = tmp_path / "skill-creator"
    creator.mkdir()
    (creator / "SKILL.md").write_text("---\nname: skill-creator\ndescription: make skills\n---\n")
    config = tmp_path / "run.yaml"
    config.write_text(
        "loop_strategy: {strategy: verify-retry, params: {k: 2, feedback: counts}}\n"
        "environment_manifest: env0@outage\n"
        "state: {name: env0, tools: [gmail]}\n"
        f"context_root: {tmp_path}\n"
        f"skill_mode: self-gen\nskill_creator_dir: {creator}\nself_gen_no_internet: true\n"
        "codex_apps_policy: inherit\n")
    spec = build_run_spec(config)
    assert spec.loop_strategy == "verify-retry:k=2,feedback=counts"
    assert spec.environment_manifest == "env0@outage" and json.loads(spec.state) == {"name": "env0", "tools": ["gmail"]}
    assert (spec.context_root, spec.skills.no_internet, spec.codex_apps_policy) == (str(tmp_path), True, "inherit")
    flags = build_run_spec(None, fields={
        "loop_strategy": "verify-retry:feedback=counts,k=2", "environment_manifest": "env0@outage",
        "state": '{"name": "env0", "tools": ["gmail"]}', "context_root": str(tmp_path), "skill_mode": "self-gen",
        "skill_creator_dir": str(creator), "self_gen_no_internet": True, "codex_apps_policy": "inherit"})
    assert flags.model_dump() == spec.model_dump()
    keywords = make_spec(loop_strategy="self-review:k=1", environment_manifest="env0@prod")
    assert (keywords.loop_strategy, keywords.environment_manifest) == ("self-review:k=1", "env0@prod")


@pytest.mark.parametrize(("text", "says"), [
    ("loop_strategy: {strategy: verify-retry, params: {k: 0}}\n", "k must be a whole number of retries"),
    ("loop_strategy: until-it-passes\n", "unknown strategy 'until-it-passes'"),
    ("checkpoints: every-prompt\nloop_strategy: self-review\n", "--loop-strategy and --checkpoints"),
    ("codex_apps_policy: sometimes\n", "codex_apps_policy: Input should be 'disabled' or 'inherit'"),
    ("environment_manifest: env0@nightly\n", "--environment-manifest env0@nightly: not in the built-in registry"),
    ("self_gen_no_internet: true\n", "--self-gen-no-internet turns web tools off for a self-generated run"),
])
def test_a_wrong_value_is_one_line_naming_it(tmp_path, monkeypatch, text, says):
    monkeypatch.delenv("BENCHFLOW_ENV_REGISTRY", raising=False)
    config = tmp_path / "run.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError) as refused:
        build_run_spec(config)
    assert says in str(refused.value) and "\n" not in str(refused.value)
