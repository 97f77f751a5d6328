"""One judge model call, through a BenchFlow model gateway, so it is metered and recorded.

A judge (``llm-judge``, ``agent-judge``) runs on the host. Its provider key
comes only from the task's ``verifier.env`` (filled through ``--allow-task-env``),
never from this process's environment and never from the agent's keys: the
call is registered on the job's gateway with upstreams of its own (or on a
private gateway started for the call when the job has none, e.g. under the
oracle), so the job's budget counts it and every exchange is written, redacted,
to the trial's ``verifier/judge_llm_trajectory.jsonl``. Callers outside a run (``bench monitor``)
pass the variables they read keys from and share one :func:`private_gateway` across their calls.

No provider SDK is needed: the judge speaks the provider's wire API (Anthropic
Messages, or OpenAI-compatible Chat Completions) to the gateway over its unix
socket with ``httpx``.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError, VerifierError

MAX_OUTPUT_TOKENS = 4096
CALL_TIMEOUT_SEC = 600.0


@dataclass
class JudgeReply:
    text: str
    model: str
    provider: str
    usage: dict[str, Any] = field(default_factory=dict)


def _no_key(model: str) -> VerifierError:
    return VerifierError(
        f"verifier crashed: judge model {model!r} has no provider key in verifier.env; add the key "
        "there as a template (e.g. ANTHROPIC_API_KEY: ${ANTHROPIC_API_KEY}) and run with "
        "--allow-task-env ANTHROPIC_API_KEY", category="verifier_failure")


async def ask_judge(model: str, system: str, prompt: str, *, env: Mapping[str, str], record: Path,
                    gateway: Any = None, label: str = "judge") -> JudgeReply:
    """Send one judging request for ``model`` and return its text.

    Raises:
        VerifierError: no key for the model in ``env``, or the call failed (never a 0 score).
    """
    from benchflow.gateway import Upstreams

    try:
        upstreams = Upstreams.from_env(env)
    except ConfigError as exc:
        raise VerifierError(f"verifier crashed: verifier.env: {exc}", category="verifier_failure") from None
    found = upstreams.for_model(model)
    if found is None or not found[0].api_key:
        raise _no_key(model)
    upstream, model_id = found
    if gateway is None or getattr(gateway.state, "value", "") != "running":
        async with private_gateway(upstreams) as private:
            return await ask_judge(model, system, prompt, env=env, record=record, gateway=private, label=label)
    trial_id = f"{label}-{secrets.token_hex(4)}"
    route = gateway.register_trial(trial_id, record, upstreams=upstreams)
    try:
        text = await _call(gateway, route, upstream, model_id, system, prompt)
        usage = route.usage()
    finally:
        gateway.unregister_trial(trial_id)
    return JudgeReply(text=text, model=model, provider=upstream.name, usage=usage)


@contextlib.asynccontextmanager
async def private_gateway(upstreams: Any) -> AsyncIterator[Any]:
    """A gateway of its own for judge calls made outside a job (on a unix socket in a private temporary
    folder), stopped and removed afterwards; pass it as ``ask_judge(gateway=)`` for many calls."""
    from benchflow.gateway import Gateway, GatewayConfig

    folder = Path(tempfile.mkdtemp(prefix="benchflow-judge-"))
    gateway = Gateway(GatewayConfig(upstreams=upstreams, unix_socket=folder / "gateway.sock"))
    try:
        await gateway.start()
        yield gateway
    finally:
        await gateway.stop()
        shutil.rmtree(folder, ignore_errors=True)


async def _call(gateway: Any, route: Any, upstream: Any, model_id: str, system: str, prompt: str) -> str:
    import httpx

    base = route.base_url(upstream.name)
    uds = str(gateway.unix_socket) if gateway.port is None and gateway.unix_socket else None
    if upstream.provider.protocol == "anthropic-messages":
        url, headers = base + "/v1/messages", {"x-api-key": route.key, "anthropic-version": "2023-06-01"}
        body: dict[str, Any] = {"model": model_id, "max_tokens": MAX_OUTPUT_TOKENS, "system": system,
                                "messages": [{"role": "user", "content": prompt}]}
    else:
        url = base + upstream.provider.openai_path + "/chat/completions"
        headers = {"authorization": f"Bearer {route.key}"}
        body = {"model": model_id, "messages": [{"role": "system", "content": system},
                                                {"role": "user", "content": prompt}]}
    try:
        async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=uds) if uds else None,
                                     timeout=CALL_TIMEOUT_SEC) as client:
            response = await client.post(url, json=body, headers=headers)
    except httpx.HTTPError as exc:
        raise VerifierError(f"verifier crashed: judge call failed: {type(exc).__name__}: {exc}",
                            category="verifier_infra") from None
    if response.status_code >= 400:
        raise VerifierError(f"verifier crashed: judge call failed: HTTP {response.status_code}: "
                            f"{response.text[:300]}", category="verifier_infra")
    try:
        data = response.json()
        if upstream.provider.protocol == "anthropic-messages":
            return "".join(b.get("text", "") for b in data.get("content") or [] if b.get("type") == "text")
        return str(data["choices"][0]["message"].get("content") or "")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise VerifierError("verifier crashed: judge reply is not a model response: "
                            f"{response.text[:300]}", category="verifier_failure") from None
