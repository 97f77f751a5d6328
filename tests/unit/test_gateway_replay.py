"""The gateway's replay (``bench eval continue``): reading a recording, serving it in order, divergence, SSE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchflow.gateway.replay import CUT_POINT, DIVERGED, RecordingError, Replay, chat_events, read_recording
from benchflow.gateway.streams import StreamAssembler
from benchflow.gateway.usage import CHAT, MESSAGES


def completion(call_id: str, command: str | None = None, text: str | None = None) -> dict:
    message: dict = {"role": "assistant", "content": text}
    if command is not None:
        message["tool_calls"] = [{"id": call_id, "type": "function",
                                  "function": {"name": "terminal", "arguments": json.dumps({"command": command})}}]
    return {"id": f"chatcmpl-{call_id}", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if command else "stop"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50}}


def line(n_messages: int, body: dict, *, path: str = "/v1/chat/completions", status: int = 200, **metadata) -> str:
    request = {"timestamp": "t", "method": "POST", "path": path, "headers": {},
               "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "x"}] * n_messages}}
    return json.dumps({"schema_version": 1, "request": request,
                       "response": {"timestamp": "t", "status_code": status, "headers": {}, "body": body},
                       "duration_ms": 1.0, "metadata": {"provider": "openai", "call_type": "chat", **metadata}})


def recording(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "llm_trajectory.jsonl"
    path.write_text("".join(text + "\n" for text in lines))
    return path


def test_only_model_calls_are_replayed_in_order(tmp_path):
    models = json.dumps({"request": {"method": "GET", "path": "/v1/models", "body": None},
                         "response": {"status_code": 200, "body": {"data": []}}, "metadata": {}})
    refused = line(3, {"error": {"message": "budget"}}, status=400, refused="turn_budget")
    calls = read_recording(recording(tmp_path, line(2, completion("a", "ls")), models, "",
                                     line(4, completion("b", text="done")), refused))
    assert [(c.index, c.line, c.n_messages, c.provider) for c in calls] == [(1, 1, 2, "openai"), (2, 4, 4, "openai")]
    assert calls[0].tokens == 50


@pytest.mark.parametrize(("text", "why"), [
    ("not json", "line 1: not a recorded exchange"),
    (line(2, completion("a", "ls"), path="/v1/messages"), "line 1: a /v1/messages call; replay answers OpenAI Chat"),
    (line(2, "plain text"), "line 1: the response body is not a JSON object"),
])
def test_a_recording_that_cannot_be_replayed_is_refused_naming_the_line(tmp_path, text, why):
    with pytest.raises(RecordingError, match=why):
        read_recording(recording(tmp_path, text))


def test_a_recording_without_model_calls_is_refused(tmp_path):
    with pytest.raises(RecordingError, match="no model call recorded"):
        read_recording(recording(tmp_path, line(2, {"error": {}}, status=400, refused="not_a_model_api")))


def test_replay_serves_the_recording_then_lets_live_calls_through(tmp_path):
    calls = read_recording(recording(tmp_path, line(2, completion("a", "ls")), line(4, completion("b", "pwd"))))
    replay = Replay(calls, live=True)
    first = replay.answer(CHAT, {"messages": [{}] * 2})
    second = replay.answer(CHAT, {"messages": [{}] * 4})
    assert (first.call.index, second.call.index) == (1, 2)
    assert first.body["choices"][0]["message"]["tool_calls"][0]["id"] == "a"
    assert replay.stop_reason is None and not replay.cut_point_reached
    assert replay.answer(CHAT, {"messages": [{}] * 6}) is None  # the cut point: live from here
    assert replay.answer(CHAT, {"messages": [{}] * 8}) is None
    assert replay.stop_reason is None
    assert replay.document() == {"recorded_calls": 2, "replayed_calls": 2, "live_calls": 2,
                                 "cut_point_reached": True, "divergences": []}
    assert replay.replayed_tokens == 100


def test_replay_only_refuses_past_the_cut_point_and_asks_the_agent_to_stop(tmp_path):
    replay = Replay(read_recording(recording(tmp_path, line(2, completion("a", "ls")))), live=False)
    assert replay.answer(CHAT, {"messages": [{}] * 2}).status == 200
    assert replay.stop_reason is None
    refused = replay.answer(CHAT, {"messages": [{}] * 4})
    assert refused.status == 503 and refused.call is None and refused.hold_sec == 30.0
    assert "--replay-only" in refused.body["error"]["message"]
    assert replay.stop_reason == CUT_POINT
    assert replay.document()["live_calls"] == 0


def test_a_divergence_is_noted_and_the_recording_still_served_unless_strict(tmp_path):
    calls = read_recording(recording(tmp_path, line(2, completion("a", "ls")), line(4, completion("b", "pwd"))))
    replay = Replay(calls, live=True)
    answer = replay.answer(CHAT, {"messages": [{}] * 3})
    assert answer.status == 200 and answer.divergence is not None
    assert replay.stop_reason is None
    assert replay.document()["divergences"] == [{"call": 1, "line": 1, "sent_messages": 3, "recorded_messages": 2}]

    strict = Replay(calls, live=True, strict=True)
    assert strict.answer(CHAT, {"messages": [{}] * 2}).status == 200
    refused = strict.answer(CHAT, {"messages": [{}] * 5})
    assert refused.status == 409 and refused.call is None
    assert strict.fatal == ("replay diverged at recorded call 2 (llm_trajectory.jsonl line 2): the agent sent 5 "
                            "messages, the recording 4")
    assert strict.stop_reason == DIVERGED
    assert strict.answer(CHAT, {"messages": [{}] * 6}).status == 409  # nothing more reaches a model


def test_a_call_of_another_api_ends_the_replay_even_when_not_strict(tmp_path):
    replay = Replay(read_recording(recording(tmp_path, line(2, completion("a", "ls")))), live=True)
    assert replay.answer(MESSAGES, {"messages": [{}] * 2}).status == 409
    assert replay.stop_reason == DIVERGED and "made a messages call" in replay.fatal


@pytest.mark.parametrize("body", [completion("call_1", "printf hi > out.txt"), completion("c", text="All done.")])
def test_a_replayed_completion_streams_as_chunks_that_reassemble_to_it(body):
    assembler = StreamAssembler(CHAT)
    for event in chat_events(body, include_usage=True):
        assembler.feed(event)
    rebuilt = assembler.body()
    assert rebuilt["choices"][0]["message"] == {k: v for k, v in body["choices"][0]["message"].items()
                                                if v is not None}
    assert rebuilt["choices"][0]["finish_reason"] == body["choices"][0]["finish_reason"]
    assert rebuilt["usage"] == body["usage"] and rebuilt["id"] == body["id"]
    events = chat_events(body, include_usage=False)
    assert events[-1] == b"data: [DONE]\n\n"
    assert not any(b'"usage"' in event for event in events)
