"""``bench monitor watch`` as a user runs it: a file the test appends to while the watch follows it, standard
input until it closes, and Ctrl-C with verdicts in flight. The judge is the scripted Anthropic double."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.doubles.scripted_anthropic import ScriptedAnthropic
from tests.fixtures.train_jobs import conversation
from tests.waiting import wait_until

KEY = "sk-ant-monitor-test-0123456789abcdef"
RUBRIC = {"criteria": [{"name": "greeted", "description": 'The agent said "hello"'}]}


@pytest.fixture
def anthropic():
    with ScriptedAnthropic() as server:
        yield server


def _line(**fields) -> str:
    return json.dumps(fields) + "\n"


def _event(rollout: str, kind: str, text: str, **more) -> str:
    return _line(rollout=rollout, event={"type": kind, "text": text}, **more)


class Watching:
    """A ``bench monitor watch`` process whose stdout and stderr lines are collected as they come."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "monitor", "watch", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "NO_COLOR": "1", **env})
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [threading.Thread(target=self._read, args=(stream, into), daemon=True)
                         for stream, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    def stop(self, sig: int = signal.SIGINT) -> int:
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=60)
        for reader in self._readers:
            reader.join(timeout=10)
        return code


def _rubric(tmp_path: Path) -> Path:
    path = tmp_path / "rubric.json"
    path.write_text(json.dumps(RUBRIC))
    return path


def _verdict(run: Path, rollout: str) -> dict:
    return json.loads((run / "rollouts" / rollout / "verdict.json").read_text())


def test_watch_follows_a_file_being_appended_and_stops_cleanly_on_ctrl_c(tmp_path: Path, anthropic) -> None:
    stream = tmp_path / "events.jsonl"
    stream.write_text(_event("r1", "user_message", "Say hello"))
    run = tmp_path / "m" / "live"
    watching = Watching([str(stream), "--rubric", str(_rubric(tmp_path)), "--jobs-dir", str(tmp_path / "m"),
                         "--run-name", "live"], {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anthropic.url})
    try:
        with stream.open("a") as log:
            log.write(_event("r2", "user_message", "Say nothing", metadata={"region": "eu-1"}))
            log.write(_event("r1", "agent_message", "hello there", end=True))
        wait_until(lambda: watching.out, timeout=60, what="the first verdict line")
        assert watching.out == ["r1: reward 1.00 ok"]
        assert _verdict(run, "r1")["status"] == "scored"
        with stream.open("a") as log:
            log.write("this is not json\n")
            log.write(_event("r2", "agent_message", "ok", end=True))
            log.write(_event("r3", "user_message", "Started, never ended"))
        wait_until(lambda: len(watching.out) == 2, timeout=60, what="the second verdict line")
        assert watching.out[1] == "r2: reward 0.00 ALERT (reward 0.00 < 0.5; greeted 0.00 < 0.5)"
        assert "watch: line 4: not JSON; skipped" in watching.err
        wait_until(lambda: (run / "monitor-run.json").is_file(), what="the run record")
    finally:
        code = watching.stop(signal.SIGINT)
    assert code == 130, watching.err
    assert watching.out[2] == "r3: unfinished, not scored"
    r2 = _verdict(run, "r2")
    assert r2["alert"] is True and r2["metadata"] == {"region": "eu-1"} and r2["source"]["stream"] == str(stream)
    r3 = _verdict(run, "r3")
    assert r3["status"] == "unfinished" and r3["rewards"] is None
    assert [json.loads(line)["type"] for line in (run / "rollouts" / "r3" / "acp_trajectory.jsonl").open()] == \
        ["user_message"]
    record = json.loads((run / "monitor-run.json").read_text())
    assert record["stopped_by"] == "interrupted"
    assert record["counts"] == {"rollouts": 3, "scored": 2, "alerts": 1, "error": 0, "verifier_error": 0,
                                "unfinished": 1, "interrupted": 0, "skipped_lines": 1}
    assert [c.kind for c in anthropic.calls] == ["verdict", "verdict"]
    assert not any(KEY in p.read_text() for p in run.rglob("*") if p.is_file())


def test_watch_reads_standard_input_until_it_closes(bench, tmp_path: Path, anthropic) -> None:
    calls = conversation("hello", 2)
    text = "".join([
        _event("a", "user_message", "Say hello"),
        *[_line(rollout="b", exchange=call) for call in calls],
        _line(rollout="b", end=True),
        _event("a", "agent_message", "hello!", end=True),
        _line(rollout="c", metadata={"tag": "x"}, end=True),
        _event("d", "user_message", "left open"),
    ])
    done = bench("monitor", "watch", "-", "--rubric", str(_rubric(tmp_path)), "--jobs-dir", str(tmp_path / "m"),
                 "--json", input=text, env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anthropic.url})
    assert done.returncode == 0, done.stderr
    verdicts = {v["rollout"]: v for v in map(json.loads, done.stdout.splitlines())}
    assert set(verdicts) == {"a", "b", "c", "d"}
    assert verdicts["a"]["rewards"] == {"reward": 1.0} and verdicts["a"]["source"]["kind"] == "acp"
    assert verdicts["b"]["source"]["kind"] == "llm" and verdicts["b"]["status"] == "scored"
    assert verdicts["c"]["status"] == "error" and verdicts["c"]["error_category"] == "unreadable_trajectory"
    assert verdicts["d"]["status"] == "unfinished"
    [run] = (tmp_path / "m").iterdir()
    assert (run / "rollouts" / "b" / "llm_trajectory.jsonl").is_file()
    assert json.loads((run / "monitor-run.json").read_text())["stopped_by"] == "end_of_input"
    assert done.stderr.strip().splitlines()[-1].startswith("watch: end of input: 4 rollout(s), 2 scored (0 alert)")


def test_a_file_read_without_following_ends_at_its_last_line(bench, tmp_path: Path, anthropic) -> None:
    stream = tmp_path / "events.jsonl"
    stream.write_text(_event("a", "user_message", "Say hello") + _event("a", "agent_message", "hello").rstrip("\n")
                      .replace('}}', '}, "end": true}'))  # the last line has no newline
    done = bench("monitor", "watch", str(stream), "--no-follow", "--rubric", str(_rubric(tmp_path)),
                 "--jobs-dir", str(tmp_path / "m"), env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anthropic.url})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["a: reward 1.00 ok"]


def test_ctrl_c_while_a_rollout_is_judged_records_it_as_interrupted(tmp_path: Path, anthropic) -> None:
    stream = tmp_path / "events.jsonl"
    stream.write_text("")
    run = tmp_path / "m" / "held"
    anthropic.hold.clear()  # the provider does not answer
    watching = Watching([str(stream), "--rubric", str(_rubric(tmp_path)), "--jobs-dir", str(tmp_path / "m"),
                         "--run-name", "held"], {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anthropic.url})
    try:
        with stream.open("a") as log:
            log.write(_event("slow", "agent_message", "hello", end=True))
        wait_until(lambda: anthropic.waiting == 1, timeout=60, what="the judge's call to reach the provider")
        assert (run / "rollouts" / "slow" / "acp_trajectory.jsonl").is_file()  # kept before it is judged
        assert not (run / "rollouts" / "slow" / "verdict.json").exists()
    finally:
        code = watching.stop(signal.SIGINT)
        anthropic.hold.set()
    assert code == 130, watching.err
    assert watching.out == ["slow: interrupted, not scored"]
    assert _verdict(run, "slow")["status"] == "interrupted"
    record = json.loads((run / "monitor-run.json").read_text())
    assert record["stopped_by"] == "interrupted" and record["counts"]["interrupted"] == 1


def test_sigterm_stops_the_watch_like_ctrl_c(tmp_path: Path, anthropic) -> None:
    stream = tmp_path / "events.jsonl"
    # a rollout that ends after the open one's line: once it is kept, the open one's line has been read
    stream.write_text(_event("open", "user_message", "still going") + _event("read", "agent_message", "hi", end=True))
    run = tmp_path / "m" / "term"
    watching = Watching([str(stream), "--rubric", str(_rubric(tmp_path)), "--jobs-dir", str(tmp_path / "m"),
                         "--run-name", "term"], {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anthropic.url})
    try:
        wait_until(lambda: (run / "rollouts" / "read" / "acp_trajectory.jsonl").is_file(), timeout=60,
                   what="the watch to read the stream's lines")
    finally:
        code = watching.stop(signal.SIGTERM)
    assert code == 130, watching.err
    assert _verdict(run, "open")["status"] == "unfinished"
    assert watching.err[-1] == "error: bench monitor watch: stopped by SIGTERM; every verdict made is written"
