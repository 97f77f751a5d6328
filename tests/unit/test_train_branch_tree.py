"""``bench train convert --format branch-tree`` on a branched trial: golden rows, advantages, pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchflow.errors import UserError
from benchflow.train.convert import ConvertOptions, RowCountMismatch, convert
from benchflow.train.validate import ValidateOptions, validate
from tests.fixtures.branch_trial import make_branched_trial

ANSWERS = {"good": "fixed it", "bad": "gave up", "more": "fixed more", "same": "kept it"}


def _agent_trial(tmp_path: Path) -> Path:
    """The fixture's branched trial, run by a model agent: each child asked, then answered.
    ``more`` and ``same`` (fork-good) are asked the same thing; ``good`` and ``bad`` are not."""
    job = tmp_path / "jobs" / "j1"
    trial = make_branched_trial(job)
    tree = json.loads((trial / "tree.json").read_text())
    tree.update(agent="claude-agent-acp", model="m1")
    (trial / "tree.json").write_text(json.dumps(tree))
    for node in tree["nodes"]:
        ask = "continue" if node["fork"] == "fork-good" else f"prompt of {node['id']}"
        lines = [{"type": "user_message", "text": ask}, {"type": "agent_message", "text": ANSWERS[node["id"]]}]
        (trial / node["path"] / "trajectory" / "acp_trajectory.jsonl").write_text(
            "".join(json.dumps(line) + "\n" for line in lines))
    return job


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rows_per_child_with_advantage_and_shared_prefix(tmp_path: Path) -> None:
    job = _agent_trial(tmp_path)
    out, pairs = tmp_path / "rows.jsonl", tmp_path / "pairs.jsonl"
    manifest = convert(ConvertOptions(source=job.parent, out=out, format="branch-tree", pairs=pairs))
    rows = {row["node"]: row for row in _rows(out)}
    # advantage by hand: reward minus the mean of the scored siblings
    assert {n: (r["fork"], r["reward"], r["advantage"]) for n, r in rows.items()} == {
        "good": ("fork-0", 1.0, 1.0), "bad": ("fork-0", 0.0, -1.0),
        "more": ("fork-good", 0.5, -0.5), "same": ("fork-good", 1.0, 0.5)}
    assert rows["good"]["prefix"] == [] and rows["good"]["continuation"] == [
        {"role": "user", "content": "prompt of good"}, {"role": "assistant", "content": "fixed it"}]
    assert rows["same"]["prefix"] == [{"role": "user", "content": "continue"}]
    assert rows["same"]["continuation"] == [{"role": "assistant", "content": "kept it"}]
    assert rows["more"]["parent_node"] == "good" and rows["good"]["parent_node"] is None
    assert rows["bad"]["source_path"] == "j1/t__ab12cd34/branches/fork-0/children/bad"
    assert rows["good"]["task_name"] == "t" and rows["good"]["model"] == "m1"
    assert manifest["rows_written"] == 4 and manifest["rollouts_seen"] == 4
    # pairs: only siblings asked the same thing (good/bad were not)
    assert _rows(pairs) == [{
        "task_name": "t", "agent": "claude-agent-acp", "model": "m1", "trial": "j1/t__ab12cd34",
        "fork": "fork-good", "prefix": [{"role": "user", "content": "continue"}],
        "chosen": [{"role": "assistant", "content": "kept it"}],
        "rejected": [{"role": "assistant", "content": "fixed more"}],
        "chosen_node": "same", "rejected_node": "more", "chosen_reward": 1.0, "rejected_reward": 0.5,
        "margin": 0.5}]
    report = validate(ValidateOptions(path=out, format="branch-tree", source_jobs=job.parent, expected_rows=4))
    assert report["ok"], report


def test_pairs_any_request_and_min_reward(tmp_path: Path) -> None:
    job = _agent_trial(tmp_path)
    out, pairs = tmp_path / "rows.jsonl", tmp_path / "pairs.jsonl"
    convert(ConvertOptions(source=job, out=out, format="branch-tree", pairs=pairs, pairs_any_request=True))
    assert [(p["chosen_node"], p["rejected_node"], p["margin"]) for p in _rows(pairs)] == [
        ("good", "bad", 1.0), ("same", "more", 0.5)]
    manifest = convert(ConvertOptions(source=job, out=out, format="branch-tree", min_reward=1.0))
    # advantages stay those among all siblings, not only the rows kept
    assert [(r["node"], r["advantage"]) for r in _rows(out)] == [("good", 1.0), ("same", 0.5)]
    assert manifest["skipped_below_min_reward"] == 2


def test_unscored_sibling_has_null_advantage_and_is_left_out_of_the_mean(tmp_path: Path) -> None:
    job = _agent_trial(tmp_path)
    obs_path = job / "t__ab12cd34" / "branches" / "fork-good" / "children" / "more" / "observation.json"
    obs = json.loads(obs_path.read_text())
    obs.update(reward=None, status="errored", verifier_error="verifier timed out")
    obs_path.write_text(json.dumps(obs))
    out = tmp_path / "rows.jsonl"
    manifest = convert(ConvertOptions(source=job, out=out, format="branch-tree"))
    rows = {r["node"]: r for r in _rows(out)}
    assert set(rows) == {"good", "bad", "same"} and manifest["skipped_terminal_error"] == 1
    assert rows["same"]["advantage"] is None


def test_oracle_children_skipped_unless_asked(tmp_path: Path) -> None:
    job = tmp_path / "jobs" / "j1"
    make_branched_trial(job)  # agent oracle; its children's only message is a user prompt
    out = tmp_path / "rows.jsonl"
    manifest = convert(ConvertOptions(source=job, out=out, format="branch-tree"))
    assert manifest["rows_written"] == 0 and manifest["skipped_oracle_child"] == 4
    manifest = convert(ConvertOptions(source=job, out=out, format="branch-tree", include_oracle=True))
    assert manifest["skipped_no_answer"] == 4 and "skipped_oracle_child" not in manifest


def test_expected_rows_mismatch_writes_nothing(tmp_path: Path) -> None:
    job = _agent_trial(tmp_path)
    out, pairs = tmp_path / "rows.jsonl", tmp_path / "pairs.jsonl"
    with pytest.raises(RowCountMismatch):
        convert(ConvertOptions(source=job, out=out, format="branch-tree", pairs=pairs, expected_rows=3))
    assert not out.exists() and not pairs.exists()
    with pytest.raises(UserError, match="--pairs"):
        convert(ConvertOptions(source=job, out=out, format="branch-tree", pairs=out))


def test_validate_names_a_bad_branch_row(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"fork": "fork-0", "node": "a", "prefix": [], "reward": 1.0, "advantage": "x",
                                "continuation": [{"role": "assistant", "content": "hi"}]}) + "\n"
                    + json.dumps({"fork": "fork-0", "node": "b", "prefix": [], "continuation": []}) + "\n")
    report = validate(ValidateOptions(path=path, format="branch-tree"))
    assert [p["row"] for p in report["problems"]] == [1, 2] and not report["ok"]
    assert "advantage" in report["problems"][0]["problem"]
