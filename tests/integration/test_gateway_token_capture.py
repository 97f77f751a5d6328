"""Token capture: with capture on, the gateway asks an OpenAI-compatible upstream for token ids and
logprobs (the agent's request does not ask) and records them as the exchange's ``token_capture``."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from benchflow.gateway import Gateway, GatewayConfig, Upstreams
from benchflow.train.tokens import grade
from tests.doubles import fake_model_server as fake

KEY = "sk-proj-REALopenaiKEYdoNotLeak0123456789"
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}]


@pytest.fixture(scope="module")
def upstream():
    with fake.FakeModelServer() as server:
        yield server


def _gateway(upstream, capture: bool) -> Gateway:
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": upstream.url + "/v1"}
    gw = Gateway(GatewayConfig(upstreams=Upstreams.from_env(env), port=0, capture_tokens=capture))
    asyncio.run(gw.start())
    return gw


def _call(gw: Gateway, tmp_path, stream: bool) -> tuple[httpx.Response, list[dict]]:
    route = gw.register_trial("task__abcd1234", tmp_path / "llm_trajectory.jsonl")
    env = route.agent_env()
    reply = httpx.post(env["OPENAI_BASE_URL"] + "/chat/completions", timeout=10,
                       headers={"authorization": f"Bearer {route.key}"},
                       json={"model": "gpt-4o", "messages": MESSAGES, "stream": stream})
    gw.unregister_trial(route.trial_id)
    return reply, [json.loads(line) for line in route.llm_trajectory_path.read_text().splitlines()]


@pytest.mark.parametrize("stream", [False, True])
def test_capture_asks_the_upstream_and_records_ids_and_logprobs(upstream, tmp_path, stream):
    gw = _gateway(upstream, capture=True)
    try:
        reply, lines = _call(gw, tmp_path, stream)
    finally:
        asyncio.run(gw.stop())
    assert reply.status_code == 200
    sent = upstream.requests[-1]["body"]
    assert sent["return_token_ids"] is True and sent["logprobs"] is True
    assert sent["return_tokens_as_token_ids"] is True
    (line,) = lines
    assert line["request"]["body"]["messages"] == MESSAGES
    assert "return_token_ids" not in line["request"]["body"]  # the agent's own request is what is recorded
    assert line["metadata"]["token_capture_requested"] is True
    assert line["token_capture"] == {"prompt_token_ids": fake.prompt_ids(MESSAGES),
                                     "sampled_token_ids": fake.SAMPLED_IDS, "logprobs": fake.LOGPROBS,
                                     "source": "response"}
    report = grade(tmp_path / "llm_trajectory.jsonl")
    assert report["training_grade"] and report["calls"] == 1


def test_without_capture_nothing_is_asked_or_recorded(upstream, tmp_path):
    gw = _gateway(upstream, capture=False)
    try:
        reply, lines = _call(gw, tmp_path, stream=False)
    finally:
        asyncio.run(gw.stop())
    assert reply.status_code == 200
    sent = upstream.requests[-1]["body"]
    assert "return_token_ids" not in sent and "logprobs" not in sent
    assert "token_capture" not in lines[0]
    assert grade(tmp_path / "llm_trajectory.jsonl")["training_grade"] is False


def test_capture_default_follows_the_environment(monkeypatch, upstream):
    monkeypatch.setenv("BENCHFLOW_CAPTURE_TOKENS", "1")
    assert GatewayConfig(upstreams=Upstreams.from_env({})).capture_tokens is True
    monkeypatch.delenv("BENCHFLOW_CAPTURE_TOKENS")
    assert GatewayConfig(upstreams=Upstreams.from_env({})).capture_tokens is False
