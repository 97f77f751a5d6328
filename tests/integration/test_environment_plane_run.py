"""``bench run --environment-manifest / --state``: a stateful environment (env0's services, played by
``tests/doubles/env0_service_double.py`` inside the task's image, on the sandbox's loopback only) is started
in each trial's sandbox, the agent waits for its readiness, and it is torn down after the verifier.

The task posts a message to the environment's Slack; its verifier reads it back from Slack's API. Its
image holds three of env0's eight services (auth, gmail, slack), as an env-0 task image holds a subset."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCKERFILE = """FROM benchflow/python-slim:3.11-bookworm
COPY mock_service.py /opt/env0/mock_service.py
RUN for s in auth gmail slack; do \\
      printf '#!/bin/sh\\nexec python3 /opt/env0/mock_service.py "$@"\\n' > /usr/local/bin/mock-$s; \\
      chmod +x /usr/local/bin/mock-$s; \\
    done; mkdir -p /data /app
WORKDIR /app
"""
SOLVE = """#!/bin/sh
python3 - <<'PY'
import json, urllib.request
request = urllib.request.Request("http://localhost:9005/api/messages", method="POST",
                                 data=json.dumps({"channel": "ops", "text": "deploy done"}).encode(),
                                 headers={"Content-Type": "application/json"})
print(urllib.request.urlopen(request, timeout=5).read().decode())
PY
"""
TEST = """#!/bin/sh
mkdir -p /logs/verifier
python3 - <<'PY'
import json, urllib.request
try:
    got = json.load(urllib.request.urlopen("http://localhost:9005/api/messages", timeout=5))
except OSError as exc:
    print("slack unreachable:", exc)
    got = []
print("messages:", got)
open("/logs/verifier/reward.txt", "w").write("1" if {"channel": "ops", "text": "deploy done"} in got else "0")
PY
"""


@pytest.fixture
def task(tmp_path: Path) -> Path:
    root = tmp_path / "tasks" / "notify-ops"
    for folder in ("environment", "oracle", "verifier"):
        (root / folder).mkdir(parents=True)
    (root / "task.md").write_text("---\nschema_version: '1.3'\nagent: {timeout_sec: 60}\nverifier: {timeout_sec: 30}\n"
                                  "sandbox: {network_mode: no-network}\n---\n\n## prompt\n\nPost \"deploy done\" to "
                                  "#ops on the team's Slack (http://localhost:9005/api/messages).\n")
    (root / "environment" / "Dockerfile").write_text(DOCKERFILE)
    shutil.copy(ROOT / "tests" / "doubles" / "env0_service_double.py", root / "environment" / "mock_service.py")
    for path, text in ((root / "oracle" / "solve.sh", SOLVE), (root / "verifier" / "test.sh", TEST)):
        path.write_text(text)
        path.chmod(0o755)
    return root


def _trial(jobs: Path) -> Path:
    [result] = list(jobs.rglob("result.json"))
    return result.parent


def _plane(trial: Path) -> dict:
    return json.loads((trial / "environment-plane.json").read_text())


@pytest.mark.parametrize("sandbox", [pytest.param("docker", marks=pytest.mark.docker),
                                     pytest.param("local", marks=pytest.mark.local_sandbox)])
def test_the_same_task_passes_bound_to_env0_prod_and_fails_bound_to_env0_outage(bench, task, tmp_path, sandbox):
    prod = bench("run", str(task), "-s", sandbox, "--jobs-dir", str(tmp_path / "prod"),
                 "--environment-manifest", "env0@prod")
    assert prod.returncode == 0, prod.stderr + prod.stdout
    trial = _trial(tmp_path / "prod")
    assert json.loads((trial / "result.json").read_text())["rewards"]["reward"] == 1.0
    plane = _plane(trial)
    started = [s["name"] for s in plane["services"] if s["status"] == "started"]
    assert started == ["mock-auth", "mock-gmail", "mock-slack"]  # the ones this image has, of the eight
    assert {s["status"] for s in plane["services"] if s["name"] not in started} == {"not_installed"}
    assert plane["readiness"]["ready"] and [p["target"] for p in plane["readiness"]["probes"]] == [
        "http://localhost:9000/health", "http://localhost:9001/health", "http://localhost:9005/health"]
    assert plane["teardown"]["stopped"] == started and plane["teardown"]["not_stopped"] == []
    bound = json.loads((trial / "config.json").read_text())["environment_manifest"]
    assert (bound["name"], bound["spec"], bound["bound_by"]) == ("env-0", "env0@prod", "--environment-manifest")
    assert bound["env_hash"].startswith("sha256:") and len(bound["services"]) == 8

    outage = bench("run", str(task), "-s", sandbox, "--jobs-dir", str(tmp_path / "outage"),
                   "--environment-manifest", "env0@outage")
    assert outage.returncode == 0, outage.stderr + outage.stdout
    trial = _trial(tmp_path / "outage")
    assert json.loads((trial / "result.json").read_text())["rewards"]["reward"] == 0.0  # no slack, same task
    assert [s["name"] for s in _plane(trial)["services"] if s["status"] == "started"] == ["mock-auth"]
    assert "slack unreachable" in (trial / "verifier" / "test-stdout.txt").read_text()


@pytest.mark.docker
def test_state_binds_a_subset_of_the_tools_and_wins_over_the_manifest_flag(bench, task, tmp_path):
    done = bench("run", str(task), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs"), "--environment-manifest",
                 "env0@outage", "--state", '{"name": "env0", "tools": ["slack"]}')
    assert done.returncode == 0, done.stderr + done.stdout
    trial = _trial(tmp_path / "jobs")
    assert json.loads((trial / "result.json").read_text())["rewards"]["reward"] == 1.0
    plane = _plane(trial)
    assert [(s["name"], s["status"]) for s in plane["services"]] == [("mock-slack", "started")]
    assert (plane["binding"]["bound_by"], plane["binding"]["spec"], plane["binding"]["tools"]) == (
        "--state", "env0@prod", ["slack"])


@pytest.mark.docker
def test_the_services_are_stopped_after_the_verifier(bench, task, tmp_path):
    import docker

    done = bench("run", str(task), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs"), "--environment-manifest",
                 "env0@prod", "--keep-sandbox", "always")
    assert done.returncode == 0, done.stderr + done.stdout
    trial = _trial(tmp_path / "jobs")
    container = json.loads((trial / "kept-sandbox.json").read_text())["sandbox_id"]
    client = docker.from_env()
    try:
        ps = client.containers.get(container).exec_run(
            ["sh", "-c", 'for d in /proc/[0-9]*; do tr "\\0" " " < "$d/cmdline"; echo; done'])
        running = ps.output.decode()
        assert "sh -c for d in /proc" in running  # the listing works: it sees itself
        assert "mock_service.py" not in running and "mock-slack" not in running, running
        # the services did run: the verifier read the oracle's message back from Slack
        assert "{'channel': 'ops', 'text': 'deploy done'}" in (trial / "verifier" / "test-stdout.txt").read_text()
    finally:
        client.close()
        bench("sandbox", "release", str(trial))


@pytest.mark.docker
def test_an_environment_that_never_gets_ready_fails_the_trial_before_its_agent(bench, task, tmp_path):
    registry = tmp_path / "registry"
    registry.mkdir()
    (registry / "flaky@v1.yaml").write_text(
        "environment:\n  name: flaky\n  base_image: benchflow/python-slim:3.11-bookworm\n  owns_lifecycle: false\n"
        "  readiness: {timeout_sec: 3}\n  services:\n"
        "    - {name: slack, command: mock-slack --db /data/slack.db serve --port 9005 --never-ready, port: 9005}\n")
    done = bench("run", str(task), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs"), "--environment-manifest",
                 "flaky@v1", "--retry-attempts", "0", env={"BENCHFLOW_ENV_REGISTRY": str(registry)})
    assert done.returncode == 1, done.stderr + done.stdout
    trial = _trial(tmp_path / "jobs")
    result = json.loads((trial / "result.json").read_text())
    assert result["error_category"] == "sandbox_setup" and result["rewards"] is None
    assert result["error"].startswith("environment flaky not ready: http://localhost:9005/health did not answer "
                                      "within 3s; its log ends: ")
    assert "GET /health" in result["error"]  # the service's own log: it was asked, and said no
    assert not (trial / "agent" / "oracle.txt").exists()  # the agent never ran
    plane = _plane(trial)
    assert plane["readiness"]["ready"] is False and plane["teardown"]["stopped"] == ["slack"]
    assert json.loads((trial / "config.json").read_text())["environment_manifest"]["spec"] == "flaky@v1"


def test_what_cannot_run_is_refused_before_anything_starts(bench, task, tmp_path):
    missing = bench("run", str(task), "--jobs-dir", str(tmp_path / "jobs"), "--environment-manifest",
                    str(tmp_path / "nope.toml"))
    assert missing.returncode == 2 and missing.stderr.strip().count("\n") == 0
    assert f"--environment-manifest {tmp_path / 'nope.toml'}: no such file" in missing.stderr
    assert not (tmp_path / "jobs").exists()
    image = tmp_path / "environment.toml"
    image.write_text("[environment]\nname = 'chi'\nimage = 'chi-bench:latest'\nports = [8023]\n"
                     "[environment.readiness]\nhttp = ['http://localhost:8023/health']\n")
    refused = bench("run", str(task), "--dry-run", "--environment-manifest", str(image))
    assert refused.returncode == 1
    assert "refuse: --environment-manifest " + str(image) + ": owns_lifecycle = true (the image's entrypoint " \
        "starts the services) cannot run here" in refused.stderr
