"""parity_experiment.json in the shapes users have (BenchFlow's adopted benchmarks, Harbor's adapters),
read as criterion pairs and reward pairs, and the verdict the gate gives them."""

from __future__ import annotations

import pytest

from benchflow.adopt.evidence import read_evidence
from benchflow.adopt.gate import decide
from benchflow.errors import UserError

# The shape of Harbor's published example (docs/datasets/adapters: a JSON array of experiments).
HARBOR = [{
    "adapter_name": "mybenchmark", "agent": "codex@1.0", "model": "openai/gpt-5-2025-06-01", "date": "2026-01-15",
    "adapted_benchmark_size": 500, "parity_benchmark_size": 50, "number_of_runs": 3, "notes": "50-task sample",
    "original_parity_repo": "https://github.com/example/mybenchmark/tree/harbor-parity",
    "adapter_pr": [], "dataset_pr": [], "parity_pr": [],
    "metrics": [{"benchmark_name": "MyBenchmark", "metric": "Accuracy", "original": "72.0 +/- 1.5",
                 "harbor": "71.3 +/- 1.2", "original_runs": [73.0, 69.0, 74.0], "harbor_runs": [72.0, 70.0, 71.9]}],
}]


def read(data):
    return read_evidence(data, "parity_experiment.json")


def test_benchflow_criteria_and_samples_are_read_with_their_task_ids():
    evidence = read({
        "conversion_parity": {"tasks": [{"task_id": "t1", "criteria_results": [
            {"criterion_id": "c1", "original_verdict": "pass", "adapted_verdict": "pass"},
            {"criterion_id": "c2", "original_verdict": "pass", "adapted_verdict": "fail"},
            {"criterion_id": "c3", "original_verdict": "x", "adapted_verdict": "y", "agreement": True}]}]},
        "reward_distribution_parity": {"samples": [
            {"task_id": "t1", "legacy_reward": 0.5, "converted_reward": 0.53},
            {"task_id": "t2", "pb_reward": 1, "bf_reward": 1},
            {"task_id": "t3", "legacy_reward": 0.0, "converted_reward": 1.0, "reward_delta": 0.01}]},
        "agent_parity": {"results": [{"task_id": "t4", "programbench": {"reward": 0.25},
                                      "benchflow": {"reward": 0.25}}]},
    })
    assert [(c.where, c.agree) for c in evidence.criteria] == [("t1/c1", True), ("t1/c2", False), ("t1/c3", True)]
    assert [(r.where, round(r.delta, 6)) for r in evidence.rewards] == [("t1", 0.03), ("t2", 0.0), ("t3", 0.01),
                                                                        ("t4", 0.0)]


def test_the_verdict_follows_the_pairs_and_the_tolerance():
    close = read({"reward_distribution_parity": {"samples": [{"legacy_reward": 0.5, "converted_reward": 0.52}]}})
    assert decide(close, 0.02) == "parity-confirmed"  # 0.52 - 0.5 is 0.020000000000000018 in floats
    far = read({"reward_distribution_parity": {"samples": [{"legacy_reward": 0.5, "converted_reward": 0.53}]}})
    assert decide(far, 0.02) == "parity-divergent"
    assert decide(far, 0.05) == "parity-confirmed"
    disagree = read({"tasks": [{"criteria_results": [{"original_verdict": "pass", "adapted_verdict": "fail"}]}]})
    assert decide(disagree, 1.0) == "parity-divergent"


def test_nothing_measured_is_insufficient_evidence():
    template = {"experiment": "side-by-side-parity", "status": "template",
                "conversion_parity": {"tasks": []}, "reward_distribution_parity": {"samples": []}}
    assert decide(read(template), 0.02) == "insufficient-evidence"
    assert decide(None, 0.02) == "insufficient-evidence"


def test_a_top_level_tasks_list_of_names_is_not_evidence():
    evidence = read({"tasks": ["t1", "t2"], "reward_distribution_parity": {"samples": [
        {"legacy_reward": 1, "converted_reward": 1}]}})
    assert (evidence.criteria, len(evidence.rewards)) == ([], 1)


def test_summary_blocks_count_as_one_criterion_each():
    evidence = read({"benchmark": "pb", "structural_parity": {"tasks_tested": 10, "passed": 10},
                     "eval_parity": {"results_summary": {"passed": 7, "failed": 1}},
                     "live_parity": {"note": "no counts"}})
    assert [(c.where, c.agree) for c in evidence.criteria] == [("structural_parity", True), ("eval_parity", False)]


def test_harbor_runs_are_percentages_compared_as_rewards():
    evidence = read(HARBOR)
    (pair,) = evidence.rewards
    assert pair.where == "MyBenchmark / Accuracy"
    assert (round(pair.original, 6), round(pair.converted, 6)) == (0.72, 0.713)
    assert decide(evidence, 0.02) == "parity-confirmed"
    assert decide(evidence, 0.005) == "parity-divergent"


def test_harbor_reward_scale_runs_and_older_trials_keys_and_stated_means():
    rewards = read([{"metrics": [
        {"metric": "pass@1", "original_trials": [0.4, 0.5], "harbor_trials": [0.45, 0.45]},
        {"metric": "resolved", "original": "55.56% +/- 8.01%", "harbor": "45.0% ± 5.88%"},
        {"metric": "tiny", "original": "0.9% +/- 0.1", "harbor": "0.5% +/- 0.1"},
    ]}]).rewards
    assert [(r.where, round(r.original, 4), round(r.converted, 4)) for r in rewards] == [
        ("pass@1", 0.45, 0.45), ("resolved", 0.5556, 0.45), ("tiny", 0.009, 0.005)]


def test_exact_metrics_of_benchflows_record_arrays_are_criteria():
    evidence = read([{"benchmark": "harvey", "metrics": [
        {"name": "pass rate", "original": "100%", "converted": "100%"},
        {"name": "score", "original": "0.61 ± 0.02", "converted": "0.60 ± 0.03"},
        {"name": "tasks", "original": 40, "converted": 39}]}])
    assert [(c.where, c.agree) for c in evidence.criteria] == [("pass rate", True), ("tasks", False)]


@pytest.mark.parametrize("data, says", [
    ({"reward_distribution_parity": {"samples": [{"task_id": "t", "legacy_reward": 1.0}]}},
     "reward_distribution_parity.samples[0]: has no converted_reward"),
    ({"reward_distribution_parity": {"samples": [{"legacy_reward": "high", "converted_reward": 1}]}},
     "reward_distribution_parity.samples[0].legacy_reward: 'high' is not a number"),
    ({"reward_distribution_parity": {"samples": [{"legacy_reward": True, "converted_reward": 1}]}},
     "reward_distribution_parity.samples[0].legacy_reward: True is not a number"),
    ({"reward_distribution_parity": {"samples": {"t1": 1}}}, "reward_distribution_parity.samples: is a dict"),
    ({"conversion_parity": {"tasks": [{"criteria_results": [{"original_verdict": "pass"}]}]}},
     "conversion_parity.tasks[0].criteria_results[0]: has no original_verdict/adapted_verdict pair"),
    ({"tasks": [{"criteria_results": [{"original_verdict": "a", "adapted_verdict": "a", "agreement": "yes"}]}]},
     "tasks[0].criteria_results[0].agreement: 'yes' is not true or false"),
    ([{"metrics": [{"metric": "m", "original_runs": [0.5], "harbor_runs": []}]}],
     "[0].metrics[0]: has no harbor score"),
    ([{"metrics": [{"metric": "m", "original_runs": [250], "harbor_runs": [240]}]}], "outside 0-100"),
    ([{"metrics": [{"metric": "m", "original_runs": [0.5, None], "harbor_runs": [0.5]}]}],
     "[0].metrics[0].original_runs[1]: None is not a number"),
    ([{"metrics": [{"metric": "m", "original": "about half", "harbor": "0.5 +/- 0.1"}]}],
     "[0].metrics[0].original: 'about half' is not 'mean +/- sem'"),
    ("parity", "is a JSON str"),
])
def test_malformed_evidence_is_refused_with_its_path(data, says):
    with pytest.raises(UserError) as caught:
        read(data)
    assert caught.value.exit_code == 2
    message = str(caught.value)
    assert message.startswith("parity_experiment.json: ") and says in message and "\n" not in message
