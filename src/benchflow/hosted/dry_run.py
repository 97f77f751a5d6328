"""``bench run --source-env … --dry-run``: what the run would install and run, without contacting anything."""

from __future__ import annotations

from typing import Any

from . import prime_hub
from .ref import parse_ref
from .run import settings
from .vf_eval import command


def plan_document(spec: Any) -> dict[str, Any]:
    ref = parse_ref(spec.source_env, spec.source_env_version)
    return {"kind": "benchflow.hosted-plan", "schema_version": 1, "source_env": ref.label,
            "hub": prime_hub.api_base(), "package": ref.package,
            "verifiers": spec.source_env_verifiers_version or "the package's own requirement",
            "rollouts": spec.source_env_num_examples * spec.source_env_rollouts_per_example,
            "settings": settings(spec), "model": spec.model, "jobs_dir": spec.jobs_dir,
            "command": command(spec, ref, "vf-eval", "<job>/hosted-env/vf-eval")}
