"""``bench skills eval --judge-model``: sentence expectations judged by the task verifier's ``llm-judge``.

A case whose expectations are all sentences becomes a task whose verifier is ``llm-judge``
(:mod:`benchflow.verify.strategies.judges`, the same judge any task's verifier uses): each
sentence is one criterion of ``tests/rubric.json``, the judge sees the prompt, the case's
``expected_output`` as context and the files of ``/app`` after the agent, and scores every
criterion from 0 to 1 through a model gateway (recorded, redacted, to the trial's
``verifier/judge_llm_trajectory.jsonl``). The reward is the mean; the case passes at 1.0.

The judge's key is the user's, read from this machine's environment like an agent's: the task's
``verifier.env`` names the provider's variables as templates (``${ANTHROPIC_API_KEY:-}``), and the
run is allowed to fill exactly those (``--allow-task-env``), so no key is written into a task.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from benchflow.errors import ConfigError

from .evals_file import EvalCase

RUBRIC_PATH = "tests/rubric.json"
INPUT_DIR = "/app"


@dataclass(frozen=True)
class JudgeRoute:
    """The judge model and the host variables its provider is reached with."""

    model: str
    env_names: tuple[str, ...]


def resolve(model: str, host_env: Mapping[str, str] | None = None) -> JudgeRoute:
    """The provider variables ``model`` is judged with, set in ``host_env`` (default: this process's).

    Raises:
        ConfigError: no provider of this machine serves the model with a key.
    """
    from benchflow.gateway.upstream import Upstreams

    env = os.environ if host_env is None else host_env
    if not model.strip():
        raise ConfigError("--judge-model: give a model id, e.g. claude-sonnet-4-6")
    found = Upstreams.from_env(env).for_model(model)
    if found is None or not found[0].api_key:
        raise ConfigError(f"--judge-model {model}: no provider key for it in your environment; set the provider's "
                          "key (e.g. ANTHROPIC_API_KEY for claude-*, OPENAI_API_KEY for gpt-*) or name it as "
                          "provider/model")
    provider = found[0].provider
    names = tuple(n for n in (*provider.key_env, *provider.base_url_env) if env.get(n))
    return JudgeRoute(model=model, env_names=names)


def rubric(case: EvalCase) -> str:
    """``tests/rubric.json`` of a judged case: one criterion per sentence."""
    criteria = [{"name": f"expectation-{i}", "description": sentence}
                for i, sentence in enumerate(case.sentences, 1)]
    return json.dumps({"criteria": criteria}, indent=2) + "\n"


def verifier_toml(case: EvalCase, route: JudgeRoute) -> str:
    """The ``[verifier]`` tables after ``timeout_sec`` for a judged case (TOML)."""
    env = "".join(f"{name} = {json.dumps('${' + name + ':-}')}\n" for name in route.env_names)
    return (f'type = "llm-judge"\n\n[verifier.judge]\nmodel = {json.dumps(route.model)}\n'
            f'rubric_path = "{RUBRIC_PATH}"\ninput_dir = "{INPUT_DIR}"\n'
            f"context = {json.dumps('Expected output: ' + case.expected_output if case.expected_output else '')}\n"
            f"\n[verifier.env]\n{env}")
