"""``--source-env`` and ``bench hub inspect`` of a hosted environment as a user types them (no install: the
run's refusals come before it; the hub double serves the environment's wheel)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.doubles.prime_hub_double import PrimeHubDouble

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hosted_envs" / "tiny-echo"


@pytest.fixture(scope="module")
def hub():
    with PrimeHubDouble() as served:
        served.add("acme", FIXTURE)
        yield served


@pytest.fixture
def env(hub, tmp_path) -> dict[str, str]:
    return {"PRIME_API_BASE_URL": hub.url, "BENCHFLOW_CACHE": str(tmp_path / "cache")}


@pytest.mark.parametrize("args, needle", [
    (["tasks/", "--source-env-max-tokens", "5"], "--source-env-max-tokens is only valid with --source-env"),
    (["--source-env", "acme/tiny-echo", "--source-repo", "org/repo"], "both name the tasks; give one"),
    (["--source-env", "tiny-echo"], "give owner/name or owner/name@version"),
    (["--source-env", "acme/tiny-echo", "-a", "codex-acp"], "leave -a out"),
    (["--source-env", "acme/tiny-echo", "--sandbox", "docker"], "not in a sandbox"),
    (["--source-env", "acme/tiny-echo", "--source-env-arg", "novalue"], "--source-env-arg 'novalue': give KEY=VALUE"),
    (["--source-env", "acme/tiny-echo", "--source-env-base-url", "ftp://x"], "give an http(s) URL"),
    (["--source-env", "acme/tiny-echo", "--max-cost-usd", "5"], "no budget can be kept"),
])
def test_bad_source_env_flags_are_one_line_usage_errors(args, needle, env):
    done = run_bench("run", *args, env=env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and needle in done.stderr, done.stderr


def test_an_unset_key_variable_and_an_unknown_environment_stop_before_any_job(env, tmp_path):
    jobs = tmp_path / "jobs"
    unset = run_bench("run", "--source-env", "acme/tiny-echo@0.1.0", "--source-env-api-key-var",
                      "HOSTED_KEY_NOT_SET", "--jobs-dir", str(jobs), env=env)
    assert unset.returncode == 2 and "$HOSTED_KEY_NOT_SET is not set" in unset.stderr
    missing = run_bench("run", "--source-env", "acme/nothing-here", "--jobs-dir", str(jobs), env=env)
    assert missing.returncode == 2 and "has no such environment or version" in missing.stderr
    assert not jobs.exists()


def test_dry_run_prints_what_would_be_installed_and_run(env):
    done = run_bench("run", "--source-env", "acme/tiny-echo@0.1.0", "--source-env-arg", "target=Hi",
                     "--source-env-rollouts-per-example", "3", "--source-env-temperature", "0.2", "-m", "m1",
                     "--dry-run", env=env)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["source_env"] == "acme/tiny-echo@0.1.0" and plan["package"] == "tiny_echo"
    assert plan["rollouts"] == 3 and plan["settings"]["env_args"] == {"target": "Hi"}
    assert plan["command"][plan["command"].index("--temperature") + 1] == "0.2"


def test_hub_inspect_prints_a_file_of_the_hosted_package(env, hub):
    readme = run_bench("hub", "inspect", "acme/tiny-echo", "--version", "0.1.0", env=env)
    assert readme.returncode == 0 and readme.stdout.startswith("# tiny-echo")
    module = run_bench("hub", "inspect", "acme/tiny-echo", "--path", "tiny_echo.py", env=env)
    assert module.returncode == 0 and "def load_environment" in module.stdout
    assert any(r["path"] == "/api/v1/environmentshub/acme/tiny-echo/@latest" for r in hub.requests)
    absent = run_bench("hub", "inspect", "acme/tiny-echo", "--path", "nope.md", env=env)
    assert absent.returncode == 2 and "it holds: tiny_echo.py" in absent.stderr
    unknown = run_bench("hub", "inspect", "acme/unknown", env=env)
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1
