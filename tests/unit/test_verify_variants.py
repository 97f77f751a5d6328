"""The equivalence battery's variants and the acceptance-live case schema (pure, no sandbox)."""

from __future__ import annotations

import json

import pytest

from benchflow.checks.acceptance_live import live_spec
from benchflow.checks.variants import make_variants, output_files
from benchflow.errors import TaskError


def by_name(outputs: dict[str, bytes]) -> dict[str, dict[str, bytes]]:
    variants, _ = make_variants(outputs)
    return {v.name: v.changes for v in variants}


def test_outputs_are_new_or_changed_files() -> None:
    baseline = {"keep.txt": b"same", "edit.txt": b"old"}
    reference = {"keep.txt": b"same", "edit.txt": b"new", "made.txt": b"x"}
    assert output_files(reference, baseline) == ["edit.txt", "made.txt"]


def test_wrong_variants_change_the_value() -> None:
    got = by_name({"answer.txt": b"42\n", "data.bin": b"\x00\x01\x02\x03"})
    assert got["emptied"] == {"answer.txt": b"", "data.bin": b""}
    assert got["truncated"] == {"answer.txt": b"4", "data.bin": b"\x00\x01"}
    assert all(new not in (b"42\n", b"\x00\x01\x02\x03") for new in got["garbage"].values())


def test_equivalent_variants_keep_the_value() -> None:
    got = by_name({"answer.txt": b"42\n", "list.txt": b"a\r\nb", "data.bin": b"\x00\xff"})
    assert got["trailing-newline"] == {"answer.txt": b"42", "list.txt": b"a\r\nb\r\n"}
    assert got["trailing-whitespace"] == {"answer.txt": b"42  \n", "list.txt": b"a\r\nb  "}
    assert got["line-endings"] == {"answer.txt": b"42\r\n", "list.txt": b"a\nb"}
    assert "data.bin" not in got["trailing-newline"]  # binary files are never "equivalent"-edited


def test_json_is_reserialized_with_the_same_value() -> None:
    compact = b'{"a": 1, "b": {"c": [1, 2.5, "\xc3\xa9"], "d": null}}\n'
    pretty = json.dumps({"z": 1, "y": [True]}, indent=2).encode()
    got = by_name({"compact.json": compact, "pretty.json": pretty, "scalar.json": b"7\n"})["json-reformatted"]
    assert set(got) == {"compact.json", "pretty.json"}
    assert json.loads(got["compact.json"]) == json.loads(compact) and got["compact.json"].endswith(b"}\n")
    assert list(json.loads(got["compact.json"])) == ["b", "a"]
    assert b"\n" not in got["pretty.json"] and json.loads(got["pretty.json"]) == {"z": 1, "y": [True]}


def test_nothing_to_vary_is_reported_as_skipped() -> None:
    variants, skipped = make_variants({})
    assert variants == [] and {s["variant"] for s in skipped} >= {"emptied", "json-reformatted"}
    variants, skipped = make_variants({"blank.txt": b"   "})
    assert [v.name for v in variants] == ["emptied", "garbage", "trailing-newline"]
    assert {s["variant"]: s["reason"] for s in skipped}["truncated"] == "no output file it applies to"


def doc(block: object) -> dict:
    return {"benchflow": {"evidence": {"acceptance_live": block}}}


def test_no_cases_means_generated_calibration() -> None:
    spec = live_spec({})
    assert [(c.name, c.agent, c.expect) for c in spec.cases] == [
        ("calibration-reference", "oracle", {"min_reward": 1.0}),
        ("calibration-no-op", "nop", {"max_reward": 0.0})]
    assert spec.report == "evidence/acceptance-live-report.json"


def test_declared_cases_reruns_and_report() -> None:
    spec = live_spec(doc({"report": "evidence/live.json", "oracle_reruns": 2,
                          "cases": [{"name": "half", "agent": "nop", "expect": {"min_reward": 0, "max_reward": 0.5}}]}))
    assert [c.name for c in spec.cases] == ["half", "oracle-rerun-1", "oracle-rerun-2"]
    half = spec.cases[0]
    assert half.judge(0.5) and half.judge(0.0) and not half.judge(0.6) and not half.judge(None)
    assert spec.report == "evidence/live.json"
    with_calibration = live_spec(doc({"calibration": True, "cases": [{"name": "x", "expect": {"min_reward": 1}}]}))
    assert [c.name for c in with_calibration.cases] == ["x", "calibration-reference", "calibration-no-op"]


@pytest.mark.parametrize(("block", "message"), [
    ({"cases": [{"name": "a", "agent": "claude", "expect": {"min_reward": 1}}]}, r"cases\[0\]\.agent"),
    ({"cases": [{"name": "a", "expect": {}}]}, r"cases\[0\]\.expect"),
    ({"cases": [{"name": "a", "expect": {"min_reward": "high"}}]}, r"expect\.min_reward: must be a number"),
    ({"cases": [{"name": "a", "expect": {"min_reward": 1, "max_reward": 0}}]}, "swap them"),
    ({"cases": [{"name": "a b", "expect": {"min_reward": 1}}]}, r"cases\[0\]\.name"),
    ({"cases": [{"name": "calibration-no-op", "expect": {"max_reward": 0}}], "calibration": True}, "used twice"),
    ({"report": "../outside.json"}, "inside the task folder"),
    ({"oracle_reruns": -1}, "oracle_reruns"),
    ({"calibration": False}, "no case to run"),
    ({"case": []}, "unknown key"),
])
def test_malformed_blocks_name_the_field(block: dict, message: str) -> None:
    with pytest.raises(TaskError, match=message):
        live_spec(doc(block))
