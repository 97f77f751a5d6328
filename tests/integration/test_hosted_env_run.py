"""``bench run --source-env`` end to end: a real verifiers environment package (tests/fixtures/hosted_envs/
tiny-echo) served by the Environments Hub double, installed with verifiers 0.3.1 from the package index into a
venv of its own, run by vf-eval against the scripted OpenAI provider; every rollout a trial the readers read.

The venv is cached in ``<test tools>/hosted-env-cache`` (as scripts/setup.d's tools are), so only the first run
on a machine installs verifiers (a few minutes); later runs reuse it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.doubles.prime_hub_double import PrimeHubDouble
from tests.doubles.scripted_openai import ScriptedOpenAI

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hosted_envs" / "tiny-echo"
KEY = "sk-hosted-test-4f1c9e2b7a"
INSTALL_TIMEOUT = 1500


@pytest.fixture(scope="module")
def services():
    with PrimeHubDouble() as hub, ScriptedOpenAI() as model:
        hub.add("acme", FIXTURE)
        yield hub, model


@pytest.fixture(scope="module")
def env(services) -> dict[str, str]:
    hub, _model = services
    tools = Path(os.environ.get("BENCHFLOW_TEST_TOOLS") or Path(sys.prefix) / "test-tools")
    return {"PRIME_API_BASE_URL": hub.url, "BENCHFLOW_CACHE": str(tools / "hosted-env-cache"),
            "HOSTED_TEST_KEY": KEY}


def _run(services, env, jobs: Path, *extra: str):
    _hub, model = services
    return run_bench("run", "--source-env", "acme/tiny-echo@0.1.0", "--source-env-verifiers-version", "0.3.1",
                     "-m", "gpt-4o-mini", "--source-env-base-url", f"{model.url}/v1",
                     "--source-env-api-key-var", "HOSTED_TEST_KEY", "--source-env-num-examples", "2",
                     "--source-env-rollouts-per-example", "2", "--jobs-dir", str(jobs), *extra,
                     env=env, timeout=INSTALL_TIMEOUT)


@pytest.fixture(scope="module")
def first_run(services, env, tmp_path_factory):
    jobs = tmp_path_factory.mktemp("hosted") / "jobs"
    calls_before = len(services[1].calls)
    done = _run(services, env, jobs, "--summary-out", str(jobs.parent / "run-summary.json"))
    job = next(p for p in jobs.iterdir() if p.is_dir())
    return done, job, services[1].calls[calls_before:]


def test_each_rollout_is_a_trial_scored_by_the_environments_rubric(first_run):
    done, job, calls = first_run
    assert done.returncode == 0, done.stderr
    assert "Outcomes: 4 scored (2 passed, 2 failed)" in done.stdout
    results = {}
    for trial in sorted(p for p in job.iterdir() if "__" in p.name):
        result = json.loads((trial / "result.json").read_text())
        results.setdefault(result["task_name"], []).append((result["seed"], result["rewards"]["reward"]))
        row = json.loads((trial / "results.jsonl").read_text())
        assert {"example_id", "prompt", "completion", "reward", "timing", "is_completed", "metrics"} <= set(row)
        assert row["info"]["rollout_name"] == trial.name and row["reward"] == result["rewards"]["reward"]
        assert json.loads((trial / "config.json").read_text())["source"]["verifiers_version"] == "0.3.1"
    assert {task: sorted(v) for task, v in results.items()} == {"tiny-echo-ex0": [(0, 1.0), (1, 1.0)],
                                                              "tiny-echo-ex1": [(0, 0.0), (1, 0.0)]}
    summary = json.loads((job / "summary.json").read_text())
    assert (summary["total"], summary["passed"], summary["agent"]) == (4, 2, "verifiers")
    assert len((job / "results.jsonl").read_text().splitlines()) == 4
    run_summary = json.loads((job.parent.parent / "run-summary.json").read_text())
    assert run_summary["counts"]["passed"] == 2 and run_summary["job_dir"] == str(job)


def test_the_model_is_called_with_the_settings_and_the_key_from_its_variable(first_run):
    _done, _job, calls = first_run
    chats = [c for c in calls if c.path == "/v1/chat/completions"]
    assert len(chats) == 4
    assert {c.model for c in chats} == {"gpt-4o-mini"} and {c.authorization for c in chats} == {f"Bearer {KEY}"}
    assert all(c.body.get("max_tokens") == 1024 or c.body.get("max_completion_tokens") == 1024 for c in chats)
    assert all("temperature" not in c.body for c in chats)  # none given: none sent


def test_the_key_is_nowhere_on_disk(first_run, env):
    _done, job, _calls = first_run
    for root in (job, Path(env["BENCHFLOW_CACHE"]) / "hosted-envs" / "acme"):
        for path in root.rglob("*"):
            if path.is_file() and path.stat().st_size < 50 * 1024 * 1024 and "site-packages" not in path.parts:
                assert KEY.encode() not in path.read_bytes(), path


def test_results_train_convert_and_view_read_the_hosted_trials(first_run, tmp_path):
    _done, job, _calls = first_run
    shown = run_bench("results", str(job), "--json")
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    rewards = sorted(t["reward"] for t in document["trials"])
    assert rewards == [0.0, 0.0, 1.0, 1.0]
    out = tmp_path / "sft.jsonl"
    converted = run_bench("train", "convert", str(job), "-o", str(out), "--format", "prime-sft")
    assert converted.returncode == 0, converted.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4
    said = {row["task_name"]: row["messages"][-1]["content"] for row in rows}
    assert said == {"tiny-echo-ex0": "Hello world file", "tiny-echo-ex1": "Hello world file"}
    page = tmp_path / "view.html"
    viewed = run_bench("view", str(job), "--export", str(page))
    assert viewed.returncode == 0 and "4 trial page(s)" in viewed.stdout, viewed.stderr


def test_a_rerun_or_resume_reuses_finished_rollouts_and_other_settings_are_refused(first_run, services, env):
    _done, job, _calls = first_run
    before = len(services[1].calls)
    again = _run(services, env, job.parent)
    assert again.returncode == 0, again.stderr
    assert "every rollout finished" in again.stderr and len(services[1].calls) == before
    resumed = run_bench("eval", "resume", str(job), env=env, timeout=INSTALL_TIMEOUT)
    assert resumed.returncode == 0 and "every rollout finished" in resumed.stderr, resumed.stderr
    changed = _run(services, env, job.parent, "--source-env-arg", "target=Goodbye")
    assert changed.returncode == 2 and changed.stderr.count("\n") == 1
    assert "ran with other settings" in changed.stderr and "--restart-changed" in changed.stderr
    assert len(services[1].calls) == before
