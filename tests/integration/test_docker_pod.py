"""Multi-service tasks on Docker: one pod per trial (siblings in main's network namespace), started
in dependency order, hardened like main, and removed as one unit, even after a kill -9."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchflow.sandbox import SandboxSpec, get_backend
from benchflow.sandbox.docker_setup import KEPT_CAPABILITIES, pids_limit
from tests.conftest import FIXTURE_TASKS, run_bench
from tests.waiting import wait_until

pytestmark = pytest.mark.docker

TWO_SERVICE = FIXTURE_TASKS / "two-service"


def results(jobs: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in jobs.rglob("result.json")]


def job_dir(jobs: Path) -> Path:
    return next(p for p in jobs.iterdir() if p.is_dir())


def pod_leftovers(job: Path) -> tuple[list[str], list[str]]:
    """(containers, volumes) labelled with the job ``job``."""
    import docker

    client = docker.from_env()
    label = f"benchflow.job={job.resolve()}"
    found = client.containers.list(all=True, sparse=True, filters={"label": label})  # sparse: no inspect of each
    containers = [c.attrs["Names"][0].lstrip("/") for c in found]
    volumes = [v.name for v in client.volumes.list(filters={"label": label})]
    return containers, volumes


def copy_task(tmp_path: Path, name: str) -> Path:
    task = tmp_path / "tasks" / name
    shutil.copytree(TWO_SERVICE, task)
    return task


def test_the_agent_reaches_its_sibling_by_name_once_it_is_healthy(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(TWO_SERVICE), "-s", "docker", "--jobs-dir", str(jobs))
    assert done.returncode == 0, done.stderr
    [result] = results(jobs)
    # the oracle asked db once, right at its start: db (slow to listen) was already healthy, and it
    # served what seed wrote into the shared volume before it exited 0
    assert result["rewards"] == {"reward": 1.0}, result.get("error") or result.get("verifier_error")
    assert pod_leftovers(job_dir(jobs)) == ([], [])


@pytest.mark.parametrize("edit, why", [
    (('command: ["sh"', 'expose: ["8080"]\n    command: ["sh"'),
     "services.db: port 8080 is also used by service 'seed'"),
    (('"data:/data:ro"', '"./data:/data:ro"'), "services.db.volumes[0]: './data' is a host bind mount"),
], ids=["port-clash", "bind-mount"])
def test_the_run_card_refuses_what_a_pod_cannot_do(tmp_path: Path, edit: tuple[str, str], why: str) -> None:
    task = copy_task(tmp_path, "bad")
    compose = task / "environment" / "docker-compose.yaml"
    compose.write_text(compose.read_text().replace(*edit))
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs))
    assert done.returncode != 0
    assert f"bad: {compose}: {why}" in done.stderr.replace("\n", " ")
    assert not jobs.exists(), "nothing may start for a refused task"


def test_the_compose_file_reads_a_host_variable_only_when_allow_task_env_names_it(tmp_path: Path) -> None:
    task = copy_task(tmp_path, "envy")
    compose = task / "environment" / "docker-compose.yaml"
    compose.write_text(compose.read_text().replace("echo seeded-42", "echo ${SEED_WORD}-42"))
    env = {"SEED_WORD": "seeded"}
    refused = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(tmp_path / "no"), env=env)
    assert refused.returncode != 0 and "--allow-task-env SEED_WORD" in refused.stderr.replace("\n", " ")
    assert not (tmp_path / "no").exists(), "nothing may start for a refused task"
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs),
                     "--allow-task-env", "SEED_WORD", env=env)
    assert done.returncode == 0, done.stderr
    [result] = results(jobs)
    assert result["rewards"] == {"reward": 1.0}, result.get("error") or result.get("verifier_error")
    assert pod_leftovers(job_dir(jobs)) == ([], [])


SUBMIT = """#!/bin/sh
python3 - <<'PY'
import urllib.request
answer = urllib.request.urlopen("http://db:8080/answer", timeout=5).read()
urllib.request.urlopen(urllib.request.Request("http://db:8080/", data=answer, method="PUT"), timeout=5)
PY
"""
CHECK_IN_DB = """#!/bin/sh
# runs in the db service: /scratch is db's own tmpfs, main has no such file
if [ "$(cat /scratch/submitted 2>/dev/null)" = seeded-42 ] && [ ! -e /app/answer.txt ]; then echo 1; else echo 0; fi \\
  > /logs/verifier/reward.txt
"""


def test_verifier_service_runs_the_verifier_in_that_sibling(tmp_path: Path) -> None:
    task = copy_task(tmp_path, "verify-in-db")
    doc = task / "task.md"
    doc.write_text(doc.read_text().replace("verifier: {timeout_sec: 60.0}", "verifier: {timeout_sec: 60.0, service: db}"))
    (task / "oracle" / "solve.sh").write_text(SUBMIT)
    (task / "verifier" / "test.sh").write_text(CHECK_IN_DB)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs))
    assert done.returncode == 0, done.stderr
    [result] = results(jobs)
    assert result["rewards"] == {"reward": 1.0}, result.get("verifier_error") or result.get("error")
    assert (next(job_dir(jobs).glob("verify-in-db__*")) / "verifier" / "reward.txt").read_text().strip() == "1"


async def test_an_undeclared_port_clash_fails_the_start_with_the_service_log(tmp_path: Path) -> None:
    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM benchflow/python:3.11-bookworm\n")
    server = ["python3", "-m", "http.server", "--bind", "127.0.0.1", "8090"]
    (env / "docker-compose.yaml").write_text(json.dumps({"services": {
        "main": {"depends_on": {"two": {"condition": "service_healthy"}}},
        "one": {"image": "benchflow/python:3.11-bookworm", "command": server},
        "two": {"image": "benchflow/python:3.11-bookworm", "depends_on": ["one"],
                "command": ["sh", "-c", "sleep 1; exec " + " ".join(server)],
                "healthcheck": {"test": "false", "interval": "1s", "retries": 100}}}}))
    spec = SandboxSpec(name="pod-clash", environment_dir=env, cache_key="pod-clash", network_mode="no-network",
                       compose_file=env / "docker-compose.yaml")
    box = get_backend("docker").create(spec)
    await box.build()
    with pytest.raises(Exception) as caught:
        await box.start()
    assert "service 'two' exited" in str(caught.value) and "Address already in use" in str(caught.value)
    assert "port taken by another service" in str(caught.value)
    assert not get_backend("docker").exists(box.sandbox_id)


async def test_siblings_share_mains_network_only_and_keep_the_hardening(tmp_path: Path) -> None:
    task = copy_task(tmp_path, "inspect")
    env = task / "environment"
    spec = SandboxSpec(name="pod-inspect", environment_dir=env, cache_key="pod-inspect", network_mode="no-network",
                       compose_file=env / "docker-compose.yaml", cpus=0.5, memory_mb=256)
    box = get_backend("docker").create(spec)
    await box.build()
    await box.start()
    try:
        db = box.service("db")
        host = box.api.inspect_container(db.sandbox_id)["HostConfig"]
        assert host["NetworkMode"] == f"container:{box.sandbox_id}"
        assert "no-new-privileges" in host["SecurityOpt"] and host["CapDrop"] == ["ALL"]
        assert set(host["CapAdd"]) <= {f"CAP_{c}" for c in KEPT_CAPABILITIES} | set(KEPT_CAPABILITIES)
        assert host["PidsLimit"] == pids_limit() and host["Memory"] == 256 << 20
        links = await db.exec(["sh", "-c", "ls /sys/class/net"])
        assert links.stdout.split() == ["lo"], "no-network must hold for every service of the pod"
        fetch = "import urllib.request; print(urllib.request.urlopen('http://db:8080/answer', timeout=5).read().decode())"
        answer = await box.exec(["python3", "-c", fetch])
        assert answer.stdout.strip() == "seeded-42"
        seen = await db.exec(["sh", "-c", "cat /data/answer; touch /data/x"])
        assert seen.stdout.strip() == "seeded-42" and seen.return_code != 0  # mounted read-only there
        with pytest.raises(Exception, match="no service 'nope'"):
            box.service("nope")
        pod = box.pod.id
    finally:
        await box.stop()
    import docker

    client = docker.from_env()
    assert client.containers.list(all=True, sparse=True, filters={"label": f"benchflow.pod={pod}"}) == []
    assert client.volumes.list(filters={"label": f"benchflow.pod={pod}"}) == []


def test_kill_9_mid_trial_then_a_rerun_removes_every_container_and_volume(tmp_path: Path) -> None:
    task = copy_task(tmp_path, "killed")
    (task / "oracle" / "solve.sh").write_text("#!/bin/sh\nsleep 8\n"
                                              + (TWO_SERVICE / "oracle" / "solve.sh").read_text())
    jobs = tmp_path / "jobs"
    cmd = [sys.executable, "-m", "benchflow.cli", "run", str(tmp_path / "tasks"), "-s", "docker",
           "--jobs-dir", str(jobs)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: list(jobs.rglob("sandbox.json")), timeout=180, what="the trial's sandbox")
        job = job_dir(jobs)
        wait_until(lambda: len(pod_leftovers(job)[0]) == 3, timeout=60, what="main, seed and db")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    containers, volumes = pod_leftovers(job)
    assert len(containers) == 3 and len(volumes) == 1, "the kill did not land mid-trial"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs))
    assert done.returncode == 0, done.stderr
    assert [r["rewards"] for r in results(jobs)] == [{"reward": 1.0}]
    assert pod_leftovers(job) == ([], [])
