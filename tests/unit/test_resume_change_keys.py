"""A finished trial is reused only when it ran with this run's settings; older records count as defaults."""

from __future__ import annotations

from benchflow.jobs.job import changed_settings
from benchflow.records import TrialConfig

EXPECTED = {"task_digest": "sha256:1", "agent": "oracle", "verifier_sandbox": "task", "skill_mode": "no-skill"}


def test_a_record_written_before_the_newer_keys_is_reused():
    old = TrialConfig.model_validate({"task_digest": "sha256:1", "agent": "oracle"})
    assert changed_settings(old, EXPECTED) == []


def test_a_trial_verified_elsewhere_or_with_other_skills_is_not_reused():
    separate = TrialConfig.model_validate({"task_digest": "sha256:1", "agent": "oracle", "verifier_sandbox": "separate"})
    assert changed_settings(separate, EXPECTED) == ["verifier_sandbox"]
    skilled = TrialConfig.model_validate({"task_digest": "sha256:1", "agent": "oracle", "skill_mode": "with-skill"})
    assert changed_settings(skilled, EXPECTED) == ["skill_mode"]
