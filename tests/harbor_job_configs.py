"""Harbor job configs as Harbor writes them (no Harbor import: it needs Python 3.12)."""

from __future__ import annotations

_EXCLUDED = ["AgentTimeoutError", "VerifierTimeoutError", "RewardFileNotFoundError", "RewardFileEmptyError",
             "VerifierOutputParseError", "ApiUsageLimitError", "AgentSafetyRefusalError", "AgentAuthenticationError",
             "ModelNotFoundError", "UnsupportedModelParametersError"]


def harbor_config_json(**changes) -> dict:
    """What Harbor 0.25 writes as a job's config.json (JobConfig.model_dump(mode="json")): every key, at its
    default unless ``changes`` says otherwise."""
    doc = {
        "job_name": "2026-01-02__03-04-05", "jobs_dir": "jobs", "n_attempts": 1, "install_only": False,
        "skip_credential_checks": False, "timeout_multiplier": 1.0, "agent_timeout_multiplier": None,
        "verifier_timeout_multiplier": None, "agent_setup_timeout_multiplier": None,
        "environment_build_timeout_multiplier": None, "debug": False, "n_concurrent_trials": 4, "quiet": False,
        "retry": {"max_retries": 0, "include_exceptions": None, "exclude_exceptions": _EXCLUDED,
                  "wait_multiplier": 1.0, "min_wait_sec": 1.0, "max_wait_sec": 60.0},
        "environment": {"type": "docker", "import_path": None, "force_build": False, "delete": True, "stream": False,
                        "cpu_enforcement_policy": "auto", "memory_enforcement_policy": "auto", "override_cpus": None,
                        "override_memory_mb": None, "override_storage_mb": None, "override_gpus": None,
                        "override_tpu": None, "mounts": None, "extra_docker_compose": [], "kwargs": {},
                        "extra_allowed_hosts": []},
        "verifier": {"override_timeout_sec": None, "max_timeout_sec": None, "disable": False},
        "metrics": [],
        "agents": [{"name": "oracle", "import_path": None, "model_name": None, "base_url": None,
                    "model_api_key_name": None, "model_api_format": None, "skip_model_parsing": False,
                    "n_concurrent": None, "concurrency_group": None, "skills": [], "override_timeout_sec": None,
                    "override_setup_timeout_sec": None, "max_timeout_sec": None, "resume_trajectory": False,
                    "load_trajectory": None, "extra_allowed_hosts": [], "kwargs": {}, "mcp_servers": []}],
        "user_agent": None,
        "datasets": [{"path": "tasks", "name": None, "version": None, "ref": None, "registry_url": None,
                      "registry_path": None, "repo": None, "overwrite": False, "download_dir": None,
                      "task_names": None, "exclude_task_names": None, "n_tasks": None}],
        "tasks": [], "artifacts": [], "extra_instruction_paths": [], "extra_instructions": [], "source_jobs": [],
    }
    for key, value in changes.items():
        doc[key] = value
    return doc
