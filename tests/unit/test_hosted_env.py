"""The hosted-environment source's parts: references, settings, the vf-eval command, rows recorded as trials,
files read from a hub wheel, and the install requirement (no network, no install)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchflow.errors import ConfigError
from benchflow.hosted import install, prime_hub, vf_eval
from benchflow.hosted.record import RunFacts, write_trial
from benchflow.hosted.ref import HostedRef, parse_ref, parse_settings
from benchflow.jobs.layout import JobPaths
from benchflow.jobs.spec import RunSpec
from benchflow.records import TrialConfig, TrialResult, read_record
from tests.doubles.prime_hub_double import build_wheel

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hosted_envs" / "tiny-echo"


@pytest.mark.parametrize("given, version, expected", [
    ("primeintellect/general-agent", None, HostedRef("primeintellect", "general-agent", None)),
    ("primeintellect/general-agent@0.1.1", None, HostedRef("primeintellect", "general-agent", "0.1.1")),
    ("primeintellect:will/wordle", "0.1.4", HostedRef("will", "wordle", "0.1.4")),
    ("will/wordle@0.1.4", "0.1.4", HostedRef("will", "wordle", "0.1.4")),
])
def test_a_reference_names_owner_name_and_version(given, version, expected):
    assert parse_ref(given, version) == expected
    assert expected.package == expected.name.replace("-", "_")


@pytest.mark.parametrize("given, version, needle", [
    ("general-agent", None, "give owner/name"),
    ("a/b/c", None, "give owner/name"),
    ("will/wordle@", None, "nothing after '@'"),
    ("will/wordle@0.1.3", "0.1.4", "give one"),
])
def test_a_bad_reference_is_a_config_error_saying_the_fix(given, version, needle):
    with pytest.raises(ConfigError, match=needle):
        parse_ref(given, version)


def test_key_value_settings_read_json_values_and_keep_text():
    parsed = parse_settings(["n=5", "flag=true", "name=Hello world", "list=[1, 2]", "eq=a=b"], "--source-env-arg")
    assert parsed == {"n": 5, "flag": True, "name": "Hello world", "list": [1, 2], "eq": "a=b"}
    with pytest.raises(ConfigError, match="--source-env-arg 'oops': give KEY=VALUE"):
        parse_settings(["oops"], "--source-env-arg")


def test_the_run_spec_takes_one_source_and_source_env_settings_only_with_it():
    spec = RunSpec(source_env="acme/tiny-echo@0.1.0", source_env_num_examples=3)
    assert spec.source_env_max_tokens == 1024 and spec.source_env_temperature is None
    with pytest.raises(ValueError, match="--source-env-num-examples is only valid with --source-env"):
        RunSpec(targets=["tasks"], source_env_num_examples=3)
    with pytest.raises(ValueError, match="--source-env-arg is only valid with --source-env"):
        RunSpec(source_env_args={"a": 1})
    with pytest.raises(ValueError, match="--dataset and --source-env both name the tasks"):
        RunSpec(dataset="x@1", source_env="acme/tiny-echo")
    with pytest.raises(ValueError, match="leave -a out"):
        RunSpec(source_env="acme/tiny-echo", agent="claude-agent-acp")
    with pytest.raises(ValueError, match="not a variable name") as refused:
        RunSpec(source_env="acme/tiny-echo", source_env_api_key_var="sk-live-abc")
    assert "sk-live-abc" not in refused.value.errors()[0]["msg"]  # the one line bench prints


def test_the_vf_eval_command_names_the_key_variable_never_its_value(monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-never-on-a-command-line")
    spec = RunSpec(source_env="acme/tiny-echo", model="gpt-4o-mini", source_env_api_key_var="MY_KEY",
                   source_env_base_url="http://127.0.0.1:9/v1", source_env_args={"target": "x"},
                   source_env_sampling_args={"reasoning_effort": "minimal"}, source_env_rollouts_per_example=3,
                   concurrency=2)
    argv = vf_eval.command(spec, parse_ref(spec.source_env), "/venv/bin/vf-eval", "/out")
    joined = " ".join(argv)
    assert "sk-never-on-a-command-line" not in joined
    assert argv[argv.index("--api-key-var") + 1] == "MY_KEY"
    assert json.loads(argv[argv.index("--env-args") + 1]) == {"target": "x"}
    assert json.loads(argv[argv.index("--sampling-args") + 1]) == {"reasoning_effort": "minimal"}
    assert argv[argv.index("--rollouts-per-example") + 1] == "3" and argv[argv.index("--max-concurrent") + 1] == "2"
    assert argv[argv.index("--max-tokens") + 1] == "1024"
    assert "--temperature" not in argv  # none given: none sent, the provider's own
    hot = vf_eval.command(spec.model_copy(update={"source_env_temperature": 0.7}), parse_ref(spec.source_env),
                          "vf-eval", "/out")
    assert hot[hot.index("--temperature") + 1] == "0.7"


FACTS = RunFacts(source={"type": "hosted_env", "env_id": "acme/tiny-echo", "version": "0.1.0"},
                 settings={"num_examples": 1}, model="gpt-4o-mini", env_name="tiny-echo", env_version="0.1.0")


def test_a_scored_row_is_a_trial_with_its_reward_rubric_conversation_and_row(tmp_path):
    job = JobPaths(tmp_path / "job")
    row = {"example_id": 3, "prompt": [{"role": "system", "content": "Be brief."},
                                       {"role": "user", "content": "List the files"}],
           "completion": [{"role": "assistant", "content": None, "tool_calls": [
               {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
               {"role": "assistant", "content": "a.txt"}],
           "reward": 0.5, "error": None, "metrics": {"found": 0.5}, "timing": {"start_time": 1.7e9, "total": 2.26,
                                                                               "generation": {"duration": 2.0}},
           "token_usage": {"input_tokens": 40.0, "output_tokens": 9.0}, "info": {"note": "kept"},
           "tool_defs": [{"type": "function", "function": {"name": "ls", "parameters": {}}}]}
    task, result = write_trial(job, FACTS, row, rollout=1, seed=1)
    trial = job.trial(result["trial_name"])
    assert task == "tiny-echo-ex3" and trial.name.startswith("tiny-echo-ex3__")
    record = read_record(TrialResult, trial.result)
    assert record.reward == 0.5 and record.seed == 1 and record.error is None
    assert record.rewards.model_dump()["rubric"] == [{"name": "found", "score": 0.5}]
    assert record.agent_result.total_tokens == 49 and record.n_tool_calls == 1
    assert record.timing.total == 2.3 and record.trajectory_source == "hosted_env"
    config = read_record(TrialConfig, trial.config).to_json()
    assert config["source"]["env_id"] == "acme/tiny-echo" and config["hosted_env"]["example_id"] == 3
    kept = json.loads(trial.results_jsonl.read_text())
    assert kept["reward"] == 0.5 and kept["info"] == {"note": "kept", "task_name": task, "rollout_name": trial.name,
                                                      "agent": "verifiers", "model": "gpt-4o-mini", "rollout": 1}
    events = [json.loads(line) for line in trial.acp_trajectory.read_text().splitlines()]
    assert [e["type"] for e in events] == ["user_message", "tool_call", "agent_message"]
    calls = [json.loads(line) for line in trial.llm_trajectory.read_text().splitlines()]
    assert len(calls) == 2  # one per assistant turn: what it was sent, and what it answered
    assert [m["role"] for m in calls[1]["request"]["body"]["messages"]] == ["system", "user", "assistant", "tool"]
    assert calls[1]["response"]["body"]["choices"][0]["message"]["content"] == "a.txt"
    assert calls[0]["request"]["body"]["tools"] == row["tool_defs"]
    terminal = json.loads(trial.rewards.read_text().splitlines()[-1])
    assert terminal["type"] == "terminal" and terminal["value"] == 0.5


def test_an_errored_row_is_an_errored_trial_never_a_zero(tmp_path):
    job = JobPaths(tmp_path / "job")
    row = {"example_id": 0, "prompt": [{"role": "user", "content": "hi"}], "completion": [], "reward": 0.0,
           "error": {"error": "ModelError", "message": "ModelError",
                     "error_chain_repr": "ModelError() -> RateLimitError('HTTP 429 Too Many Requests')",
                     "error_chain_str": "ModelError -> RateLimitError"}, "metrics": {}}
    _task, result = write_trial(job, FACTS, row, rollout=0, seed=None)
    record = read_record(TrialResult, job.trial(result["trial_name"]).result)
    assert record.rewards is None and record.reward is None
    assert "HTTP 429" in record.error and record.error_category is not None
    assert not job.trial(result["trial_name"]).rewards.exists()


def test_hub_inspect_reads_a_packed_file_or_the_readme_the_wheel_carries():
    ref = HostedRef("acme", "tiny-echo", "0.1.0")
    _name, wheel = build_wheel(FIXTURE)
    assert b"def load_environment" in prime_hub.wheel_file(ref, wheel, "tiny_echo.py")
    assert prime_hub.wheel_file(ref, wheel, "README.md").decode().startswith("# tiny-echo")
    with pytest.raises(ConfigError, match="holds no such file; it holds: tiny_echo.py"):
        prime_hub.wheel_file(ref, wheel, "missing.txt")


def test_the_install_takes_the_hub_index_and_pins_verifiers_only_when_asked():
    ref = HostedRef("acme", "tiny-echo", "0.1.0")
    found = {"simple_index_url": "https://hub.example/acme/simple/", "wheel_url": "https://hub.example/w.whl"}
    assert install.requirement(ref, found, None) == (["tiny_echo==0.1.0"],
                                                     ["--extra-index-url", "https://hub.example/acme/simple/"])
    assert install.requirement(ref, found, "0.3.1")[0] == ["tiny_echo==0.1.0", "verifiers==0.3.1"]
    assert install.requirement(HostedRef("acme", "tiny-echo"), {"wheel_url": "https://hub.example/w.whl"},
                               None) == (["https://hub.example/w.whl"], [])
    pinned, unpinned = install.folder_for(ref, found, "0.3.1"), install.folder_for(ref, found, None)
    assert pinned != unpinned and pinned.parent == unpinned.parent


def test_a_verifiers_release_whose_vf_eval_is_not_the_classic_one_is_refused(tmp_path):
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "vf-eval").write_text("")
    ok = install.Installed(tmp_path, "0.1.0", "0.3.1", [])
    install._check_driven(HostedRef("acme", "tiny-echo"), ok)
    with pytest.raises(Exception, match="pin one the environment supports with --source-env-verifiers-version"):
        install._check_driven(HostedRef("acme", "tiny-echo"), install.Installed(tmp_path, "0.1.0", "0.4.0", []))


def test_a_run_config_and_bf_run_take_the_source_env_keys():
    from benchflow.jobs.public import make_spec

    spec = make_spec(source={"env": "acme/tiny-echo"}, source_env_args={"target": "Hi"},
                     source_env_rollouts_per_example=2, source_env_temperature=0.5)
    assert (spec.source_env, spec.source_env_args, spec.source_env_rollouts_per_example,
            spec.source_env_temperature) == ("acme/tiny-echo", {"target": "Hi"}, 2, 0.5)
