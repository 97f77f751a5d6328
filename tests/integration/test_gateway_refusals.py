"""The gateway forwards the providers' model APIs only, over real HTTP on loopback.

An agent holding its per-trial key tries the rest of the provider account
(batches, files, fine-tuning, embeddings …): each gets 403, the fake
provider (which would answer any path) sees nothing, and the trial's
llm_trajectory.jsonl records the refusal. Headers that pick the billed
account or identity never reach the provider; token counts and model lists
still do, recorded.
"""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
import pytest

from benchflow.gateway import Gateway, GatewayConfig, TrialRoute, Upstreams
from tests.doubles import fake_model_server as fake

REAL_KEYS = {
    "OPENAI_API_KEY": "sk-proj-REALopenaiKEYdoNotLeak0123456789",
    "ANTHROPIC_API_KEY": "sk-ant-api03-REALanthropicKEYdoNotLeak01",
    "GEMINI_API_KEY": "AIzaREALgeminiKEYdoNotLeak0123456789abcd",
}


@pytest.fixture(scope="module")
def upstream():
    with fake.FakeModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def client():
    with httpx.Client(timeout=10) as http:
        yield http


@pytest.fixture(scope="module")
def gateway(upstream):
    env = {**REAL_KEYS, "OPENAI_BASE_URL": upstream.url + "/v1", "ANTHROPIC_BASE_URL": upstream.url,
           "GEMINI_BASE_URL": upstream.url}
    gw = Gateway(GatewayConfig(upstreams=Upstreams.from_env(env), port=0))
    asyncio.run(gw.start())
    yield gw
    asyncio.run(gw.stop())


@pytest.fixture
def trial(gateway, tmp_path):
    def register(**budgets) -> TrialRoute:
        trial_id = f"task__{uuid.uuid4().hex[:8]}"
        return gateway.register_trial(trial_id, tmp_path / trial_id / "llm_trajectory.jsonl", **budgets)
    return register


def base(route: TrialRoute, provider: str) -> str:
    env = route.agent_env()
    return {"openai": env["OPENAI_BASE_URL"], "anthropic": env["ANTHROPIC_BASE_URL"],
            "gemini": env["GOOGLE_GEMINI_BASE_URL"]}[provider]


def auth(route: TrialRoute, provider: str) -> dict[str, str]:
    return {"openai": {"authorization": f"Bearer {route.key}"}, "anthropic": {"x-api-key": route.key},
            "gemini": {"x-goog-api-key": route.key}}[provider]


def records(gateway: Gateway, route: TrialRoute) -> list[dict]:
    gateway.unregister_trial(route.trial_id)
    return [json.loads(line) for line in route.llm_trajectory_path.read_text().splitlines()]


def chat(client: httpx.Client, route: TrialRoute, headers: dict[str, str] | None = None) -> httpx.Response:
    return client.post(base(route, "openai") + "/chat/completions", json={"model": "gpt-4o", "messages": []},
                       headers={**auth(route, "openai"), **(headers or {})})


NOT_MODEL_APIS = [
    ("openai", "POST", "/batches", {"json": {"input_file_id": "file-1", "endpoint": "/v1/chat/completions"}}),
    ("openai", "POST", "/files", {"files": {"file": ("a.jsonl", b"{}\n")}, "data": {"purpose": "batch"}}),
    ("openai", "GET", "/files", {}),
    ("openai", "DELETE", "/files/file-abc123", {}),
    ("openai", "POST", "/fine_tuning/jobs", {"json": {"model": "gpt-4o-mini", "training_file": "file-1"}}),
    ("openai", "POST", "/embeddings", {"json": {"model": "text-embedding-3-small", "input": "hi"}}),
    ("openai", "GET", "/chat/completions", {}),  # lists the account's stored completions
    ("openai", "GET", "/responses/resp_123", {}),
    ("anthropic", "POST", "/v1/messages/batches", {"json": {"requests": []}}),
    ("anthropic", "GET", "/v1/files", {}),
    ("gemini", "POST", "/v1beta/models/gemini-embedding-001:embedContent", {"json": {"content": {}}}),
    ("gemini", "GET", "/v1beta/files", {}),
]


@pytest.mark.parametrize(("provider", "method", "path", "payload"), NOT_MODEL_APIS,
                         ids=[f"{p}-{m}-{path}" for p, m, path, _ in NOT_MODEL_APIS])
def test_provider_apis_beyond_model_calls_are_refused_and_recorded(gateway, upstream, trial, client,
                                                                    provider, method, path, payload):
    route = trial()
    n_upstream = len(upstream.requests)
    reply = client.request(method, base(route, provider) + path, headers=auth(route, provider), **payload)
    assert reply.status_code == 403
    assert "\n" not in reply.text.strip()
    error = reply.json()["error"]
    assert f"{method} " in error["message"] and "not a model API call" in error["message"]
    assert len(upstream.requests) == n_upstream, upstream.requests[n_upstream:]
    usage = route.usage()
    assert usage["n_requests"] == 0 and usage["usage_details"]["n_forbidden_requests"] == 1
    [record] = records(gateway, route)
    assert (record["request"]["method"], record["response"]["status_code"]) == (method, 403)
    assert record["request"]["path"].endswith(path)
    assert record["metadata"]["refused"] == "not_a_model_api"
    text = route.llm_trajectory_path.read_text()
    assert route.key not in text and not any(secret in text for secret in REAL_KEYS.values())


def test_with_the_turn_budget_spent_nothing_more_reaches_the_provider(gateway, upstream, trial, client):
    route = trial(turn_budget=1)
    assert chat(client, route).status_code == 200
    n_upstream = len(upstream.requests)
    openai = auth(route, "openai")
    assert client.post(base(route, "openai") + "/batches", headers=openai, json={}).status_code == 403
    assert client.post(base(route, "openai") + "/embeddings", headers=openai, json={}).status_code == 403
    assert client.delete(base(route, "openai") + "/files/file-1", headers=openai).status_code == 403
    assert chat(client, route).status_code == 400
    counted = client.post(base(route, "anthropic") + "/v1/messages/count_tokens", headers=auth(route, "anthropic"),
                          json={"model": "claude-sonnet-4-5", "messages": []})
    assert counted.status_code == 400 and counted.json()["type"] == "error"
    assert len(upstream.requests) == n_upstream
    details = route.usage()["usage_details"]
    assert (details["n_forbidden_requests"], details["n_refused_requests"]) == (3, 2)
    assert [r["metadata"].get("refused") for r in records(gateway, route)] == [
        None, "not_a_model_api", "not_a_model_api", "not_a_model_api", "turn_budget", "turn_budget"]


def test_billing_and_identity_headers_never_reach_the_provider(gateway, upstream, trial, client):
    route = trial()
    agent_headers = {"openai-organization": "org-agentOwn", "openai-project": "proj_agentOwn",
                     "chatgpt-account-id": "acct-agent", "cookie": "session=agent", "openai-beta": "responses=v1"}
    assert chat(client, route, agent_headers).status_code == 200
    seen = upstream.requests[-1]["headers"]
    assert not {"openai-organization", "openai-project", "chatgpt-account-id", "cookie"} & set(seen)
    assert seen["authorization"] == f"Bearer {REAL_KEYS['OPENAI_API_KEY']}"
    assert seen["openai-beta"] == "responses=v1"

    betas = "interleaved-thinking-2025-05-14,files-api-2025-04-14, mcp-client-2025-04-04,code-execution-2025-05-22"
    anthropic = {**auth(route, "anthropic"), "anthropic-version": "2023-06-01", "anthropic-beta": betas,
                 "anthropic-dangerous-direct-browser-access": "true", "authorization": "Bearer sk-agent-own"}
    reply = client.post(base(route, "anthropic") + "/v1/messages", headers=anthropic,
                        json={"model": "claude-sonnet-4-5", "messages": []})
    assert reply.status_code == 200
    seen = upstream.requests[-1]["headers"]
    assert {k for k in seen if k.startswith("anthropic-")} == {"anthropic-version", "anthropic-beta"}
    assert seen["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert seen["x-api-key"] == REAL_KEYS["ANTHROPIC_API_KEY"] and "authorization" not in seen

    gemini = {**auth(route, "gemini"), "x-goog-user-project": "agent-project"}
    url = base(route, "gemini") + "/v1beta/models/gemini-2.5-flash:generateContent"
    assert client.post(url, headers=gemini, json={"contents": []}).status_code == 200
    assert "x-goog-user-project" not in upstream.requests[-1]["headers"]


def test_token_counts_and_model_lists_are_forwarded_and_recorded(gateway, upstream, trial, client):
    route = trial()
    counted = client.post(base(route, "anthropic") + "/v1/messages/count_tokens", headers=auth(route, "anthropic"),
                          json={"model": "claude-sonnet-4-5", "messages": []})
    assert counted.status_code == 200 and counted.json() == {"input_tokens": fake.INPUT_UNCACHED}
    url = base(route, "gemini") + "/v1beta/models/gemini-2.5-flash:countTokens"
    assert client.post(url, headers=auth(route, "gemini"), json={"contents": []}).json()["totalTokens"]
    listed = client.get(base(route, "openai") + "/models", headers=auth(route, "openai"))
    assert listed.status_code == 200 and listed.json()["data"][0]["id"] == "fake-model"
    assert [r["path"] for r in upstream.requests[-3:]] == [
        "/v1/messages/count_tokens", "/v1beta/models/gemini-2.5-flash:countTokens", "/v1/models"]
    usage = route.usage()
    assert usage["n_requests"] == 0 and usage["usage_details"]["n_lookup_requests"] == 3
    found = [(r["request"]["method"], r["request"]["path"], r["response"]["status_code"], r["metadata"]["call_type"])
             for r in records(gateway, route)]
    assert found == [("POST", "/v1/messages/count_tokens", 200, "count_tokens"),
                     ("POST", "/v1beta/models/gemini-2.5-flash:countTokens", 200, "count_tokens"),
                     ("GET", "/v1/models", 200, "models")]


def test_a_provider_not_configured_on_the_host_is_a_recorded_404(gateway, upstream, trial, client):
    route = trial()
    n_upstream = len(upstream.requests)
    reply = client.post(route.base_url("mistral") + "/v1/chat/completions", headers=auth(route, "openai"), json={})
    assert reply.status_code == 404 and "no provider configured" in reply.json()["error"]["message"]
    assert len(upstream.requests) == n_upstream
    [record] = records(gateway, route)
    assert (record["response"]["status_code"], record["metadata"]["refused"]) == (404, "no_provider")
