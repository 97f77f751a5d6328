"""compare: pairing by task, fair denominators, declared vs undeclared setting differences."""

from __future__ import annotations

from pathlib import Path

import pytest

import benchflow as bf
from benchflow.errors import ConfigError
from benchflow.results.compare import SettingMismatchError


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    """B differs from A in the model (declared below) and, on task t2, in the timeout (not declared)."""
    a = bf_job(tmp_path, "a", [("t1", 1.0, {}), ("t2", 0.0, {}), ("t3", 1.0, {})], model="haiku")
    b = bf_job(tmp_path, "b", [("t1", 1.0, {}), ("t2", 1.0, {"timeout_sec": 60}), ("t4", 0.0, {})], model="sonnet")
    return a, b


def bf_job(root: Path, name: str, rows, model: str) -> Path:
    from fixtures.jobgen import TrialSpec, write_job

    return write_job(root, name, [TrialSpec(task, reward, model=model, config=config) for task, reward, config in rows])


def test_pairs_by_task_with_fair_denominators(sides):
    cmp = bf.compare(*sides, vary=["model"])
    assert cmp.kind == "benchflow.comparison" and cmp.schema_version == 1
    s = cmp.summary
    assert (s["tasks"], s["paired"], s["only_a"], s["only_b"]) == (4, 2, 1, 1)
    assert (s["both_scored"], s["b_higher"], s["same_reward"], s["b_lower"]) == (2, 1, 1, 0)
    assert s["mean_delta"] == pytest.approx(0.5) and s["one_run_per_side"] is True
    assert cmp.a.denominators["attempted"] == 3 and cmp.a_paired["attempted"] == 2
    assert cmp.a_paired["passed"] == 1 and cmp.b_paired["passed"] == 2
    assert cmp.pass_at_k["b"]["pass_at_k"]["1"] == pytest.approx(1.0)
    rows = {r.task: r for r in cmp.rows}
    assert rows["t3"].status == "only_a" and rows["t4"].status == "only_b"
    assert rows["t2"].delta == 1.0


def test_declared_difference_is_fine_undeclared_one_is_reported(sides):
    cmp = bf.compare(*sides, vary=["model"])
    assert cmp.setting_mismatches == [{"task": "t2", "setting": "timeout", "a": ["900"], "b": ["60"]}]
    assert cmp.summary["setting_mismatches"] == 1
    assert any("timeout" in c and "--vary" in c for c in cmp.caveats)
    checks = {c["setting"]: c for c in {r.task: r for r in cmp.rows}["t1"].checks}
    assert checks["model"]["match"] is False and checks["task_digest"]["match"] is True
    assert checks["reasoning_effort"]["match"] is None  # neither side recorded it


def test_undeclared_model_difference_is_a_mismatch_too(sides):
    cmp = bf.compare(*sides)
    assert {m["setting"] for m in cmp.setting_mismatches} == {"model", "timeout"}


def test_on_mismatch_raise_and_ignore(sides):
    with pytest.raises(SettingMismatchError) as info:
        bf.compare(*sides, vary=["model"], on_mismatch="raise")
    assert info.value.exit_code == 1 and "timeout" in str(info.value)
    assert info.value.comparison.summary["paired"] == 2
    quiet = bf.compare(*sides, vary=["model", "timeout"], on_mismatch="raise")
    assert quiet.setting_mismatches == []
    ignored = bf.compare(*sides, vary=["model"], on_mismatch="ignore")
    assert not any("--vary" in c for c in ignored.caveats)


def test_declared_but_not_differing_is_a_caveat(sides):
    cmp = bf.compare(*sides, vary=["model", "effort"])
    assert "reasoning_effort" in cmp.vary
    assert any("do not differ in reasoning_effort" in c for c in cmp.caveats)


def test_bad_names_are_config_errors(sides):
    with pytest.raises(ConfigError, match="unknown setting"):
        bf.compare(*sides, vary=["colour"])
    with pytest.raises(ConfigError, match="on-mismatch"):
        bf.compare(*sides, on_mismatch="explode")


def test_by_keys_split_the_pairs(sides):
    cmp = bf.compare(*sides, by="agent", vary=["model"], labels=("base", "new"))
    assert cmp.by == ["agent"] and all(r.group == {"agent": "claude-agent-acp"} for r in cmp.rows)
    assert (cmp.a.label, cmp.b.label) == ("base", "new")
