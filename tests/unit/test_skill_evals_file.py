"""``evals/evals.json`` as users write it (Anthropic skill-creator, BenchFlow 0.x), and the lift maths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchflow.errors import ConfigError
from benchflow.skills.eval_run import figures, pair_up
from benchflow.skills.evals_file import DEFAULT_IMAGE, load


def _skill(tmp_path: Path, data: object) -> Path:
    (tmp_path / "evals").mkdir(parents=True, exist_ok=True)
    (tmp_path / "SKILL.md").write_text("---\nname: from-frontmatter\ndescription: d\n---\n")
    (tmp_path / "evals" / "evals.json").write_text(json.dumps(data))
    return tmp_path


CHECK = {"type": "file_exists", "path": "out.txt"}


def test_benchflow_0x_cases_and_a_bare_list_are_read(tmp_path: Path) -> None:
    old = load(_skill(tmp_path / "a", {"cases": [{"id": "q1", "question": "Do it", "ground_truth": "done",
                                                  "expected_behavior": [CHECK]}]}))
    assert old.skill_name == "from-frontmatter" and old.image == DEFAULT_IMAGE
    assert [(c.task_name, c.prompt, c.expected_output) for c in old.cases] == [("case-q1", "Do it", "done")]
    bare = load(_skill(tmp_path / "b", [{"prompt": "p", "assertions": [CHECK]}, {"prompt": "q", "expectations": ["x"]}]))
    assert [c.id for c in bare.cases] == ["1"] and [c.id for c in bare.unscored] == ["2"]


@pytest.mark.parametrize("data, words", [
    ({"evals": []}, "non-empty list"),
    ({"evals": [{"expectations": [CHECK]}]}, "evals[0]: needs a non-empty 'prompt'"),
    ({"evals": [{"prompt": "p", "expectations": [{"type": "grade"}]}]}, "expectations[0]: type 'grade'"),
    ({"evals": [{"prompt": "p", "expectations": [{"type": "file_contains", "path": "x"}]}]}, "needs a non-empty string 'text'"),
    ({"evals": [{"id": 1, "prompt": "p", "expectations": [CHECK]}, {"id": "1", "prompt": "q", "expectations": [CHECK]}]},
     "used twice"),
    ({"evals": [{"prompt": "p", "files": ["../outside.txt"], "expectations": [CHECK]}]}, "not a file inside the skill"),
    ({"evals": [{"prompt": "p", "expectations": ["only words"]}]}, "no case has a check"),
])
def test_bad_files_name_the_field(tmp_path: Path, data: object, words: str) -> None:
    (tmp_path / "outside.txt").write_text("x")
    with pytest.raises(ConfigError) as caught:
        load(_skill(tmp_path / "skill", data))
    assert words in str(caught.value) and "evals.json" in str(caught.value)


def test_models_match_agents_one_to_one_or_one_for_all() -> None:
    assert [c.label for c in pair_up(["a", "b"], ["m"])] == ["a@m", "b@m"]
    assert [(c.agent, c.model) for c in pair_up(["a", "b"], ["m", "n"])] == [("a", "m"), ("b", "n")]
    with pytest.raises(ConfigError, match="--model given 2 times for 3"):
        pair_up(["a", "b", "c"], ["m", "n"])
    with pytest.raises(ConfigError, match="--agent is required"):
        pair_up([], [])


def test_lift_is_paired_over_cases_scored_on_both_sides(tmp_path: Path) -> None:
    evals = load(_skill(tmp_path, {"evals": [{"id": i, "prompt": "p", "expectations": [CHECK]} for i in range(1, 5)]}))
    with_skill = {"case-1": 1.0, "case-2": 1.0, "case-3": 0.5, "case-4": 1.0}
    baseline = {"case-1": 0.0, "case-2": 1.0, "case-3": 1.0}  # case-4 has no score without the skill
    out = figures(evals, with_skill, baseline)
    assert out["with_skill"]["pass_rate"] == 3 / 4 and out["baseline"]["pass_rate"] == 2 / 3
    assert out["baseline"]["unscored"] == ["case-4"]
    # paired deltas (1, 0, -1): mean 0, and the interval straddles it
    assert out["lift"]["paired"] == 3 and out["lift"]["pass_rate_delta"] == 0.0
    assert -1.0 <= out["lift"]["ci"]["low"] < 0.0 < out["lift"]["ci"]["high"] <= 1.0
    assert figures(evals, with_skill, None)["lift"] is None


def test_a_judge_model_runs_the_sentence_only_cases(tmp_path: Path) -> None:
    data = {"evals": [{"id": "w", "prompt": "p", "expected_output": "a polite note",
                       "expectations": ["The note says \"thank you\"", "It is short"]},
                      {"id": "c", "prompt": "q", "expectations": [CHECK, "Also words"]}]}
    without = load(_skill(tmp_path / "a", data))
    assert [c.id for c in without.cases] == ["c"] and [c.id for c in without.unscored] == ["w"]
    judged = load(_skill(tmp_path / "b", data), judge_model="claude-sonnet-4-6")
    assert [c.id for c in judged.cases] == ["w", "c"] and judged.unscored == []
    assert [judged.judged(c) for c in judged.cases] == [True, False]  # a case with checks keeps its checks


def test_a_judged_case_task_asks_the_llm_judge_with_one_criterion_per_sentence(tmp_path: Path) -> None:
    from benchflow.skills.eval_judge import resolve
    from benchflow.skills.eval_tasks import write_tasks
    from benchflow.tasks.model import load_task

    data = {"evals": [{"id": "w", "prompt": "Write a note.", "expected_output": "a polite note",
                       "expectations": ["The note says \"thank you\"", "It is short"]}]}
    evals = load(_skill(tmp_path / "s", data), judge_model="claude-sonnet-4-6")
    route = resolve("claude-sonnet-4-6", {"ANTHROPIC_API_KEY": "sk-ant-secret-value-123456", "PATH": "/bin"})
    assert route.env_names == ("ANTHROPIC_API_KEY",)
    task_dir = write_tasks(evals, tmp_path / "tasks", route) / "case-w"
    assert "sk-ant-secret" not in (task_dir / "task.toml").read_text()
    task = load_task(task_dir)
    verifier = task.config.verifier
    assert verifier.type == "llm-judge" and verifier.judge.model == "claude-sonnet-4-6"
    assert verifier.env == {"ANTHROPIC_API_KEY": "${ANTHROPIC_API_KEY:-}"}
    assert "a polite note" in verifier.judge.context
    rubric = json.loads((task_dir / verifier.judge.rubric_path).read_text())
    assert [c["description"] for c in rubric["criteria"]] == ["The note says \"thank you\"", "It is short"]


def test_a_judge_model_no_provider_serves_is_refused(tmp_path: Path) -> None:
    from benchflow.skills.eval_judge import resolve

    with pytest.raises(ConfigError, match="--judge-model claude-x: no provider key"):
        resolve("claude-x", {"OPENAI_API_KEY": "sk-openai-key-0123456789", "GEMINI_API_KEY": "g-key-0123456789"})
