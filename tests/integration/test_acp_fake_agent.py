"""The fake ACP agent (test double) asks its model through OPENAI_BASE_URL / ANTHROPIC_BASE_URL.

Runs the double as a host subprocess driven by the SDK client and the runtime's
client callbacks, against a loopback upstream (no Docker needed), so tests of
the gateway can rely on what it sends and how it reports upstream errors.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from acp import RequestError, spawn_agent_process, text_block

from benchflow.agents.acp_client import BenchClient
from benchflow.agents.watchdog import Activity
from benchflow.categories import classify_error

FAKE = Path(__file__).resolve().parents[1] / "doubles" / "fake_acp_agent.py"


class Upstream(BaseHTTPRequestHandler):
    seen: list[tuple[str, dict, dict]] = []
    status = 200

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        Upstream.seen.append((self.path, dict(self.headers), body))
        if Upstream.status != 200:
            payload = {"error": {"message": "invalid x-api-key"}}
        elif self.path.endswith("/v1/messages"):
            payload = {"content": [{"type": "text", "text": "anthropic says hi"}], "usage": {"input_tokens": 3}}
        else:
            payload = {"choices": [{"message": {"content": "openai says hi"}}], "usage": {"prompt_tokens": 3}}
        data = json.dumps(payload).encode()
        self.send_response(Upstream.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def upstream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Upstream.seen, Upstream.status = [], 200
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


async def drive(api: str, base: str, tmp_path: Path) -> list[dict]:
    events: list[dict] = []
    env = {"PATH": "/usr/bin:/bin", "OPENAI_BASE_URL": f"{base}/v1", "OPENAI_API_KEY": "sk-trial-key-1",
           "ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": "sk-ant-trial-key-1",
           "FAKE_ACP_SCRIPT": json.dumps({"prompts": [[{"op": "ask_model", "api": api, "prompt": "hello?"}]]})}
    client = BenchClient(events.append, Activity())
    async with spawn_agent_process(client, sys.executable, str(FAKE), env=env, cwd=tmp_path) as (conn, _):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
    return events


@pytest.mark.parametrize(("api", "path", "auth", "answer"), [
    ("openai", "/v1/chat/completions", ("authorization", "Bearer sk-trial-key-1"), "openai says hi"),
    ("anthropic", "/v1/messages", ("x-api-key", "sk-ant-trial-key-1"), "anthropic says hi"),
])
async def test_fake_agent_asks_the_model_it_is_pointed_at(upstream, tmp_path, api, path, auth, answer):
    events = await drive(api, upstream, tmp_path)
    assert events == [{"type": "agent_message", "text": answer}]
    seen_path, headers, body = Upstream.seen[0]
    assert seen_path == path
    assert {k.lower(): v for k, v in headers.items()}[auth[0]] == auth[1]
    assert body["messages"][0]["content"] == "hello?"


async def test_upstream_error_fails_the_prompt_as_a_categorised_acp_error(upstream, tmp_path):
    Upstream.status = 401
    with pytest.raises(RequestError) as err:
        await drive("openai", upstream, tmp_path)
    message = f"ACP error {err.value.code}: {err.value} {json.dumps(err.value.data)}"
    assert classify_error(message) == "provider_auth"
