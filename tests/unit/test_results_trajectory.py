"""iter_trajectory pages through a trajectory without loading it whole."""

from __future__ import annotations

import os

from fixtures.jobgen import TrialSpec, write_trial

import benchflow as bf
from benchflow.results.trajectory import read_all


def test_pages_and_total(tmp_path):
    events = [{"type": "agent_message", "text": f"m{i}"} for i in range(25)]
    trial = write_trial(tmp_path / "job", TrialSpec("t", 1.0, acp_events=events))
    path = trial / "trajectory" / "acp_trajectory.jsonl"
    path.write_text(path.read_text() + "\n{broken\n")
    page, total = bf.iter_trajectory(trial, offset=10, limit=5)
    assert total == 26 and [e["text"] for e in page] == ["m10", "m11", "m12", "m13", "m14"]
    tail, _ = bf.iter_trajectory(trial, offset=24, limit=10)
    assert tail[0]["text"] == "m24" and tail[1]["type"] == "unparsed" and tail[1]["line"] == 27
    assert bf.iter_trajectory(trial, kind="llm") == ([], 0)
    assert bf.iter_trajectory(path, offset=0, limit=1)[0][0]["text"] == "m0"
    assert len(read_all(trial)) == 26


def test_load_job_does_not_open_trajectories(tmp_path, monkeypatch):
    trial = write_trial(tmp_path / "job", TrialSpec("t", 1.0, acp_events=[{"type": "user_message", "text": "x"}]))
    opened: list[str] = []
    import builtins

    real_open = builtins.open

    def spy(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    real_os_open = os.open

    def os_spy(file, *args, **kwargs):  # records are opened without following links (os.open + O_NOFOLLOW)
        opened.append(str(file))
        return real_os_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(os, "open", os_spy)
    bf.load_job(trial.parent)
    assert opened and not any("/trajectory/" in p for p in opened)
