"""Skill policy flags: each mode needs its folder, and a folder its mode (exit 2, one line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchflow.errors import ConfigError
from benchflow.jobs.config_file import build_run_spec
from benchflow.skills.policy import policy_of, self_gen_prompts
from tests.conftest import ROOT

SKILLS = ROOT / "tests" / "fixtures" / "skills"


@pytest.mark.parametrize(("fields", "needle"), [
    ({"skills.mode": "with-skill"}, "needs --skills-dir"),
    ({"skills.mode": "no-skill", "skills.dir": str(SKILLS)}, "only with --skill-mode with-skill"),
    ({"skills.mode": "self-gen"}, "needs --skill-creator-dir"),
    ({"skills.dir": "/nonexistent/skills"}, "not a folder"),
    ({"skills.mode": "self-gen", "skills.creator_dir": str(SKILLS / "extra-skills")}, "no SKILL.md"),
])
def test_inconsistent_skill_flags_are_refused(fields: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        build_run_spec(fields=fields)


def test_modes_resolve() -> None:
    assert policy_of(build_run_spec()).mode == "no-skill"
    assert policy_of(build_run_spec(fields={"skills.dir": str(SKILLS)})).mode == "with-skill"
    gen = policy_of(build_run_spec(fields={"skills.mode": "self-gen", "skills.creator_dir": str(SKILLS)}))
    assert gen.creator_dir == SKILLS / "skill-creator"
    assert self_gen_prompts(gen, ["a", "b"])[1:] == ["b"] and self_gen_prompts(gen, ["a"])[0].endswith("\n\na")


def test_run_config_keys(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(f"skills_dir: {SKILLS / 'extra-skills'}\ntask_skills: true\nseparate_verifier: true\n")
    spec = build_run_spec(config)
    assert spec.skills.task_skills is True and spec.verifier.sandbox == "separate"
    assert policy_of(spec).skills_dir == SKILLS / "extra-skills"
