"""``bench eval inspect`` of a branched trial prints its forks and children after the trial's own summary."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.branch_trial import make_branched_trial

from tests.conftest import run_bench


def test_inspect_of_a_branched_trial_shows_its_tree(tmp_path: Path) -> None:
    trial = make_branched_trial(tmp_path / "job")
    done = run_bench("eval", "inspect", str(trial))
    assert done.returncode == 0, done.stderr
    summary, tree = done.stdout.split("\nBranches\n")
    assert "reward: 1.000" in summary
    lines = tree.splitlines()
    assert lines[1].startswith("  fork-0 (after prompt 1, complete)")
    assert lines[4].startswith("  fork-good (after child good, complete)")
    assert lines[5].split()[:6] == ["more", "failed", "reward", "0.5", "advantage", "-0.5"]
    plain = run_bench("eval", "inspect", str(trial), "--json")
    assert plain.returncode == 0 and "Branches" not in plain.stdout
    doc = json.loads(plain.stdout)
    branches = doc["branches"]
    assert branches["kind"] == "benchflow.branch-view"
    assert [f["fork"] for f in branches["forks"]] == ["fork-0", "fork-good"]
    more = next(c for f in branches["forks"] for c in f["children"] if c["reward"] == 0.5)
    assert more["advantage"] == -0.5 and more["status"] == "failed"


def test_branches_say_why_a_trial_ran_no_child(tmp_path: Path) -> None:
    trial = make_branched_trial(tmp_path / "job")
    result = json.loads((trial / "result.json").read_text())
    result.update(error="Agent a install failed: the install exited with code 60:\ncurl: (60) SSL certificate problem",
                  error_category="install_failure")
    (trial / "result.json").write_text(json.dumps(result))
    done = run_bench("eval", "branches", str(tmp_path / "job"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == ("  error (install_failure): Agent a install failed: the install exited with code 60: "
                        "curl: (60) SSL certificate problem")
    assert lines[2].startswith("  fork-0 ")
    [view] = json.loads(run_bench("eval", "branches", str(tmp_path / "job"), "--json").stdout)
    assert view["error_category"] == "install_failure" and view["error"].startswith("Agent a install failed")


def test_branches_of_a_trial_without_error_have_no_error_line(tmp_path: Path) -> None:
    make_branched_trial(tmp_path / "job")
    done = run_bench("eval", "branches", str(tmp_path / "job"))
    assert "error" not in done.stdout
    [view] = json.loads(run_bench("eval", "branches", str(tmp_path / "job"), "--json").stdout)
    assert view["error"] is None


def test_a_child_line_names_its_error_category(tmp_path: Path) -> None:
    trial = make_branched_trial(tmp_path / "job")
    path = trial / "branches/fork-0/children/bad/observation.json"
    obs = json.loads(path.read_text())
    obs.update(error="ACP error -32000 during session/prompt: Authentication required", error_category="acp_error")
    path.write_text(json.dumps(obs))
    done = run_bench("eval", "branches", str(trial))
    [bad] = [line for line in done.stdout.splitlines() if line.split()[0] == "bad"]
    assert bad.split()[1:4] == [obs["status"], "[acp_error]", "reward"]
    [view] = json.loads(run_bench("eval", "branches", str(trial), "--json").stdout)
    [child] = [c for f in view["forks"] for c in f["children"] if c["node"] == "bad"]
    assert child["error_category"] == "acp_error" and child["error"].endswith("Authentication required")


def test_branches_of_a_folder_of_jobs_show_every_branched_trial(tmp_path: Path) -> None:
    make_branched_trial(tmp_path / "jobs" / "branch-a")
    make_branched_trial(tmp_path / "jobs" / "branch-b")
    (tmp_path / "jobs" / "plain-job").mkdir()
    done = run_bench("eval", "branches", str(tmp_path / "jobs"), "--json")
    assert done.returncode == 0, done.stderr
    assert [Path(v["trial_dir"]).parent.name for v in json.loads(done.stdout)] == ["branch-a", "branch-b"]
    empty = run_bench("eval", "branches", str(tmp_path / "jobs" / "plain-job"))
    assert empty.returncode == 2 and "no branched trial here" in empty.stderr
