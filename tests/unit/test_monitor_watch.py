"""How ``bench monitor watch`` follows a file (whole lines only, appended ones as they come, rotation), and a
watch whose scoring breaks."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from benchflow.monitor import watch as watch_module
from benchflow.monitor.score import MonitorOptions
from benchflow.monitor.watch import file_lines, watch


async def _until(predicate, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def test_a_followed_file_gives_each_line_once_it_ends(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"first\nhal")
    notes: list[str] = []

    async def main() -> list[bytes]:
        got: list[bytes] = []

        async def collect() -> None:
            async for line in file_lines(path, True, notes.append):
                got.append(line)

        task = asyncio.create_task(collect())
        await _until(lambda: got == [b"first"], "the first line")
        with path.open("ab") as handle:
            handle.write(b"f a line\nthird\n")
        await _until(lambda: len(got) == 3, "the appended lines")
        rotated = tmp_path / "events.jsonl.1"
        os.rename(path, rotated)
        path.write_bytes(b"new file\n")
        await _until(lambda: len(got) == 4, "the replacing file's line")
        task.cancel()
        return got

    assert asyncio.run(main()) == [b"first", b"half a line", b"third", b"new file"]
    assert notes == [f"{path} was replaced; reading the new file from its start"]


def test_without_following_the_last_line_counts_without_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"one\ntwo")

    async def main() -> list[bytes]:
        return [line async for line in file_lines(path, False, print)]

    assert asyncio.run(main()) == [b"one", b"two"]


def test_a_scoring_task_that_breaks_ends_the_watch_with_its_error_and_records_why(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    async def broken(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(watch_module, "score_one", broken)
    stream = tmp_path / "events.jsonl"
    stream.write_text("".join(json.dumps(line) + "\n" for line in [
        {"rollout": "open", "event": {"type": "user_message", "text": "still going"}},
        {"rollout": "done", "event": {"type": "agent_message", "text": "hi"}, "end": True}]))
    notes: list[str] = []
    with pytest.raises(OSError, match="No space left on device"):
        watch(str(stream), MonitorOptions(jobs_dir=tmp_path / "m", run_name="r"), follow=False,
              env={"ANTHROPIC_API_KEY": "sk-ant-test-0123456789abcdef"}, on_verdict=lambda _doc: None,
              on_note=notes.append)
    run = tmp_path / "m" / "r"
    record = json.loads((run / "monitor-run.json").read_text())
    assert record["stopped_by"] == "failed" and record["counts"]["unfinished"] == 1
    assert json.loads((run / "rollouts" / "open" / "verdict.json").read_text())["status"] == "unfinished"
    assert (run / "rollouts" / "done" / "acp_trajectory.jsonl").is_file()
    assert notes[-1].startswith("failed: 1 rollout(s)")
