"""Each feature's settings are a section of ``RunSpec`` (``spec.checkpoints.keep``, ``spec.skills.dir``); the flat
keys a run config, ``bf.run``, a Harbor job config, a run reference and an old job folder spell them with still
mean the same settings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchflow.errors import ConfigError
from benchflow.jobs import run_reference
from benchflow.jobs.config_file import build_run_spec
from benchflow.jobs.feature_settings import LEGACY_KEYS, lift_legacy
from benchflow.jobs.public import make_spec
from benchflow.jobs.resume import resume_spec
from benchflow.jobs.spec import RunSpec
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "records" / "job-flat-run-config"
"""A job written by BenchFlow before the sections (flat run_config keys), its task beside it; ``{ROOT}`` and
``{SKILLS}`` stand for the folder it is copied to and tests/fixtures/skills."""
SKILLS = ROOT / "tests" / "fixtures" / "skills"

FLAT = {"checkpoint_keep": 5, "skills_dir": str(SKILLS / "extra-skills"), "verifier_sandbox": "separate",
        "separate_verifier_include": ["/root"], "worker_retries": 2, "integrity": "audit"}
SECTIONS = {"checkpoints": {"keep": 5}, "skills": {"dir": str(SKILLS / "extra-skills")},
            "verifier": {"sandbox": "separate", "include": ["/root"]}, "workers": {"retries": 2},
            "review": {"integrity": "audit"}}


def copy_old_job(tmp_path: Path) -> Path:
    """The fixture in ``tmp_path``, its paths pointing there; returns the job folder."""
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    for path in tmp_path.rglob("*.json"):
        path.write_text(path.read_text().replace("{ROOT}", str(tmp_path)).replace("{SKILLS}", str(SKILLS)))
    return tmp_path / "jobs" / "old"


def test_an_old_job_folder_s_flat_run_config_is_read_into_the_sections(tmp_path: Path) -> None:
    job = copy_old_job(tmp_path)
    stored = json.loads((job / "evaluation.json").read_text())["run_config"]
    assert {"checkpoint_keep", "skills_dir", "verifier_sandbox", "worker_retries", "integrity"} <= stored.keys()
    spec = resume_spec(job, agent_env={}, concurrency=None, restart_changed=False)
    assert spec == RunSpec(targets=[str(tmp_path / "tasks")], sandbox="docker", jobs_dir=str(tmp_path / "jobs"),
                           job_name="old", **SECTIONS)
    assert spec.skills.dir == str(SKILLS / "extra-skills") and spec.verifier.sandbox == "separate"
    assert not set(LEGACY_KEYS) & set(spec.redacted()) - {"checkpoints"}  # stored again: the sections only
    assert isinstance(spec.redacted()["checkpoints"], dict)


def test_flat_keys_mean_the_same_settings_however_they_come(tmp_path: Path) -> None:
    expected = RunSpec(**SECTIONS)
    assert RunSpec(**FLAT) == expected  # a stored run config, a shard worker's message
    config = tmp_path / "run.yaml"
    config.write_text("".join(f"{key}: {json.dumps(value)}\n" for key, value in FLAT.items()))
    assert build_run_spec(config) == expected  # --config
    assert make_spec(**FLAT) == expected  # bf.run(...) keywords
    harbor = tmp_path / "job.yaml"  # a Harbor job config with BenchFlow's own keys beside Harbor's
    harbor.write_text("agents: [{name: oracle}]\n" + config.read_text())
    assert build_run_spec(harbor) == expected.model_copy(update={"agent": "oracle"})
    assert RunSpec.model_validate(expected.model_dump(mode="json")) == expected


def test_each_flat_key_lands_in_its_own_section() -> None:
    given = {"checkpoints": "prompt:2", "checkpoint_keep": 4, "retry_from_checkpoint": "both",
             "retry_prompt": "again", "retry_resume_session": True, "skill_mode": "with-skill",
             "skills_dir": "/s", "skill_creator_dir": "/c", "task_skills": False, "self_gen_no_internet": True,
             "verifier_sandbox": "separate",
             "separate_verifier_include": ["/x"], "worker_concurrency": 2, "worker_retries": 0,
             "worker_start_stagger_sec": 0.5, "integrity": "audit", "reviewer": {"model": "m"}}
    assert set(given) == set(LEGACY_KEYS)
    assert lift_legacy({**given, "agent": "nop"}) == {"agent": "nop", "checkpoints": {
        "after": "prompt:2", "keep": 4, "retry": "both", "retry_prompt": "again", "retry_resume_session": True},
        "skills": {"mode": "with-skill", "dir": "/s", "creator_dir": "/c", "task_skills": False, "no_internet": True},
        "verifier": {"sandbox": "separate", "include": ["/x"]},
        "workers": {"concurrency": 2, "retries": 0, "start_stagger_sec": 0.5},
        "review": {"integrity": "audit", "reviewer": {"model": "m"}}}
    assert RunSpec(checkpoints="prompt:2").checkpoints.after == [2]  # read by the checkpoints feature


def test_a_setting_in_its_section_wins_over_its_flat_key() -> None:
    spec = RunSpec(checkpoint_keep=2, checkpoints={"keep": 7, "after": "every-prompt"}, skills_dir="/nowhere",
                   skills={"dir": None})
    assert (spec.checkpoints.keep, spec.checkpoints.after, spec.skills.dir) == (7, "every-prompt", None)


@pytest.mark.parametrize(("options", "needle"), [
    ({"checkpoint_keep": 0}, "bf.run(): checkpoint_keep: Input should be greater than or equal to 1"),
    ({"worker_concurrency": 0}, "bf.run(): worker_concurrency: Input should be greater than or equal to 1"),
    ({"integrity": "loud"}, "bf.run(): integrity: Input should be 'off', 'audit' or 'strict'"),
])
def test_a_bad_value_is_named_by_the_key_the_user_gave(options: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make_spec(**options)
    assert str(caught.value) == needle


def test_the_feature_judges_its_section() -> None:
    """Checks across a section's settings are the owning feature's (its ``check_spec``), given either way."""
    with pytest.raises(ValueError, match="--retry-from-checkpoint on-failure needs --checkpoints"):
        RunSpec(checkpoints={"retry": "on-failure"})
    with pytest.raises(ValueError, match="--retry-resume-session applies to a checkpoint retry"):
        RunSpec(retry_resume_session=True)
    with pytest.raises(ConfigError, match="--skill-mode with-skill needs --skills-dir"):
        RunSpec(skills={"mode": "with-skill"})
    with pytest.raises(ValueError, match="--separate-verifier-include 'root'"):
        RunSpec(verifier={"include": ["root"]})
    assert RunSpec(review={"integrity": "strict"}).verifier.sandbox == "separate"  # strict verifies apart


def test_a_run_config_s_reviewer_and_bf_run_s_are_merged_as_before(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("reviewer: {model: m1, agent: a1}\nseparate_verifier_include: [/a]\n")
    spec = make_spec(config=str(config), reviewer={"model": "m2"}, separate_verifier_include=["/b"])
    assert spec.review.reviewer == {"model": "m2", "agent": "a1"} and spec.verifier.include == ["/b"]


def test_a_run_reference_reads_flat_keys_and_sections_alike(tmp_path: Path) -> None:
    reference = tmp_path / run_reference.NAME
    reference.write_text('strict = true\ncheckpoint_keep = 5\n[skills]\nmode = "no-skill"\n')
    strict, settings = run_reference.load(reference)
    assert strict and settings == {"checkpoints": {"keep": 5}, "skills": {"mode": "no-skill"}}
    assert run_reference.deviations(RunSpec(checkpoints={"keep": 3}), settings, {}) == [
        "checkpoints.keep: reference 5, this run 3", "skills.mode: reference 'no-skill', this run None"]
    assert run_reference.deviations(RunSpec(checkpoint_keep=5, skill_mode="no-skill"), settings, {}) == []
