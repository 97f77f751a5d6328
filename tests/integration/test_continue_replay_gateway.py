"""The replay through the real gateway, driving the OpenHands stand-in, all on loopback (no Docker needed).

The stand-in (``tests/doubles/fake_openhands.py``) runs OpenHands' loop against the scripted OpenAI
server (``tests/doubles/scripted_openai.py``) through a gateway route. Its two-call conversation (a
``terminal`` call, then a final answer) is recorded, cut after the first call as a timed-out trial's
recording is, and replayed to a fresh stand-in in a fresh home and workspace: the first call must be
answered from the recording (the provider never sees it again), the work redone, the stand-in's
persisted OpenHands conversation rebuilt event for event, and only the second call sent live.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp import RequestError, spawn_agent_process, text_block

from benchflow.agents.acp_client import BenchClient
from benchflow.agents.watchdog import Activity
from benchflow.gateway import Gateway, GatewayConfig, Upstreams
from benchflow.gateway.replay import CUT_POINT, DIVERGED, Replay, read_recording
from tests.doubles.scripted_common import Work
from tests.doubles.scripted_openai import ScriptedOpenAI

FAKE = Path(__file__).resolve().parents[1] / "doubles" / "fake_openhands.py"
UPSTREAM_KEY = "sk-proj-REALopenaiKEYdoNotLeak0123456789"
WORK = Work(command="printf 'hello from the replay' > out.txt")


@pytest.fixture(scope="module")
def provider():
    with ScriptedOpenAI(WORK) as server:
        yield server


@pytest.fixture
def gateway(provider):
    upstreams = Upstreams.from_env({"OPENAI_API_KEY": UPSTREAM_KEY, "OPENAI_BASE_URL": provider.url + "/v1"})
    gw = Gateway(GatewayConfig(upstreams=upstreams, port=0))
    asyncio.run(gw.start())
    yield gw
    asyncio.run(gw.stop())


def run_stand_in(gateway: Gateway, route, root: Path, *, stream: bool) -> list[dict]:
    """One prompt to a fresh stand-in (own HOME and workspace under ``root``); its ACP events."""
    home, cwd = root / "home", root / "work"
    home.mkdir(parents=True)
    cwd.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LLM_BASE_URL": route.base_url("openai", gateway.base_url),
           "LLM_API_KEY": route.key, "LLM_MODEL": "openai/gpt-4o-mini", "FAKE_OPENHANDS_STREAM": "1" if stream else ""}
    events: list[dict] = []

    async def drive() -> None:
        client = BenchClient(events.append, Activity())
        async with spawn_agent_process(client, sys.executable, str(FAKE), env=env, cwd=cwd) as (conn, _):
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[text_block("Write out.txt.")])

    asyncio.run(drive())
    return events


def conversation(root: Path) -> list[dict]:
    """The stand-in's persisted OpenHands events, in order."""
    [folder] = (root / "home" / ".openhands" / "conversations").iterdir()
    assert (folder / "base_state.json").is_file()
    return [json.loads(p.read_text()) for p in sorted((folder / "events").glob("event-*.json"))]


def shape(events: list[dict]) -> list[tuple]:
    """What must be the same in a rebuilt conversation: kinds, tool call ids, commands, observations."""
    return [(e["kind"], e.get("tool_call_id"), (e.get("action") or {}).get("command"),
             [c["text"] for c in (e.get("observation") or {}).get("content", [])]) for e in events]


def record_original(gateway: Gateway, provider: ScriptedOpenAI, tmp_path: Path, *, stream: bool) -> Path:
    """The stand-in's whole run recorded, then cut after its first call (what a timed-out trial keeps)."""
    route = gateway.register_trial("original", tmp_path / "original.jsonl")
    run_stand_in(gateway, route, tmp_path / "original", stream=stream)
    gateway.unregister_trial("original")
    lines = (tmp_path / "original.jsonl").read_text().splitlines()
    assert len(lines) == 2 and provider.kinds()[-2:] == ["tool_call", "final"]
    cut = tmp_path / "timed-out.jsonl"
    cut.write_text(lines[0] + "\n")
    return cut


@pytest.mark.parametrize("stream", [False, True])
def test_the_recording_is_replayed_then_the_run_goes_on_live(gateway, provider, tmp_path, stream):
    recording = record_original(gateway, provider, tmp_path, stream=stream)
    before = len(provider.calls)
    replay = Replay(read_recording(recording), live=True)
    route = gateway.register_trial("continued", tmp_path / "continued.jsonl", replay=replay)
    events = run_stand_in(gateway, route, tmp_path / "continued", stream=stream)
    gateway.unregister_trial("continued")

    live = provider.calls[before:]
    assert [c.kind for c in live] == ["final"]  # only the call past the recording reached the provider
    assert [m["role"] for m in live[0].body["messages"]] == ["system", "user", "assistant", "tool"]
    assert (tmp_path / "continued" / "work" / "out.txt").read_text() == "hello from the replay"
    rebuilt, original = conversation(tmp_path / "continued"), conversation(tmp_path / "original")
    assert shape(rebuilt[:4]) == shape(original[:4])  # the conversation rebuilt as OpenHands persists it
    assert [e["kind"] for e in rebuilt] == [e["kind"] for e in original]
    assert any(e["type"] == "agent_message" for e in events)
    assert replay.document() == {"recorded_calls": 1, "replayed_calls": 1, "live_calls": 1,
                                 "cut_point_reached": True, "divergences": []}
    lines = [json.loads(text) for text in (tmp_path / "continued.jsonl").read_text().splitlines()]
    assert lines[0]["metadata"]["replayed"] == {"call": 1, "source_line": 1, "diverged": False, "refused": False}
    assert "replayed" not in lines[1]["metadata"] and lines[1]["metadata"]["usage"]["total_tokens"] > 0
    assert lines[0]["response"]["body"] == json.loads(recording.read_text())["response"]["body"]
    assert UPSTREAM_KEY not in (tmp_path / "continued.jsonl").read_text()


def test_replay_only_rebuilds_the_workspace_and_stops_at_the_cut_point(gateway, provider, tmp_path):
    recording = record_original(gateway, provider, tmp_path, stream=False)
    before = len(provider.calls)
    replay = Replay(read_recording(recording), live=False, hold_sec=0)
    route = gateway.register_trial("replayed", tmp_path / "replayed.jsonl", replay=replay)
    with pytest.raises(RequestError) as refused:  # the call past the recording is refused
        run_stand_in(gateway, route, tmp_path / "replayed", stream=False)
    assert refused.value.data["details"].startswith("HTTP 503")
    assert route.stop_reason == CUT_POINT
    gateway.unregister_trial("replayed")
    assert provider.calls[before:] == []
    assert (tmp_path / "replayed" / "work" / "out.txt").read_text() == "hello from the replay"
    assert replay.document()["live_calls"] == 0 and replay.document()["cut_point_reached"]


def test_strict_divergence_refuses_the_first_mismatching_call(gateway, provider, tmp_path):
    recording = record_original(gateway, provider, tmp_path, stream=False)
    exchange = json.loads(recording.read_text())
    exchange["request"]["body"]["messages"].append({"role": "user", "content": "a message the agent never sent"})
    recording.write_text(json.dumps(exchange) + "\n")
    before = len(provider.calls)
    replay = Replay(read_recording(recording), live=True, strict=True, hold_sec=0)
    route = gateway.register_trial("diverged", tmp_path / "diverged.jsonl", replay=replay)
    with pytest.raises(RequestError) as refused:
        run_stand_in(gateway, route, tmp_path / "diverged", stream=False)
    assert refused.value.data["details"].startswith("HTTP 409")
    assert route.stop_reason == DIVERGED
    gateway.unregister_trial("diverged")
    assert replay.fatal == ("replay diverged at recorded call 1 (llm_trajectory.jsonl line 1): the agent sent 2 "
                            "messages, the recording 3")
    assert provider.calls[before:] == [] and not (tmp_path / "diverged" / "work" / "out.txt").exists()
