"""What a registry agent's process gets: its environment, credential files and model id.

Pure functions over an :class:`AgentConfig`; the runtime applies them in the
sandbox. ``gateway_env`` is the one place the gateway's URL, per-trial key and
model are spelled as the agent's own variables.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping

from benchflow.errors import ConfigError

from .agent_config import PREFIX, AgentConfig

DEFAULT_PATH = f"{PREFIX}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def gateway_env(config: AgentConfig, *, base_url: str, api_key: str, model: str | None) -> dict[str, str]:
    """The agent's own variables pointing at the gateway (URL, per-trial key, model)."""
    mapping = config.gateway
    env = {name: base_url.rstrip("/") + mapping.base_url_suffix for name in mapping.base_url_env}
    env.update({name: api_key for name in mapping.api_key_env})
    if model:
        env.update({name: format_model(config, model) for name in mapping.model_env})
    return env


_URL_SOURCE = {"anthropic-messages": "ANTHROPIC_BASE_URL", "gemini": "GOOGLE_GEMINI_BASE_URL"}


def gateway_env_from(config: AgentConfig, gateway_vars: Mapping[str, str], model: str | None) -> dict[str, str]:
    """``gateway_vars`` (``benchflow.gateway`` route ``agent_env(model)``) plus the agent's own spellings.

    The URL is the gateway mount for the agent's wire protocol: Anthropic and Gemini mounts by
    their standard variables, OpenAI-style agents the ``BENCHFLOW_PROVIDER_BASE_URL`` of the
    provider serving ``model`` (else ``OPENAI_BASE_URL``). The key is the per-trial gateway key.
    """
    env = dict(gateway_vars)
    source = _URL_SOURCE.get(config.gateway.api)
    url = env.get(source) if source else env.get("BENCHFLOW_PROVIDER_BASE_URL") or env.get("OPENAI_BASE_URL")
    key = env.get("BENCHFLOW_PROVIDER_API_KEY") or next(
        (v for k, v in env.items() if k.endswith("_API_KEY")), None)
    if url and key:
        env.update(gateway_env(config, base_url=url, api_key=key,
                               model=env.get("BENCHFLOW_PROVIDER_MODEL") or model))
    return env


def format_model(config: AgentConfig, model: str, provider: str | None = None) -> str:
    """The model id as the agent expects it: ``provider/model`` agents get ``benchflow/<m>`` for bare
    ids, ``registered-provider/model`` agents ``<provider>/<m>`` (``provider``: the gateway provider
    serving the model, ``BENCHFLOW_PROVIDER_NAME``)."""
    fmt = config.model.format
    if fmt == "provider/model" and "/" not in model:
        return f"benchflow/{model}"
    if fmt == "registered-provider/model" and provider and not model.startswith(f"{provider}/"):
        return f"{provider}/{model}"
    return model


def home_of(user: str | None) -> str:
    return "/root" if user in (None, "root") else f"/home/{user}"


def process_env(config: AgentConfig, ctx_env: Mapping[str, str], *, user: str | None,
                model: str | None, effort: str | None) -> dict[str, str]:
    """The launch environment: registry fixed vars < trial env (gateway + --agent-env) < model/effort vars."""
    env = {"PATH": DEFAULT_PATH, "HOME": home_of(user), **config.env, **dict(ctx_env)}
    if model and config.model.via == "env":
        env.update({name: format_model(config, model) for name in config.gateway.model_env})
    if effort and config.effort.via == "env" and config.effort.env:
        env[config.effort.env] = effort
    return env


def check_effort(config: AgentConfig, effort: str | None) -> None:
    """Refuse an effort the agent has no way to take.

    Raises:
        ConfigError: the agent has no effort setting, or not this level.
    """
    if not effort:
        return
    if config.effort.via == "none":
        raise ConfigError(f"--effort {effort}: agent {config.name} has no effort setting; drop --effort")
    if effort not in config.effort.values:
        raise ConfigError(f"--effort {effort}: agent {config.name} accepts {', '.join(config.effort.values)}")


def credential_file_script(config: AgentConfig, env: Mapping[str, str], home: str) -> tuple[str, bytes] | None:
    """A ``bash`` script plus its stdin that writes the agent's credential files (None: nothing to write).

    Values travel on stdin (one JSON document), never on the command line.
    """
    files = [f for f in config.credential_files if env.get(f.env_source)]
    dirs = [f"{home}/{d}" for d in config.home_dirs]
    if not files and not dirs:
        return None
    contents = []
    for spec in files:
        value = env[spec.env_source]
        path = spec.path.replace("{home}", home)
        filled = spec.template.replace("{value}", json.dumps(value)[1:-1] if path.endswith(".json") else value)
        contents.append((path, filled, spec.mode))
    lines = ["set -eu", "umask 077"] + [f"mkdir -p {shlex.quote(d)}" for d in dirs]
    # stdin holds the file bodies, one per record, separated by NUL bytes, in order
    for path, _, mode in contents:
        q = shlex.quote(path)
        lines += [f"mkdir -p \"$(dirname {q})\"",
                  f"IFS= read -r -d '' body || true; printf '%s' \"$body\" > {q}; chmod {mode} {q}"]
    stdin = b"".join(body.encode() + b"\0" for _, body, _ in contents)
    return "\n".join(lines) + "\n", stdin
