"""The gateway end to end against the fake model server, all on loopback (no Docker needed).

One fake upstream and one gateway serve the whole module; each test registers
its own trial, so counters and trajectory files never mix.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import time
import uuid

import httpx
import pytest

from benchflow.gateway import Gateway, GatewayConfig, TrialRoute, Upstreams
from tests.doubles import fake_model_server as fake

CONTENT_START = fake.PIECES[0]
REAL_KEYS = {
    "OPENAI_API_KEY": "sk-proj-REALopenaiKEYdoNotLeak0123456789",
    "ANTHROPIC_API_KEY": "sk-ant-api03-REALanthropicKEYdoNotLeak01",
    "GEMINI_API_KEY": "AIzaREALgeminiKEYdoNotLeak0123456789abcd",
}


HTTP = httpx.Client(timeout=10)
"""One client for the module: a new client per call costs more than the call."""


@pytest.fixture(scope="module")
def upstream():
    with fake.FakeModelServer() as server:
        yield server
    HTTP.close()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def own_tcp_listeners() -> set[str]:
    """Inodes of the listening TCP sockets this process holds."""
    held = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("socket:["):
                held.add(target[8:-1])
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    listening.add(fields[9])
    return held & listening


def _env(server: fake.FakeModelServer) -> dict[str, str]:
    return {**REAL_KEYS, "OPENAI_BASE_URL": server.url + "/v1", "ANTHROPIC_BASE_URL": server.url,
            "GEMINI_BASE_URL": server.url, "VLLM_BASE_URL": f"http://127.0.0.1:{_closed_port()}/v1"}


@pytest.fixture(scope="module")
def gateway(upstream):
    gw = Gateway(GatewayConfig(upstreams=Upstreams.from_env(_env(upstream)), port=0, max_tokens=10**9))
    asyncio.run(gw.start())
    yield gw
    asyncio.run(gw.stop())


@pytest.fixture
def trial(gateway, tmp_path):
    def register(**budgets) -> TrialRoute:
        trial_id = f"task__{uuid.uuid4().hex[:8]}"
        return gateway.register_trial(trial_id, tmp_path / trial_id / "trajectory" / "llm_trajectory.jsonl", **budgets)
    return register


def call(route: TrialRoute, api: str, *, stream: bool = False, model: str | None = None,
         headers: dict[str, str] | None = None) -> httpx.Response:
    """One model call the way the agent's SDK makes it, through the gateway."""
    env = route.agent_env()
    body: dict = {"messages": [{"role": "user", "content": "hi"}], "stream": stream}
    if api == "chat":
        url, auth, body["model"] = env["OPENAI_BASE_URL"] + "/chat/completions", "bearer", model or "gpt-4o"
    elif api == "responses":
        url, auth = env["OPENAI_BASE_URL"] + "/responses", "bearer"
        body = {"model": model or "gpt-4o", "input": "hi", "stream": stream}
    elif api == "messages":
        url, auth, body["model"] = env["ANTHROPIC_BASE_URL"] + "/v1/messages", "x-api-key", model or "claude-sonnet-4-5"
    else:
        action = "streamGenerateContent?alt=sse" if stream else "generateContent"
        url = f"{env['GOOGLE_GEMINI_BASE_URL']}/v1beta/models/{model or 'gemini-2.5-flash'}:{action}"
        auth, body = "x-goog-api-key", {"contents": [{"parts": [{"text": "hi"}]}]}
    sent = {"authorization": f"Bearer {route.key}"} if auth == "bearer" else {auth: route.key}
    return HTTP.post(url, json=body, headers={**sent, **(headers or {})})


def records(gateway: Gateway, route: TrialRoute) -> list[dict]:
    gateway.unregister_trial(route.trial_id)
    return [json.loads(line) for line in route.llm_trajectory_path.read_text().splitlines()]


def reply_text(api: str, response: httpx.Response, stream: bool) -> str:
    """The text the agent got, from the wire format of each API."""
    if stream:
        return "".join(fake.PIECES) if all(p in response.text for p in fake.PIECES) else response.text
    data = response.json()
    if api == "chat":
        return data["choices"][0]["message"]["content"]
    if api == "responses":
        return data["output"][0]["content"][0]["text"]
    if api == "messages":
        return data["content"][0]["text"]
    return data["candidates"][0]["content"]["parts"][0]["text"]


def recorded_text(api: str, body: dict) -> str:
    if api == "chat":
        return body["choices"][0]["message"]["content"]
    if api == "responses":
        return body["output"][0]["content"][0]["text"]
    if api == "messages":
        return body["content"][0]["text"]
    return body["candidates"][0]["content"]["parts"][0]["text"]


EXPECTED_USAGE = {  # what each API's fixed usage means in agent_result fields
    "chat": (fake.INPUT_UNCACHED, fake.OUTPUT, fake.CACHE_READ, 0),
    "responses": (fake.INPUT_UNCACHED, fake.OUTPUT, fake.CACHE_READ, 0),
    "messages": (fake.INPUT_UNCACHED, fake.OUTPUT, fake.CACHE_READ, fake.CACHE_WRITE),
    "gemini": (fake.INPUT_UNCACHED, fake.OUTPUT, fake.CACHE_READ, 0),
}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", ["chat", "responses", "messages", "gemini"])
def test_call_is_forwarded_counted_priced_and_recorded(gateway, upstream, trial, api, stream):
    route = trial()
    response = call(route, api, stream=stream)
    assert response.status_code == 200
    assert reply_text(api, response, stream) == fake.CONTENT
    if stream:
        assert response.headers["content-type"].startswith("text/event-stream")

    seen = upstream.requests[-1]
    assert route.key not in json.dumps(seen)
    assert any(REAL_KEYS[k] in json.dumps(seen["headers"]) for k in REAL_KEYS)

    usage = route.usage()
    n_in, n_out, n_read, n_write = EXPECTED_USAGE[api]
    assert (usage["n_input_tokens"], usage["n_output_tokens"], usage["n_cache_read_tokens"],
            usage["n_cache_creation_tokens"]) == (n_in, n_out, n_read, n_write)
    assert usage["total_tokens"] == n_in + n_out + n_read + n_write
    assert usage["cost_status"] == "priced" and usage["cost_usd"] > 0
    assert usage["usage_source"] == "provider_response"
    assert usage["price_source"].startswith("genai-prices")
    assert (usage["n_requests"], usage["n_failed_requests"], usage["status_counts"]) == (1, 0, {"200": 1})

    [record] = records(gateway, route)
    assert record["response"]["status_code"] == 200
    assert recorded_text(api, record["response"]["body"]) == fake.CONTENT
    assert record["metadata"]["stream"] is stream
    assert record["metadata"]["usage"]["total_tokens"] == usage["total_tokens"]
    assert record["request"]["path"].startswith("/v1")
    assert record["duration_ms"] > 0
    text = route.llm_trajectory_path.read_text()
    assert route.key not in text
    assert not any(secret in text for secret in REAL_KEYS.values())


def test_streamed_chat_gets_usage_requested_and_tool_calls_reassembled(gateway, upstream, trial):
    route = trial()
    response = call(route, "chat", stream=True, model="gpt-4o-tool")
    assert response.status_code == 200
    assert upstream.requests[-1]["body"]["stream_options"] == {"include_usage": True}
    [record] = records(gateway, route)
    message = record["response"]["body"]["choices"][0]["message"]
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == fake.TOOL_ARGS
    assert record["metadata"]["stream_usage_added"] is True
    assert record["request"]["body"].get("stream_options") is None


def test_streamed_anthropic_tool_use_input_is_rebuilt(gateway, trial):
    route = trial()
    assert call(route, "messages", stream=True, model="claude-tool").status_code == 200
    [record] = records(gateway, route)
    assert record["response"]["body"]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": fake.TOOL_NAME, "input": fake.TOOL_ARGS}]


def test_gemini_json_array_stream_and_key_in_query(gateway, upstream, trial):
    route = trial()
    url = f"{route.agent_env()['GOOGLE_GEMINI_BASE_URL']}/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    reply = HTTP.post(url, params={"key": route.key}, json={"contents": []})
    assert reply.status_code == 200 and len(reply.json()) == len(fake.PIECES)
    assert upstream.requests[-1]["query"] == f"key={REAL_KEYS['GEMINI_API_KEY']}"
    assert route.usage()["n_output_tokens"] == fake.OUTPUT
    [record] = records(gateway, route)
    assert record["response"]["body"]["candidates"][0]["content"]["parts"] == [{"text": fake.CONTENT}]
    assert REAL_KEYS["GEMINI_API_KEY"] not in route.llm_trajectory_path.read_text()


@pytest.mark.parametrize("status", [401, 429, 500])
def test_upstream_errors_pass_through_and_are_counted(gateway, trial, status):
    route = trial()
    failed = call(route, "messages", headers={"x-fake-status": str(status)})
    assert failed.status_code == status
    assert failed.json()["error"]["message"] == f"fake upstream error {status}"
    assert call(route, "chat", model=f"fake-error-{status}").status_code == status
    usage = route.usage()
    assert (usage["n_requests"], usage["n_failed_requests"], usage["status_counts"]) == (2, 2, {str(status): 2})
    assert usage["total_tokens"] == 0 and usage["cost_status"] == "unavailable" and usage["cost_usd"] is None
    info = route.api_error_info()
    assert info["dominant_status"] == status and info["failed_requests"] == 2
    assert info["transient"] is (status != 401)
    assert route.suspected_api_error_info(n_tool_calls=0) is None
    assert call(route, "chat").status_code == 200
    assert route.api_error_info() is None
    assert [r["response"]["status_code"] for r in records(gateway, route)] == [status, status, 200]


def test_turn_budget_refuses_the_next_call(gateway, trial):
    route = trial(turn_budget=2)
    assert [call(route, "chat").status_code for _ in range(2)] == [200, 200]
    assert route.budget_exhausted == "turn_budget"
    refused = call(route, "messages")
    assert refused.status_code == 400
    assert refused.json()["error"]["message"].startswith("BenchFlow: this trial's turn budget is spent")
    usage = route.usage()
    assert usage["n_requests"] == 2 and usage["usage_details"]["n_refused_requests"] == 1
    assert records(gateway, route)[-1]["metadata"]["refused"] == "turn_budget"


def test_token_budget_refuses_once_spent(gateway, upstream, trial):
    per_call = fake.INPUT_UNCACHED + fake.CACHE_READ + fake.OUTPUT
    route = trial(token_budget=per_call + 1)
    assert call(route, "chat").status_code == 200
    assert route.budget_exhausted is None
    assert call(route, "chat", stream=True).status_code == 200
    assert route.budget_exhausted == "token_budget"
    n_upstream = len(upstream.requests)
    refused = call(route, "chat")
    assert refused.status_code == 400 and "token budget" in refused.json()["error"]["message"]
    assert len(upstream.requests) == n_upstream


def test_agent_hanging_up_mid_stream_still_counts_and_records_the_call(gateway, trial):
    route = trial()
    url = route.agent_env()["OPENAI_BASE_URL"] + "/chat/completions"
    headers = {"authorization": f"Bearer {route.key}", "x-fake-chunk-delay-ms": "300"}
    with HTTP.stream("POST", url, json={"model": "gpt-4o", "stream": True}, headers=headers) as reply:
        first = next(reply.iter_raw())
    assert b"chat.completion.chunk" in first
    for _ in range(200):  # the gateway notices the hang-up when its next write fails
        if route.usage()["n_requests"]:
            break
        time.sleep(0.01)
    assert route.usage()["n_requests"] == 1
    [record] = records(gateway, route)
    assert record["metadata"]["stream"] is True
    assert CONTENT_START in json.dumps(record["response"]["body"])


def test_thirty_two_trials_at_once_keep_their_own_counts(gateway, trial):
    routes = [trial() for _ in range(32)]

    async def agent(client: httpx.AsyncClient, route: TrialRoute, n_calls: int) -> None:
        for i in range(n_calls):
            reply = await client.post(route.agent_env()["OPENAI_BASE_URL"] + "/chat/completions",
                                      headers={"authorization": f"Bearer {route.key}"},
                                      json={"model": "gpt-4o", "stream": i % 2 == 1})
            assert reply.status_code == 200

    async def job() -> None:
        async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=32)) as client:
            await asyncio.gather(*(agent(client, route, 1 + i % 3) for i, route in enumerate(routes)))

    asyncio.run(job())
    per_call = fake.INPUT_UNCACHED + fake.CACHE_READ + fake.OUTPUT
    for i, route in enumerate(routes):
        assert route.usage()["n_requests"] == 1 + i % 3
        assert route.usage()["total_tokens"] == per_call * (1 + i % 3)
        assert len(records(gateway, route)) == 1 + i % 3


def test_unreachable_upstream_is_a_counted_502(gateway, trial):
    route = trial()
    reply = HTTP.post(route.agent_env()["VLLM_BASE_URL"] + "/chat/completions",
                      headers={"authorization": f"Bearer {route.key}"}, json={"model": "Qwen/Qwen3-8B"})
    assert reply.status_code == 502
    assert "provider unreachable" in reply.json()["error"]["message"]
    assert route.usage()["status_counts"] == {"502": 1}
    assert route.api_error_info()["subcategory"] == "unavailable"
    assert records(gateway, route)[0]["metadata"]["gateway_error"].startswith("BenchFlow gateway")


def test_unknown_model_is_unpriced(gateway, trial):
    route = trial()
    assert call(route, "chat", model="fake-model-nobody-prices").status_code == 200
    usage = route.usage()
    assert usage["total_tokens"] > 0
    assert (usage["cost_usd"], usage["cost_status"]) == (None, "unpriced")
    assert usage["usage_details"]["unpriced_models"] == ["fake-model-nobody-prices"]
    assert records(gateway, route)[0]["metadata"]["cost_usd"] is None


def test_only_the_trials_own_key_opens_its_route(gateway, upstream, trial):
    route, other = trial(), trial()
    n_upstream = len(upstream.requests)
    url = route.agent_env()["OPENAI_BASE_URL"] + "/chat/completions"
    for key in (other.key, REAL_KEYS["OPENAI_API_KEY"], "x"):
        reply = HTTP.post(url, json={"model": "gpt-4o"}, headers={"authorization": f"Bearer {key}"})
        assert reply.status_code == 401
    both = {"authorization": f"Bearer {other.key}", "x-api-key": route.key}
    assert HTTP.post(url.replace("/openai/v1/chat/completions", "/anthropic/v1/messages"), headers=both,
                     json={"model": "claude-sonnet-4-5"}).status_code == 200
    n_upstream += 1
    gateway.unregister_trial(route.trial_id)
    assert call(route, "chat").status_code == 401
    assert len(upstream.requests) == n_upstream
    assert route.usage()["n_requests"] == 1


def test_job_spent_sums_every_trial(gateway, trial):
    before = gateway.job_spent()
    first, second = trial(), trial()
    call(first, "chat")
    call(second, "messages")
    after = gateway.job_spent()
    assert after["tokens"] - before["tokens"] == first.usage()["total_tokens"] + second.usage()["total_tokens"]
    expected_cost = first.usage()["cost_usd"] + second.usage()["cost_usd"]
    assert after["cost_usd"] - before["cost_usd"] == pytest.approx(expected_cost)
    assert gateway.job_cap_reached is None


async def test_unix_socket_on_the_callers_loop_with_a_job_cap(upstream, tmp_path):
    sock = tmp_path / "gw.sock"
    listening_before = own_tcp_listeners()
    gw = Gateway(GatewayConfig(upstreams=Upstreams.from_env(_env(upstream)), unix_socket=sock,
                               in_thread=False, max_tokens=1))
    await gw.start()
    assert own_tcp_listeners() == listening_before  # a job's gateway opens no TCP port
    try:
        route = gw.register_trial("uds-trial", tmp_path / "llm.jsonl")
        transport = httpx.AsyncHTTPTransport(uds=str(sock))
        async with httpx.AsyncClient(transport=transport) as client:
            reply = await client.post(route.agent_env()["ANTHROPIC_BASE_URL"] + "/v1/messages",
                                      headers={"x-api-key": route.key},
                                      json={"model": "claude-sonnet-4-5", "messages": []})
        assert reply.status_code == 200 and reply.json()["content"][0]["text"] == fake.CONTENT
        assert gw.base_url == "http://localhost"
        assert gw.job_cap_reached == "max_tokens"
        assert gw.job_spent()["tokens"] == route.usage()["total_tokens"]
    finally:
        await gw.stop()
        await gw.stop()
    assert not sock.exists()
