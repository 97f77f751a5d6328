"""The one constructor of ``config.json`` (what a trial ran with), and the settings resume compares.

Built from plain values into :class:`benchflow.records.TrialConfig` (contracts §3.2) and returned in
its on-disk form, before the trial's sandbox starts; ``result.json`` is :mod:`.result_record`'s.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any

from benchflow import __version__
from benchflow.records.trial_config import TrialConfig
from benchflow.util.redact import drop_secrets


def comparable_settings(spec: Any, agent_name: str, digest: str, prompts: list[str]) -> dict[str, Any]:
    """The settings a finished trial must share with a resumed run to be reused (see jobs.job.CHANGE_KEYS)."""
    return {
        "task_digest": digest,
        "agent": agent_name,
        "model": spec.model,
        "reasoning_effort": spec.reasoning_effort,
        "sandbox_user": spec.sandbox_user,
        "agent_env": drop_secrets(spec.agent_env),
        "prompts_sha256": _digest_prompts(prompts),
        "timeout_multiplier": spec.timeout_multiplier,
        "extra_instruction": spec.extra_instruction,
        "config_override": spec.override_record(),
        "verifier_sandbox": spec.verifier.sandbox,
    }


def build_config(*, spec: Any, task_path: str, task_name: str, digest: str, agent: str, agent_version: str | None,
                 is_control: bool,
                 environment: str, started_at: dt.datetime, prompts: list[str], timeout_sec: float | None,
                 attempt: int, seed: int | None, sandbox_fit: dict[str, Any] | None = None,
                 features: dict[str, Any] | None = None,
                 provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    """``config.json`` for one trial of ``spec`` (the ``RunSpec``), written before it starts;
    ``features`` holds the keys the run's features add (the skill policy's, the scenes', contracts §3.2: the
    ``trial_record`` hook of ``jobs.extensions``), ``provenance`` the
    ``source``/``dataset_name``/``dataset_version`` of fetched tasks (``Plan.provenance``)."""
    return TrialConfig(**(features or {}), **(provenance or {}),
        task_path=task_path, task_name=task_name,
        **comparable_settings(spec, agent, digest, prompts),
        agent_version=agent_version, harness_mode=None if is_control else spec.harness,
        environment=environment, sandbox_fit=sandbox_fit, base_image_override=spec.base_image_override,
        timeout_sec=timeout_sec,
        concurrency=spec.concurrency, agent_idle_timeout_sec=spec.agent_idle_timeout_sec,
        started_at=str(started_at), attempt=attempt, seed=seed, benchflow_version=__version__,
    ).to_json()


def _digest_prompts(prompts: list[str]) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(prompts).encode()).hexdigest()
