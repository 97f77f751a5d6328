"""One long-lived gateway serving two runs (the warm daemon's): each run's calls use its own provider
key, count in its own job budget, capture tokens only where it asked, and its trial keys are
refused once it closes. A real gateway on its unix socket against the fake model server (a double
of the providers' HTTP APIs); no Docker."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from benchflow.gateway import Upstreams
from benchflow.gateway.scope import SharedGateway
from tests.doubles import fake_model_server as fake

KEY_A = "sk-proj-RUNAkey" + "a" * 30
KEY_B = "sk-proj-RUNBkey" + "b" * 30
TOKENS_PER_CALL = fake.INPUT_UNCACHED + fake.CACHE_READ + fake.OUTPUT


@pytest.fixture
def shared():
    gateway = asyncio.run(SharedGateway.start("gateway.sock"))
    yield gateway
    asyncio.run(gateway.stop())


def chat(shared: SharedGateway, route) -> httpx.Response:
    """One Chat Completions call as the trial's agent makes it, over the gateway's socket."""
    url = route.agent_env()["OPENAI_BASE_URL"] + "/chat/completions"
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(shared.gateway.unix_socket)), timeout=10) as client:
        return client.post(url, json={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
                           headers={"authorization": f"Bearer {route.key}"})


def test_each_run_has_its_own_keys_meter_and_routes(shared: SharedGateway, tmp_path: Path) -> None:
    with fake.FakeModelServer() as upstream:
        base = upstream.url + "/v1"
        run_a = shared.scope(Upstreams.from_env({"OPENAI_API_KEY": KEY_A, "OPENAI_BASE_URL": base}),
                             max_cost_usd=None, max_tokens=1, capture_tokens=True)
        run_b = shared.scope(Upstreams.from_env({"OPENAI_API_KEY": KEY_B, "OPENAI_BASE_URL": base}),
                             max_cost_usd=None, max_tokens=None, capture_tokens=False)
        a = run_a.register_trial("a__1", tmp_path / "a.jsonl")
        b = run_b.register_trial("b__1", tmp_path / "b.jsonl")
        assert chat(shared, a).status_code == 200
        assert chat(shared, b).status_code == 200
        sent_a, sent_b = upstream.requests
        assert (sent_a["headers"]["authorization"], sent_b["headers"]["authorization"]) == (f"Bearer {KEY_A}",
                                                                                          f"Bearer {KEY_B}")
        assert sent_a["body"].get("return_token_ids") is True and "return_token_ids" not in sent_b["body"]
        assert run_a.job_spent()["tokens"] == run_b.job_spent()["tokens"] == TOKENS_PER_CALL  # never summed
        assert (run_a.job_cap_reached, run_b.job_cap_reached) == ("max_tokens", None)
        assert run_b.route("a__1") is None  # a run sees only its own trials

        run_a.close()
        assert chat(shared, a).status_code == 401  # the closed run's key reaches nothing
        assert chat(shared, b).status_code == 200  # the other run is untouched
        assert len(upstream.requests) == 3
    assert shared.runs == 2 and shared.serving
    assert KEY_A not in (tmp_path / "a.jsonl").read_text() and KEY_B not in (tmp_path / "b.jsonl").read_text()
