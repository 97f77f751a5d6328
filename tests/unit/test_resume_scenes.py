"""Resume compares the scenes a trial played: a run config's scenes change them without changing the task's
digest, so a finished trial with other scenes is not reused; records written before scenes were recorded are."""

from __future__ import annotations

from benchflow.jobs.job import changed_settings
from benchflow.records import TrialConfig

PAIR = [{"name": "pair", "skills_dir": None, "turns": [{"role": "writer", "has_prompt": False}],
         "roles": [{"name": "writer", "agent": "claude-agent-acp", "model": "m1", "reasoning_effort": None,
                    "timeout_sec": None, "idle_timeout_sec": None, "skills_dir": None, "capabilities": [],
                    "env_keys": []}]}]
BASE = {"task_digest": "sha256:1", "agent": "oracle"}


def test_a_trial_recorded_before_scenes_counts_as_no_scenes():
    old = TrialConfig.model_validate(BASE)
    assert changed_settings(old, {**BASE, "scenes": []}) == []
    assert changed_settings(old, {**BASE, "scenes": PAIR}) == ["scenes"]


def test_a_trial_that_played_other_scenes_is_not_reused():
    played = TrialConfig.model_validate({**BASE, "scenes": PAIR})
    assert changed_settings(played, {**BASE, "scenes": PAIR}) == []
    other = [{**PAIR[0], "roles": [{**PAIR[0]["roles"][0], "model": "m2"}]}]
    assert changed_settings(played, {**BASE, "scenes": other}) == ["scenes"]
