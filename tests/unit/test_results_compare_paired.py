"""``bench eval compare``: what differs between the sides comes first, then a paired test that says whether B
beats A on the same tasks or the gap is noise; failures that are not the agent's doing count on neither side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import benchflow as bf
from benchflow.results.paired import mcnemar_exact, paired_bootstrap
from tests.conftest import run_bench


@pytest.mark.parametrize(("a_only", "b_only", "p"), [
    (0, 0, 1.0),
    (0, 5, 2 / 32),  # every discordant pair one way: 2 * (1/2)^5
    (1, 9, 2 * (1 + 10) / 1024),
    (3, 3, 1.0),
    (9, 1, 2 * (1 + 10) / 1024),  # symmetric
])
def test_mcnemar_is_the_exact_two_sided_binomial_test_of_the_discordant_tasks(a_only, b_only, p) -> None:
    assert mcnemar_exact(a_only, b_only) == pytest.approx(p)


def test_the_bootstrap_interval_is_the_same_every_time_and_holds_the_mean() -> None:
    deltas = [1.0, 0.0, 0.0, 1.0, -1.0, 0.5, 1.0, 0.0, 1.0, 0.0]
    low, high = paired_bootstrap(deltas)
    assert (low, high) == paired_bootstrap(deltas)
    assert low < sum(deltas) / len(deltas) < high
    assert paired_bootstrap([0.25] * 7) == (0.25, 0.25)


def _job(root: Path, name: str, version: str, solved: set[str], extra: dict[str, dict]) -> Path:
    from fixtures.jobgen import TrialSpec, write_job

    specs = []
    for i in range(12):
        task = f"t{i:02d}"
        spec = dict(reward=1.0 if task in solved else 0.0, config={"agent_version": version})
        spec.update(extra.get(task, {}))
        specs.append(TrialSpec(task, **spec))
    return write_job(root, name, specs)


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    """Only the agent's version differs. B solves t02-t11, A only t00-t01 and t10-t11; on B, t00's sandbox
    never started (not the agent's doing) and t01's agent timed out before any verifier (the agent's)."""
    a = _job(tmp_path, "a", "1.0.0", {"t00", "t01", "t10", "t11"}, {})
    b = _job(tmp_path, "b", "1.1.0", {f"t{i:02d}" for i in range(2, 12)}, {
        "t00": dict(reward=None, error="sandbox creation failed: no room", error_category="sandbox_setup"),
        "t01": dict(reward=None, error="agent timed out after 900s", error_category="timeout")})
    return a, b


def test_the_settings_that_differ_come_first_then_the_paired_test(sides) -> None:
    done = run_bench("eval", "compare", str(sides[0]), str(sides[1]))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("Settings that differ"))
    assert lines[first + 1].strip() == "harness: A claude-agent-acp/acp@1.0.0 | B claude-agent-acp/acp@1.1.0 (12 task(s))"
    tested = next(i for i, line in enumerate(lines) if line.startswith("Paired test over"))
    assert first < tested and not any(line.startswith("Tasks:") for line in lines[:first])
    assert "solved by A only 1, by B only 8" in lines[tested]
    assert "Flipped to B (A failed, B solved): t02, t03, t04, t05, t06, t07, t08, t09" in done.stdout
    assert "Flipped to A (A solved, B failed): t01" in done.stdout
    assert "Left out of both denominators (B, not the agent's doing): 1 trial(s): sandbox_setup" in done.stdout


def test_the_paired_test_s_numbers(sides) -> None:
    t = bf.compare(*sides).paired_test
    assert t["tasks"] == 11  # t00 has no counted trial on B: out of both sides
    assert t["pass_fail"]["solved_by_a_only"] == 1 and t["pass_fail"]["solved_by_b_only"] == 8
    assert t["pass_fail"]["p_value"] == pytest.approx(mcnemar_exact(1, 8))
    assert t["pass_fail"]["p_value"] < 0.05
    # t01 counts as 0 on B (the agent's own timeout), so its delta is -1
    assert t["reward"]["mean_delta"] == pytest.approx((8 - 1) / 11)
    low, high = t["reward"]["ci95"]
    assert 0 < low < (8 - 1) / 11 < high
    assert t["not_the_agent"]["b"] == [{"task": "t00", "trial": t["not_the_agent"]["b"][0]["trial"],
                                        "category": "sandbox_setup"}]
    assert t["not_the_agent"]["a"] == []


def test_json_carries_the_diff_the_shares_and_the_test(sides) -> None:
    done = run_bench("eval", "compare", str(sides[0]), str(sides[1]), "--json")
    document = json.loads(done.stdout)
    assert document["schema_minor"] == 1
    assert document["settings_diff"] == [{"setting": "harness", "a": ["claude-agent-acp/acp@1.0.0"],
                                          "b": ["claude-agent-acp/acp@1.1.0"], "tasks": 12}]
    assert document["error_shares"]["b"] == {"sandbox_setup": pytest.approx(1 / 12), "timeout": pytest.approx(1 / 12)}
    assert document["error_shares"]["a"] == {}
    assert document["paired_test"]["flipped"]["to_a"] == ["t01"]


def test_the_same_settings_say_so(tmp_path: Path) -> None:
    a = _job(tmp_path, "a", "1.0.0", {"t00"}, {})
    b = _job(tmp_path, "b", "1.0.0", {"t00", "t01"}, {})
    done = run_bench("eval", "compare", str(a), str(b))
    assert "Settings: the paired tasks ran with the same settings" in done.stdout
    assert "solved by A only 0, by B only 1; McNemar exact p = 1" in done.stdout
