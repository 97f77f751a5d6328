"""``bench train convert --format branch-tree`` on a real ``bench branch`` run (the oracle on Docker):
a row per child with the advantage among its siblings, pairs with their margin, and rows that
``bench train validate`` traces back to each child's observation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS

pytestmark = pytest.mark.docker

CHILDREN = ["--child", "label=good,prompt=write done", "--child", "label=bad,prompt=write nope, really",
            "--child", "label=more,parent=good,prompt=append !", "--child", "label=same,parent=good,prompt=append "]


def test_branch_tree_rows_and_pairs_from_a_real_branch_run(bench, tmp_path: Path) -> None:
    done = bench("branch", "--tasks-dir", str(FIXTURE_TASKS / "branch-prompts"), "--agent", "oracle",
                 "--sandbox", "docker", "--jobs-dir", str(tmp_path / "jobs"), *CHILDREN)
    assert done.returncode == 0, done.stderr + done.stdout
    [job] = list((tmp_path / "jobs").glob("branch-*"))
    out, pairs = tmp_path / "rows.jsonl", tmp_path / "pairs.jsonl"
    done = bench("train", "convert", str(job), "-o", str(out), "--format", "branch-tree")
    assert done.returncode == 0 and "skipped: oracle_child 4" in done.stdout, done.stdout + done.stderr
    done = bench("train", "convert", str(job), "-o", str(out), "--format", "branch-tree", "--include-oracle",
                 "--pairs", str(pairs), "--pairs-any-request")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # rewards of the task's verifier; advantage = reward - mean of the scored siblings, by hand
    assert [(r["fork"], r["node"], r["reward"], r["advantage"]) for r in rows] == [
        ("fork-0", "good", 1.0, 1.0 - 0.0), ("fork-0", "bad", 0.0, 0.0 - 1.0),
        ("fork-good", "more", 0.5, 0.5 - 1.0), ("fork-good", "same", 1.0, 1.0 - 0.5)]
    good = rows[0]
    assert good["prefix"] == [] and good["continuation"] == [
        {"role": "user", "content": "write done"},
        {"role": "assistant", "content": "oracle/solve.sh exited with code 0"}]
    assert good["source_path"].endswith("/branches/fork-0/children/good") and good["agent"] == "oracle"
    assert [(p["fork"], p["chosen_node"], p["rejected_node"], p["margin"])
            for p in map(json.loads, pairs.read_text().splitlines())] == [
        ("fork-0", "good", "bad", 1.0), ("fork-good", "same", "more", 0.5)]
    done = bench("train", "validate", str(out), "--format", "branch-tree", "--source-jobs", str(job),
                 "--expected-rows", "4")
    assert done.returncode == 0 and "OK: 4 row(s), 0 bad" in done.stdout, done.stdout + done.stderr
