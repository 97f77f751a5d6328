"""The gateway's provider-side HTTP client against the fake model server on loopback."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

from benchflow.gateway.upstream_client import UpstreamClient, UpstreamError
from tests.doubles import fake_model_server as fake

BODY = json.dumps({"model": "gpt-4o", "messages": []}).encode()
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def upstream():
    with fake.FakeModelServer(keep_alive_sec=0.2) as server:
        yield server


async def test_keeps_the_connection_and_survives_the_server_closing_it(upstream):
    client = UpstreamClient()
    url = upstream.url + "/v1/chat/completions"
    for pause in (0, 0, 0.6):  # the server drops idle connections after 0.2 s
        await asyncio.sleep(pause)
        resp = await client.send("POST", url, JSON, BODY)
        body = json.loads(await resp.read())
        resp.close()
        assert resp.status_code == 200 and body["choices"][0]["message"]["content"] == fake.CONTENT
        assert sum(len(idle) for idle in client._idle.values()) == 1
    await client.aclose()


async def test_streams_and_drops_a_connection_left_half_read(upstream):
    client = UpstreamClient()
    url = upstream.url + "/v1/chat/completions"
    stream = json.dumps({"model": "gpt-4o", "stream": True}).encode()
    resp = await client.send("POST", url, {**JSON, "x-fake-chunk-delay-ms": "50"}, stream)
    assert resp.header("content-type").startswith("text/event-stream")
    chunks = resp.iter_bytes()
    assert b"chat.completion.chunk" in await chunks.__anext__()
    await chunks.aclose()
    resp.close()
    assert not any(client._idle.values())
    again = await client.send("POST", url, JSON, BODY)
    assert again.status_code == 200 and json.loads(await again.read())["model"] == "gpt-4o"
    again.close()
    await client.aclose()


async def test_error_status_is_a_response_not_an_exception(upstream):
    client = UpstreamClient()
    resp = await client.send("POST", upstream.url + "/v1/messages", {**JSON, "x-fake-status": "429"}, BODY)
    assert resp.status_code == 429
    assert json.loads(await resp.read())["error"]["type"] == "rate_limit_error"
    resp.close()
    await client.aclose()


async def test_unreachable_and_slow_providers_raise_upstream_error(upstream):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    client = UpstreamClient(connect_timeout=2, read_timeout=0.1)
    with pytest.raises(UpstreamError, match="unreachable"):
        await client.send("POST", f"http://127.0.0.1:{closed}/v1/chat/completions", JSON, BODY)
    stream = json.dumps({"model": "gpt-4o", "stream": True}).encode()
    resp = await client.send("POST", upstream.url + "/v1/chat/completions",
                             {**JSON, "x-fake-chunk-delay-ms": "500"}, stream)
    with pytest.raises(UpstreamError, match="cut"):
        await resp.read()
    resp.close()
    await client.aclose()


async def test_a_request_h11_cannot_write_is_an_upstream_error(upstream):
    client = UpstreamClient()
    with pytest.raises(UpstreamError, match="not sendable"):
        await client.send("POST", upstream.url + "/v1/chat/completions", {"x-bad": "line\nbreak"}, BODY)
    await client.aclose()
