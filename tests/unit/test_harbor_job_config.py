"""A Harbor job.yaml / config.json read by bench run --config: the keys that map, and every other refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchflow.errors import ConfigError
from benchflow.jobs.config_file import build_run_spec, load_run_config
from tests.harbor_job_configs import harbor_config_json

def _write(tmp_path: Path, doc: dict | str, name: str = "job.yaml") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def test_a_harbor_config_json_at_its_defaults_is_the_run_it_describes(tmp_path):
    spec = build_run_spec(_write(tmp_path, harbor_config_json(), "config.json"))
    assert (spec.agent, spec.tasks_dir, spec.sandbox, spec.jobs_dir, spec.job_name) == (
        "oracle", "tasks", "docker", "jobs", "2026-01-02__03-04-05")
    assert (spec.trials, spec.concurrency, spec.timeout_multiplier, spec.retry.attempts) == (1, 4, 1.0, 0)
    assert spec.keep_sandbox == "never" and spec.config_override is None


def test_a_harbor_job_yaml_maps_each_key(tmp_path):
    config = _write(tmp_path, """\
job_name: tb-sonnet
jobs_dir: runs
n_attempts: 3
timeout_multiplier: 1.5
n_concurrent_trials: 6
quiet: true
retry: {max_retries: 1}
environment: {type: daytona, delete: false}
agents:
  - name: claude-code
    model_name: anthropic/claude-sonnet-4-5
    override_timeout_sec: 1200
    env: {FOO: bar}
    kwargs: {reasoning_effort: high}
datasets:
  - name: terminal-bench
    version: "2.0"
    registry_url: https://mirror.example/registry.json
    task_names: ["hello-*"]
    exclude_task_names: [hello-slow]
    n_tasks: 5
extra_instructions: [Be brief., Cite files.]
""")
    spec = build_run_spec(config)
    assert (spec.job_name, spec.jobs_dir, spec.trials, spec.timeout_multiplier) == ("tb-sonnet", "runs", 3, 1.5)
    assert (spec.concurrency, spec.quiet, spec.retry.attempts) == (6, True, 1)
    assert (spec.sandbox, spec.keep_sandbox) == ("daytona", "always")
    assert (spec.agent, spec.model, spec.reasoning_effort) == ("claude-code", "anthropic/claude-sonnet-4-5", "high")
    assert spec.agent_env == {"FOO": "bar"} and spec.config_override == {"agent": {"timeout_sec": 1200}}
    assert (spec.dataset, spec.registry) == ("terminal-bench@2.0", "https://mirror.example/registry.json")
    sel = spec.selection
    assert (sel.include, sel.exclude, sel.limit) == (["hello-*"], ["hello-slow"], 5)
    assert spec.extra_instruction == "Be brief.\n\nCite files."


def test_the_older_harbor_forms_still_map(tmp_path):
    config = _write(tmp_path, """\
orchestrator: {type: local, n_concurrent_trials: 2, retry: {max_retries: 3}}
datasets: [{name: swebench, version: "1.0", registry: {path: /srv/registry.json}}]
agents: [{name: codex, model_name: gpt-5}]
""")
    spec = build_run_spec(config)
    assert (spec.concurrency, spec.retry.attempts, spec.dataset, spec.registry) == (2, 3, "swebench@1.0",
                                                                                     "/srv/registry.json")


def test_local_tasks_become_targets_and_a_repo_dataset_a_source_repo(tmp_path):
    spec = build_run_spec(_write(tmp_path, "tasks: [{path: tasks/a}, {path: tasks/b}]\n"))
    assert spec.targets == ["tasks/a", "tasks/b"]
    spec = build_run_spec(_write(tmp_path, "datasets: [{repo: org/bench, path: tasks, ref: v1}]\n"))
    assert (spec.source_repo, spec.source_path, spec.source_ref) == ("org/bench", "tasks", "v1")


@pytest.mark.parametrize(("kind", "sandbox"), [("docker", "docker"), ("podman", "podman"), ("daytona", "daytona"),
                                               ("modal", "modal"), ("apple-container", "apple-container")])
def test_environment_types_map_to_sandboxes(tmp_path, kind, sandbox):
    assert load_run_config(_write(tmp_path, f"environment: {{type: {kind}}}\n"))["sandbox"] == sandbox


@pytest.mark.parametrize(("yaml", "needle"), [
    ("environment: {type: e2b}", "job.yaml: environment.type: 'e2b': BenchFlow has no e2b sandbox; use one of docker"),
    ("environment: {type: runloop}", "environment.type: 'runloop': BenchFlow has no runloop sandbox"),
    ("environment: {force_build: true}", "environment.force_build: True is not supported"),
    ("environment: {override_cpus: 4}", "environment.override_cpus: 4 is not supported"),
    ("environment: {env: {K: v}}", "environment.env: {'K': 'v'} is not supported: give the variables as agents[0].env"),
    ("agents: [{name: a}, {name: b}]", "agents: 2 agents: a BenchFlow run has one"),
    ("agents: [{name: terminus-2, kwargs: {max_episodes: 5}}]", "agents[0].kwargs.max_episodes: Harbor passes it"),
    ("agents: [{name: a, import_path: 'my.mod:Agent'}]", "agents[0].import_path: 'my.mod:Agent' is not supported"),
    ("agents: [{name: a, max_timeout_sec: 9}]", "agents[0].max_timeout_sec: 9 is not supported: use agents[0]"),
    ("datasets: [{name: terminal-bench}]", "datasets[0].version: missing: BenchFlow runs a named version"),
    ("datasets: [{name: harbor/tb, version: '1'}]", "datasets[0].name: 'harbor/tb' is a package on Harbor's hub"),
    ("datasets: [{path: a}, {path: b}]", "datasets: 2 datasets: a BenchFlow run reads one"),
    ("datasets: [{path: a, download_dir: /tmp/x}]", "datasets[0].download_dir: '/tmp/x' is not supported"),
    ("datasets: [{path: a, registry_url: 'https://r'}]", "datasets[0].registry_url: a registry is only read for"),
    ("datasets: [{path: a}]\ntasks: [{path: b}]", "tasks: give datasets or tasks, not both"),
    ("tasks: [{git_url: 'https://github.com/o/r', path: t}]", "tasks[0]: a git or package task"),
    ("verifier: {disable: true}", "verifier.disable: True is not supported"),
    ("n_attempts: 2\nmetrics: [{type: mean}]", "metrics: [{'type': 'mean'}] is not supported: BenchFlow scores"),
    ("n_attempts: 2\ndebug: true", "debug: True is not supported: set BENCHFLOW_LOG_LEVEL=DEBUG"),
    ("n_attempts: 2\nagent_timeout_multiplier: 2", "agent_timeout_multiplier: 2 is not supported: use timeout_mult"),
    ("n_attempts: 2\nuser_agent: {name: sim}", "user_agent: {'name': 'sim'} is not supported: a simulated user"),
    ("retry: {max_retries: 1, wait_multiplier: 2}", "retry.wait_multiplier: 2 is not supported"),
    ("orchestrator: {type: ray}", "orchestrator.type: 'ray' is not supported"),
    ("n_attempts: 2\nenviroment: {type: docker}", "unknown key 'enviroment' (did you mean 'environment'?)"),
    ("agents: [{name: x, model_name: m}]\nagent: y", "agent: gives agent a second value ('y', already 'x')"),
])
def test_keys_that_do_not_map_are_refused_by_name_in_one_line(tmp_path, yaml, needle):
    with pytest.raises(ConfigError) as err:
        build_run_spec(_write(tmp_path, yaml + "\n"))
    assert needle in str(err.value) and "\n" not in str(err.value) and err.value.exit_code == 2


@pytest.mark.parametrize(("yaml", "fields"), [
    ("agent: nop\nenvironment: docker\nconcurrency: 3\nmax_retries: 1\ntimeout_multiplier: 2\njob_name: j\n",
     {"agent": "nop", "sandbox": "docker", "concurrency": 3, "retry": {"attempts": 1}, "timeout_multiplier": 2.0,
      "job_name": "j"}),
    ("tasks_dir: tasks\ndataset: alpha@1.0\nregistry: r.json\ntrials: 2\nquiet: true\ninclude: a\n",
     {"tasks_dir": "tasks", "dataset": "alpha@1.0", "registry": "r.json", "trials": 2, "quiet": True,
      "selection": {"include": ["a"]}}),
])
def test_our_own_run_config_is_read_as_before(tmp_path, yaml, fields):
    assert load_run_config(_write(tmp_path, yaml)) == fields


def test_a_benchflow_0_7_config_keeps_its_reading_of_n_attempts(tmp_path, monkeypatch):
    """0.7 (contracts §7.1) read n_attempts as the attempts of one trial; Harbor 0.2x reads it as trials per task.
    A file with only the keys 0.7 knew is 0.7's; one Harbor-only key makes it Harbor's."""
    monkeypatch.setenv("REAL_TOKEN", "tok-123")
    legacy = build_run_spec(_write(tmp_path, """\
jobs_dir: runs
n_attempts: 3
orchestrator: {n_concurrent_trials: 2}
environment: {type: docker, env: ["TOKEN=${REAL_TOKEN}", "MODE=fast"]}
agents: [{name: oracle, skip_install: false}]
datasets: [{path: tasks}]
include_tasks: [hello]
"""))
    assert (legacy.retry.attempts, legacy.trials, legacy.concurrency) == (2, 1, 2)
    assert legacy.agent_env == {"TOKEN": "tok-123", "MODE": "fast"} and legacy.selection.include == ["hello"]
    harbor = build_run_spec(_write(tmp_path, "n_attempts: 3\nn_concurrent_trials: 2\ndatasets: [{path: tasks}]\n",
                                   "harbor.yaml"))
    assert (harbor.trials, harbor.concurrency) == (3, 2)
    with pytest.raises(ConfigError, match=r"agents\[0\]\.skip_install: BenchFlow installs the agent"):
        build_run_spec(_write(tmp_path, "n_attempts: 2\nagents: [{name: oracle, skip_install: true}]\n", "s.yaml"))
