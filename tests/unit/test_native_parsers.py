"""The native-harness parsers on recorded event streams (claude stream-json, codex exec --json)."""

from __future__ import annotations

from benchflow.agents.native_claude import ClaudeStreamParser
from benchflow.agents.native_codex import CodexExecParser
from benchflow.agents.trajectory import TrajectoryMerger
from benchflow.categories import classify_error

SID = "8f2c4d1e-0000-4000-8000-000000000001"

# Shaped as `claude -p --output-format stream-json --verbose` prints them (one object per line).
CLAUDE_STREAM = [
    {"type": "system", "subtype": "init", "session_id": SID, "cwd": "/app", "model": "claude-haiku-4-5",
     "tools": ["Bash", "Read", "Write"], "permissionMode": "bypassPermissions"},
    {"type": "assistant", "session_id": SID, "parent_tool_use_id": None, "message": {
        "id": "msg_1", "role": "assistant", "content": [{"type": "thinking", "thinking": "Let me ", "signature": "s"}]}},
    {"type": "assistant", "session_id": SID, "parent_tool_use_id": None, "message": {
        "id": "msg_1", "role": "assistant", "content": [
            {"type": "thinking", "thinking": "look.", "signature": "s"},
            {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "ls", "description": "List"}}]}},
    {"type": "user", "session_id": SID, "parent_tool_use_id": None, "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": "main.py\n", "is_error": False}]}},
    {"type": "assistant", "session_id": SID, "parent_tool_use_id": None, "message": {
        "id": "msg_2", "role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_02", "name": "Read", "input": {"file_path": "/app/missing.py"}}]}},
    {"type": "user", "session_id": SID, "parent_tool_use_id": None, "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_02", "is_error": True,
         "content": [{"type": "text", "text": "File does not exist."}]}]}},
    {"type": "stream_event", "session_id": SID, "event": {"type": "content_block_delta"}},
    {"type": "assistant", "session_id": SID, "parent_tool_use_id": None, "message": {
        "id": "msg_3", "role": "assistant", "content": [{"type": "text", "text": "Done."}]}},
    {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 5120, "num_turns": 3,
     "result": "Done.", "session_id": SID, "total_cost_usd": 0.0123,
     "usage": {"input_tokens": 1200, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 4000,
               "output_tokens": 250, "server_tool_use": {"web_search_requests": 0}}},
]

# Shaped as `codex exec --json` prints them.
CODEX_STREAM = [
    {"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "**Scanning the repo**"}},
    {"type": "item.started", "item": {"id": "item_1", "type": "command_execution", "command": "bash -lc ls",
                                      "aggregated_output": "", "exit_code": None, "status": "in_progress"}},
    {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution", "command": "bash -lc ls",
                                        "aggregated_output": "main.py\n", "exit_code": 0, "status": "completed"}},
    {"type": "item.started", "item": {"id": "item_2", "type": "command_execution", "command": "bash -lc pytest",
                                      "aggregated_output": "", "exit_code": None, "status": "in_progress"}},
    {"type": "item.completed", "item": {"id": "item_2", "type": "command_execution", "command": "bash -lc pytest",
                                        "aggregated_output": "1 failed\n", "exit_code": 1, "status": "completed"}},
    {"type": "item.completed", "item": {"id": "item_3", "type": "file_change", "status": "completed",
                                        "changes": [{"path": "/app/main.py", "kind": "update"}]}},
    {"type": "item.started", "item": {"id": "item_4", "type": "todo_list", "items": [{"text": "fix", "completed": False}]}},
    {"type": "item.completed", "item": {"id": "item_5", "type": "agent_message", "text": "Fixed main.py."}},
    {"type": "turn.completed", "usage": {"input_tokens": 24763, "cached_input_tokens": 24448, "output_tokens": 122}},
]


def merged(parser, stream):
    merger = TrajectoryMerger()
    for line in stream:
        for event in parser.feed(line):
            merger.add(event)
    return merger


def test_claude_stream_becomes_acp_shaped_events() -> None:
    parser = ClaudeStreamParser()
    merger = merged(parser, CLAUDE_STREAM)
    kinds = [e["type"] for e in merger.events]
    assert kinds == ["agent_thought", "tool_call", "tool_call", "agent_message"]
    assert merger.events[0]["text"] == "Let me look."  # consecutive thinking blocks merged
    bash, read = merger.events[1], merger.events[2]
    assert (bash["tool_call_id"], bash["kind"], bash["title"], bash["status"]) == ("toolu_01", "execute", "ls", "completed")
    assert bash["content"] == [{"type": "content", "content": {"type": "text", "text": "main.py\n"}}]
    assert (read["kind"], read["status"], read["title"]) == ("read", "failed", "Read /app/missing.py")
    assert merger.n_tool_calls == 2 and merger.n_thought_chunks == 2 and merger.n_message_chunks == 1
    assert parser.session_id == SID and parser.finished and parser.error is None
    assert parser.usage == {"input_tokens": 1200, "output_tokens": 250, "cached_read_tokens": 4000,
                            "cached_write_tokens": 300, "total_tokens": 5750}
    assert parser.cost_usd == 0.0123


def test_claude_tool_in_flight_is_pending_until_its_result() -> None:
    parser = ClaudeStreamParser()
    merger = merged(parser, CLAUDE_STREAM[:3])
    assert merger.pending_tool_call_ids() == ["toolu_01"]
    assert not parser.finished


def test_claude_error_result_reads_as_its_category() -> None:
    parser = ClaudeStreamParser()
    parser.feed({"type": "result", "subtype": "success", "is_error": True, "session_id": SID,
                 "result": "Invalid API key · Please run /login", "usage": {"input_tokens": 0, "output_tokens": 0}})
    assert parser.finished and "Invalid API key" in parser.error
    assert classify_error(f"Agent CLI error during prompt 1 (claude exit code 1): {parser.error}") == "provider_auth"
    limit = ClaudeStreamParser()
    limit.feed({"type": "result", "subtype": "error_during_execution", "is_error": True,
                "errors": ["API Error: 429 rate limit exceeded"]})
    assert classify_error(f"Agent CLI error during prompt 1: {limit.error}") == "provider_rate_limit"


def test_codex_stream_becomes_acp_shaped_events() -> None:
    parser = CodexExecParser(prompt_no=1)
    merger = merged(parser, CODEX_STREAM)
    assert [e["type"] for e in merger.events] == ["agent_thought", "tool_call", "tool_call", "tool_call", "agent_message"]
    ls, pytest_run, edit = merger.events[1:4]
    assert (ls["tool_call_id"], ls["kind"], ls["title"], ls["status"]) == ("p1:item_1", "execute", "bash -lc ls", "completed")
    assert ls["content"][0]["content"]["text"] == "main.py\n" and ls["raw_output"] == {"exit_code": 0}
    assert pytest_run["status"] == "failed"  # a non-zero exit code fails the call
    assert (edit["kind"], edit["title"], edit["status"]) == ("edit", "Edit /app/main.py", "completed")
    assert parser.session_id == "0199a213-81c0-7800-8aa1-bbab2a035a53" and parser.finished and parser.error is None
    assert parser.usage == {"input_tokens": 24763, "cached_read_tokens": 24448, "output_tokens": 122,
                            "total_tokens": 24885}


def test_codex_item_ids_stay_unique_across_prompts() -> None:
    merger = TrajectoryMerger()
    for number in (1, 2):
        parser = CodexExecParser(prompt_no=number)
        for line in CODEX_STREAM[3:5]:
            for event in parser.feed(line):
                merger.add(event)
    assert [e["tool_call_id"] for e in merger.events] == ["p1:item_1", "p2:item_1"]


def test_codex_failures_are_reported() -> None:
    failed = CodexExecParser()
    failed.feed({"type": "error", "message": "stream disconnected"})
    failed.feed({"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized: bad key"}})
    failed.done()
    assert failed.finished and classify_error(f"Agent CLI error during prompt 1: {failed.error}") == "provider_auth"
    broken = CodexExecParser()
    broken.feed({"type": "error", "message": "unexpected status 503 Service Unavailable"})
    broken.done()
    assert not broken.finished and broken.error == "unexpected status 503 Service Unavailable"
    recovered = CodexExecParser()
    for line in ({"type": "error", "message": "Reconnecting... 1/5"}, {"type": "turn.completed", "usage": {}}):
        recovered.feed(line)
    recovered.done()
    assert recovered.error is None


def test_legacy_codex_item_type_spelling() -> None:
    parser = CodexExecParser()
    events = parser.feed({"type": "item.completed", "item": {"id": "itm_0", "item_type": "assistant_message",
                                                             "text": "hello"}})
    assert events == [{"type": "agent_message", "text": "hello"}]


# Recorded from the real CLIs (@openai/codex 0.171.0, @anthropic-ai/claude-code 2.1.332) answering through
# tests/doubles/fake_model_server.py; long fields trimmed. Codex's usage is the thread's running total:
# this is the second prompt of a resumed thread (15 input tokens per call).
REAL_CODEX_RESUMED = [
    {"type": "thread.started", "thread_id": "01a22826-9779-7973-8e2b-a07d1c0eaf2d"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "error",
                                        "message": "Model metadata for `gpt-5-codex` not found."}},
    {"type": "turn.started"},
    {"type": "error", "message": "Reconnecting... 2/5 (unexpected status 405 Method Not Allowed)"},
    {"type": "item.completed", "item": {"id": "item_1", "type": "error",
                                        "message": "Falling back from WebSockets to HTTPS transport."}},
    {"type": "item.completed", "item": {"id": "item_2", "type": "agent_message", "text": "Hello from the fake model."}},
    {"type": "turn.completed", "usage": {"input_tokens": 30, "cached_input_tokens": 10, "cache_write_input_tokens": 0,
                                         "output_tokens": 14, "reasoning_output_tokens": 0}},
]
REAL_CLAUDE = [
    {"type": "system", "subtype": "init", "cwd": "/app", "session_id": "224cd02e-2fa5-4290-bbf6-90bbaba20bde",
     "tools": ["Task", "Bash", "Edit", "Read", "Write"], "mcp_servers": [], "model": "claude-haiku-4-5",
     "permissionMode": "bypassPermissions"},
    {"type": "assistant", "message": {"id": "msg_fake", "type": "message", "role": "assistant",
                                      "model": "claude-haiku-4-5",
                                      "content": [{"type": "text", "text": "Hello from the fake model."}],
                                      "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 1}},
     "parent_tool_use_id": None, "session_id": "224cd02e-2fa5-4290-bbf6-90bbaba20bde",
     "uuid": "335769c5-08e8-4f51-8138-84a8ad650f2e"},
    {"type": "result", "subtype": "success", "is_error": False, "duration_api_ms": 53, "num_turns": 1,
     "result": "Hello from the fake model.", "stop_reason": "end_turn",
     "session_id": "224cd02e-2fa5-4290-bbf6-90bbaba20bde", "total_cost_usd": 0.00004925,
     "usage": {"input_tokens": 10, "cache_creation_input_tokens": 3, "cache_read_input_tokens": 5, "output_tokens": 7,
               "output_tokens_details": {"thinking_tokens": 0}, "service_tier": "standard"},
     "modelUsage": {"claude-haiku-4-5": {"inputTokens": 10, "outputTokens": 7}}},
]


def test_real_codex_stream_warnings_are_not_failures_and_usage_is_the_thread_total() -> None:
    parser = CodexExecParser(prompt_no=2)
    merger = merged(parser, REAL_CODEX_RESUMED)
    parser.done()
    assert [e["type"] for e in merger.events] == ["agent_message"]
    assert parser.error is None and parser.finished and CodexExecParser.usage_is_cumulative
    assert parser.usage == {"input_tokens": 30, "cached_read_tokens": 10, "cached_write_tokens": 0,
                            "output_tokens": 14, "thought_tokens": 0, "total_tokens": 44}


def test_real_claude_stream() -> None:
    parser = ClaudeStreamParser()
    merger = merged(parser, REAL_CLAUDE)
    assert merger.events == [{"type": "agent_message", "text": "Hello from the fake model."}]
    assert parser.error is None and not ClaudeStreamParser.usage_is_cumulative
    assert parser.usage == {"input_tokens": 10, "output_tokens": 7, "cached_read_tokens": 5,
                            "cached_write_tokens": 3, "total_tokens": 25}
    assert parser.session_id == "224cd02e-2fa5-4290-bbf6-90bbaba20bde" and parser.cost_usd == 0.00004925


def test_claude_max_turns_is_a_normal_stop_as_over_acp() -> None:
    parser = ClaudeStreamParser()
    parser.feed({"type": "result", "subtype": "error_max_turns", "is_error": True, "result": None,
                 "errors": ["Reached maximum number of turns (2)"], "stop_reason": "tool_use",
                 "session_id": SID, "usage": {"input_tokens": 20, "output_tokens": 14}})
    assert parser.finished and parser.error is None and parser.usage["input_tokens"] == 20
