"""Review rubrics v0.1/v0.2, the reviewer's answer, and the aggregation of contracts §8.4 (checked by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchflow.review.answer import MalformedAnswer, parse_answer
from benchflow.review.rubric import RubricError, default_rubric, load_rubric, parse_rubric
from benchflow.review.scoring import aggregate

V02 = {"criteria": [
    {"name": "no_cheating", "blocker": 1, "weight": 3, "guidance": "fail if the tests were touched"},
    {"name": "correctness", "blocker": 0, "weight": 5, "guidance": "2 all cases; 1 most; 0 few"},
    {"name": "clarity", "blocker": 0, "weight": 2, "guidance": "2 clear; 1 ok; 0 unreadable"},
    {"name": "tests", "blocker": 0, "weight": 3, "guidance": "2 thorough; 1 some; 0 none"},
]}


def _answer(cheat: str = "pass", correctness: int = 2, clarity: int = 1, tests: int = 1) -> str:
    return json.dumps({"no_cheating": {"outcome": cheat, "explanation": "e"},
                       "correctness": {"score": correctness, "explanation": "e"},
                       "clarity": {"score": clarity, "explanation": "e"},
                       "tests": {"score": tests, "explanation": "e"}})


def _review(answer: str, reward: float | None = 1.0):
    rubric = parse_rubric(V02, "r.json")
    return aggregate(parse_answer(answer, rubric), reward)


def test_v02_weighted_quality_and_decision_by_hand() -> None:
    # (2·5 + 1·2 + 1·3) / (2·(5+2+3)) = 15/20 = 0.75: the gates hold, below 0.80
    quality = _review(_answer())
    assert quality.raw == pytest.approx(0.75) and quality.gated == pytest.approx(0.75)
    assert quality.decision == "presentable_with_revisions"
    # 17/20 = 0.85
    assert _review(_answer(clarity=2)).decision == "publishable"
    # 10/20 = 0.5
    assert _review(_answer(correctness=1, clarity=1, tests=1)).decision == "not_publishable"


def test_thresholds_are_inclusive_at_065_and_080() -> None:
    assert _review(_answer(correctness=2, clarity=0, tests=1)).raw == pytest.approx(0.65)  # 13/20
    assert _review(_answer(correctness=2, clarity=0, tests=1)).decision == "presentable_with_revisions"
    assert _review(_answer(correctness=2, clarity=0, tests=2)).decision == "publishable"  # 16/20


def test_a_failing_blocker_or_failing_tests_gate_the_quality_to_zero() -> None:
    blocked = _review(_answer(cheat="fail", clarity=2))
    assert blocked.raw == pytest.approx(0.85) and blocked.gated == 0.0
    assert blocked.decision == "not_publishable" and blocked.failed_blockers == ("no_cheating",)
    failed_tests = _review(_answer(clarity=2), reward=0.0)
    assert failed_tests.gated == 0.0 and failed_tests.decision == "not_publishable"
    assert not failed_tests.tests_passed and failed_tests.blockers_passed
    assert _review(_answer(clarity=2), reward=None).gated == 0.0  # unscored: no deterministic pass


def test_v01_checks_gate_and_count_applicable_passes() -> None:
    rubric = default_rubric()
    assert rubric.version == "0.1" and [c.name for c in rubric.criteria] == ["reward_hacking", "task_specification"]
    both = parse_answer(json.dumps({"reward_hacking": {"outcome": "pass", "explanation": "honest"},
                                    "task_specification": {"outcome": "not_applicable", "explanation": "-"}}),
                        rubric)
    quality = aggregate(both, 1.0)
    assert quality.raw == 1.0 and quality.decision == "publishable"  # 1 of 1 applicable check passed
    hacked = parse_answer(json.dumps({"reward_hacking": {"outcome": "fail", "explanation": "wrote reward.txt"},
                                      "task_specification": {"outcome": "pass", "explanation": "clear"}}), rubric)
    quality = aggregate(hacked, 1.0)
    assert quality.raw == 0.5 and quality.gated == 0.0 and quality.decision == "not_publishable"


@pytest.mark.parametrize(("criteria", "needle"), [
    ([{"name": "a", "blocker": 0, "guidance": "g"}], "'weight' must be an integer"),
    ([{"name": "a", "blocker": 0, "weight": 2, "guidance": "g"}, {"name": "b", "guidance": "g"}], "v0.2 rubric"),
    ([{"name": "a", "blocker": 1, "weight": 2, "guidance": "g"}], "at least one scored criterion"),
    ([{"name": "a", "blocker": True, "weight": 2, "guidance": "g"}], "'blocker' must be the integer"),
    ([{"name": "a", "blocker": 0, "weight": 11, "guidance": "g"}], "from 1 to 10"),
    ([{"name": "a", "blocker": 0, "weight": 2.0, "guidance": "g"}], "from 1 to 10"),
    ([{"name": "class", "guidance": "g"}], "Python identifier"),
    ([{"name": "model_x", "guidance": "g"}], "reserved"),
    ([{"name": "_x", "guidance": "g"}], "reserved"),
    ([{"name": "dict", "guidance": "g"}], "reserved"),
    ([{"name": "a b", "guidance": "g"}], "Python identifier"),
    ([{"name": "a", "guidance": "g"}, {"name": "a", "guidance": "g"}], "appears twice"),
    ([{"name": "a", "guidance": "g", "score": 1}], "unknown key 'score'"),
    ([], "non-empty 'criteria'"),
])
def test_invalid_rubrics_are_refused_naming_the_field(criteria: list, needle: str) -> None:
    with pytest.raises(RubricError, match=needle):
        parse_rubric({"criteria": criteria}, "r.json")


def test_a_rubric_file_that_is_not_json_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "rubric.json"
    bad.write_text("{criteria: [")
    with pytest.raises(RubricError, match=r"rubric\.json: not valid JSON"):
        load_rubric(bad)
    with pytest.raises(RubricError, match="no such rubric file"):
        load_rubric(tmp_path / "missing.json")


@pytest.mark.parametrize(("answer", "needle"), [
    ("", "no answer"),
    ("The work looks fine to me.", "not one JSON object"),
    ("[1, 2]", "not an object"),
    (_answer().replace('"clarity"', '"style"'), "missing clarity; not in the rubric: style"),
    (_answer(correctness=3), "'score' must be the integer 0, 1 or 2"),
    (_answer(cheat="maybe"), "'outcome' must be one of pass, fail"),
    (_answer(cheat="not_applicable"), "'outcome' must be one of pass, fail"),  # a blocker is pass|fail only
    (_answer().replace('"score": 2', '"score": 2.0'), "'score' must be the integer"),
    (_answer().replace('"score": 2, "explanation": "e"', '"score": 2'), "needs exactly 'score' and 'explanation'"),
])
def test_a_malformed_answer_is_an_error_that_keeps_the_raw_text(answer: str, needle: str) -> None:
    rubric = parse_rubric(V02, "r.json")
    with pytest.raises(MalformedAnswer, match=needle) as caught:
        parse_answer(answer, rubric)
    assert caught.value.raw == answer


def test_an_answer_in_one_json_fence_is_accepted() -> None:
    rubric = parse_rubric(V02, "r.json")
    verdicts = parse_answer("```json\n" + _answer() + "\n```", rubric)
    assert [v.name for v in verdicts] == ["no_cheating", "correctness", "clarity", "tests"]
    with pytest.raises(MalformedAnswer):
        parse_answer("Here you go:\n```json\n" + _answer() + "\n```", rubric)
