"""The ``hosted-env`` feature (``--source-env``): its settings checked, and the whole run taken over.

Imported only for a run that names a hosted environment (``jobs.extensions``); what does the work
(:mod:`.run`) is imported when the run starts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

NOT_FOR_HOSTED = {
    "agent": "-a: a hosted environment's rollouts are the model's own answers, run by verifiers; leave -a out "
             "and name the model with --model",
    "reasoning_effort": "--effort: pass it to the model as --source-env-sampling-arg reasoning_effort=VALUE",
    "sandbox": "--sandbox: a hosted environment runs in verifiers' own process, not in a sandbox; leave it out",
    "agent_env": "--agent-env: a hosted run has no agent; vf-eval gets this process's environment",
    "prompts": "--prompt: a hosted environment's prompts are its dataset's",
    "seeds": "--seeds: use --source-env-rollouts-per-example for repeated rollouts",
    "workers.concurrency": "--worker-concurrency: vf-eval runs the rollouts (--concurrency of them at once)",
    "executor": "--executor: vf-eval runs the rollouts in this process's machine",
    "budget": "--max-cost-usd/--max-tokens/--max-*/--token-budget/--turn-budget: vf-eval calls the model itself, "
              "not through BenchFlow's gateway, so no budget can be kept; bound the run with "
              "--source-env-num-examples and --source-env-max-tokens",
    "task_manifest_out": "--task-manifest-out: a hosted environment has no task folders to list",
}
"""Run settings that mean nothing for a hosted environment, refused with what to do instead."""


class HostedEnvFeature:
    name = "hosted-env"

    def check_spec(self, spec: Any) -> None:
        """Raises ValueError (the user's one line) for a setting a hosted run cannot honour."""
        from benchflow.jobs.extensions import is_set

        for path, why in NOT_FOR_HOSTED.items():
            if is_set(spec, path):
                raise ValueError(f"--source-env: {why}")
        var = spec.source_env_api_key_var
        if var is not None and not _VARIABLE.match(var):
            raise ValueError("--source-env-api-key-var: what was given is not a variable name (not echoed: it may be "
                             "a key); give the name of the environment variable that holds the key, e.g. OPENAI_API_KEY")
        url = spec.source_env_base_url
        if url is not None and not re.match(r"^https?://[^/\s]+", url):
            raise ValueError(f"--source-env-base-url {url!r}: give an http(s) URL, e.g. https://api.openai.com/v1")
        from benchflow.errors import ConfigError

        from .ref import parse_ref

        try:
            parse_ref(spec.source_env, spec.source_env_version)
        except ConfigError as exc:  # pydantic reports a ValueError as the field's one line
            raise ValueError(str(exc)) from None

    async def run_job(self, spec: Any, emit: Callable[[dict[str, Any]], None]) -> Any:
        import os

        from benchflow.errors import ConfigError

        var = spec.source_env_api_key_var
        if var is not None and not os.environ.get(var):
            raise ConfigError(f"--source-env-api-key-var {var}: ${var} is not set; export the endpoint's key "
                              "in it (its value is read from the environment only)")
        from .run import run_hosted

        return await run_hosted(spec, emit)


HOSTED_ENV = HostedEnvFeature()
