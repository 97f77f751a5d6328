"""Merging streamed ACP events into acp_trajectory.jsonl (contracts §3.5)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from benchflow.agents.trajectory import AcpTrajectoryFile, TrajectoryMerger


def test_consecutive_chunks_merge_per_type_and_prompts_stay_apart():
    m = TrajectoryMerger()
    for event in [{"type": "user_message", "text": "a"}, {"type": "user_message", "text": "b"},
                  {"type": "agent_thought", "text": "t1"}, {"type": "agent_thought", "text": "t2"},
                  {"type": "agent_message", "text": "m1"}, {"type": "agent_message", "text": "m2"},
                  {"type": "agent_thought", "text": "t3"}]:
        m.add(event)
    assert m.events == [{"type": "user_message", "text": "a"}, {"type": "user_message", "text": "b"},
                        {"type": "agent_thought", "text": "t1t2"}, {"type": "agent_message", "text": "m1m2"},
                        {"type": "agent_thought", "text": "t3"}]
    assert (m.n_message_chunks, m.n_thought_chunks) == (2, 3)


def test_tool_call_is_updated_in_place_and_breaks_a_chunk_run():
    m = TrajectoryMerger()
    m.add({"type": "agent_message", "text": "x"})
    m.add({"type": "tool_call", "tool_call_id": "tc_1", "title": "echo", "kind": "execute", "status": "pending"})
    m.add({"type": "agent_message", "text": "y"})
    assert m.pending_tool_call_ids() == ["tc_1"]
    m.add({"type": "tool_call_update", "tool_call_id": "tc_1", "status": "completed", "content": [{"t": 1}]})
    assert m.events[1] == {"type": "tool_call", "tool_call_id": "tc_1", "title": "echo", "kind": "execute",
                           "status": "completed", "content": [{"t": 1}]}
    assert [e["type"] for e in m.events] == ["agent_message", "tool_call", "agent_message"]
    assert m.n_tool_calls == 1 and m.pending_tool_call_ids() == []


def test_update_without_start_becomes_a_call():
    m = TrajectoryMerger()
    m.add({"type": "tool_call_update", "tool_call_id": "z", "status": "failed"})
    assert m.events == [{"type": "tool_call", "tool_call_id": "z", "status": "failed"}]


@given(st.lists(st.tuples(st.sampled_from(["agent_message", "agent_thought"]), st.text(max_size=5)), max_size=30))
def test_merging_keeps_all_text_in_order(chunks):
    m = TrajectoryMerger()
    for kind, text in chunks:
        m.add({"type": kind, "text": text})
    assert "".join(e["text"] for e in m.events) == "".join(t for _, t in chunks)
    assert all(a["type"] != b["type"] for a, b in zip(m.events, m.events[1:]))


def test_file_streams_raw_lines_then_rewrites_merged_and_redacted(tmp_path):
    path = tmp_path / "trajectory" / "acp_trajectory.jsonl"
    sink = AcpTrajectoryFile(path, secret_values=["hunter2-secret"])
    sink.emit({"type": "agent_message", "text": "pass hunter2-secret "})
    sink.emit({"type": "agent_message", "text": "key sk-ant-abcdefghijklmnop"})
    live = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(live) == 2  # on disk before close: a crash keeps it
    sink.close()
    merged = [json.loads(line) for line in path.read_text().splitlines()]
    assert merged == [{"type": "agent_message", "text": "pass *** key ***"}]
    sink.close()  # idempotent
    assert len(path.read_text().splitlines()) == 1


def test_nothing_emitted_writes_no_file(tmp_path):
    sink = AcpTrajectoryFile(tmp_path / "t.jsonl")
    sink.close()
    assert not (tmp_path / "t.jsonl").exists()


def test_trajectory_file_is_readable_by_its_owner_only(tmp_path):
    import stat

    from benchflow.agents.trajectory import AcpTrajectoryFile

    sink = AcpTrajectoryFile(tmp_path / "trajectory" / "acp_trajectory.jsonl")
    sink.emit({"type": "user_message", "text": "hi"})
    assert stat.S_IMODE(sink.path.stat().st_mode) == 0o600  # while it is live
    sink.close()
    assert stat.S_IMODE(sink.path.stat().st_mode) == 0o600  # after the merged rewrite
