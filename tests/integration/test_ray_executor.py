"""``bench run --executor ray`` on a real two-node Ray cluster on this machine (Ray's own cluster
utilities: a head and a worker node, each its own raylet, both on this machine, sandboxes in this
machine's Docker engine): trials land on both nodes and the driver alone writes the job folder;
the attempt waiting for a run slot makes its sandbox while a running one's verifier runs; a
node killed mid-run loses nothing; Ctrl-C then ``bench eval resume`` finishes the job; the
``ray://`` (Ray Client) spelling runs the job too; a
model-calling agent (the scripted ACP double) on a node reaches the fake upstream only through
the driver's gateway."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.doubles.fake_model_server import FakeModelServer
from tests.integration.test_agent_pipeline import (
    PYTHON_IMAGE,
    UPSTREAM_KEY,
    fake_agent_file,
)
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task
from tests.waiting import wait_until

pytestmark = [pytest.mark.docker, pytest.mark.serial]

FAST_HEALTH_CHECKS = {"health_check_period_ms": 500, "health_check_failure_threshold": 3,
                      "health_check_initial_delay_ms": 0}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """A head and a worker node of one CPU each (so two trials at once must use both), torn down
    whatever happens. Each node keeps its running trials under $BENCHFLOW_RAY_SCRATCH/benchflow-ray/<node>."""
    from ray.cluster_utils import Cluster

    scratch = tmp_path_factory.mktemp("ray-scratch")
    patch = pytest.MonkeyPatch()
    patch.setenv("BENCHFLOW_RAY_SCRATCH", str(scratch))  # the nodes' processes inherit it
    temp_dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"bfray-{os.getpid()}"  # short: Ray's socket paths
    # Ray's default temp folder (where Cluster writes the current cluster's address) inside ours, made
    # here: Ray does not make it, and on a machine that never ran Ray before /tmp/ray is not there
    patch.setenv("RAY_TMPDIR", str(temp_dir))
    (temp_dir / "ray").mkdir(parents=True, exist_ok=True)
    client_port = _free_port()
    made = None
    try:
        made = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "include_dashboard": False, "temp_dir": str(temp_dir),
            "ray_client_server_port": client_port, "_system_config": FAST_HEALTH_CHECKS})
        made.add_node(num_cpus=1)
        made.wait_for_nodes()
        made.scratch = scratch / "benchflow-ray"
        made.client_address = f"ray://127.0.0.1:{client_port}"
        yield made
    finally:
        if made is not None:
            made.shutdown()
        patch.undo()
        shutil.rmtree(temp_dir, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _env(cluster, **extra: str) -> dict[str, str]:
    return {**os.environ, "NO_COLOR": "1", "RAY_ADDRESS": cluster.address, "BENCHFLOW_RETRY_BACKOFF_SEC": "0.1",
            **extra}


def _tasks(root: Path, names: str, sleep: float) -> Path:
    for name in names:
        make_task(root / "tasks", name, solve=f"sleep {sleep}; " + WRITE_HELLO, test=PASS_IF_HELLO)
    return root / "tasks"


def _only_job(jobs: Path) -> Path:
    (job,) = [p for p in jobs.iterdir() if p.is_dir()]
    return job


def _trials(job: Path) -> list[tuple[dict, dict]]:
    """(config, result) of every trial folder with a result."""
    return [(json.loads((p.parent / "config.json").read_text()), json.loads(p.read_text()))
            for p in sorted(job.glob("*/result.json"))]


def _containers(job: Path, running: bool = False) -> list[dict]:
    import docker

    return docker.from_env().api.containers(all=not running, filters={"label": f"benchflow.job={job.resolve()}"})


def _running_on(cluster, node) -> list[Path]:
    """Trial folders being written on ``node`` right now (its scratch, config.json already there)."""
    return sorted((cluster.scratch / node.node_id[:16]).glob("*/job/*/*/config.json"))


def _node_ids(cluster) -> set[str]:
    return {node.node_id for node in cluster.list_all_nodes()}


def test_trials_land_on_both_nodes_and_only_the_driver_writes_the_job(cluster, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(_tasks(tmp_path, "abcd", 1)), "-s", "docker", "-j", "2", "--executor", "ray",
                     "--jobs-dir", str(jobs), env=_env(cluster), timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "Outcomes: 4 scored (4 passed, 0 failed), 0 unscored, 0 errored" in done.stdout
    job = _only_job(jobs)
    trials = _trials(job)
    assert sorted(c["task_name"] for c, _ in trials) == ["a", "b", "c", "d"]
    assert {c["executor"]["node_id"] for c, _ in trials} == _node_ids(cluster)  # both nodes ran trials
    assert all(c["executor"]["kind"] == "ray" and c["task_path"] == str(tmp_path / "tasks" / c["task_name"])
               for c, _ in trials)  # the driver's task folder is recorded, not a node's scratch copy
    for config, result in trials:  # each folder whole: the verifier's files came back with it
        assert result["rewards"] == {"reward": 1.0}
        assert (job / result["trial_name"] / "verifier" / "reward.txt").read_text().strip() == "1"
    assert not [p for p in job.iterdir() if p.name.startswith(".incoming")]
    assert not list(cluster.scratch.glob("*/*"))  # the nodes removed their scratch folders
    summary = json.loads((job / "summary.json").read_text())
    assert (summary["total"], summary["passed"]) == (4, 4)
    assert json.loads((job / "evaluation.json").read_text())["run_config"]["executor"] == "ray"


def test_the_attempt_waiting_for_a_run_slot_makes_its_sandbox_while_a_verifier_runs(cluster, tmp_path: Path) -> None:
    """-j 2 on two one-CPU nodes: the third attempt (the --warm-pool one) is sent, held, to the node of
    a running attempt whose verifier has started, so three sandboxes exist while both verifiers wait
    (for a gate file the test writes into each sandbox)."""
    gate = "while [ ! -f /tmp/gate ]; do sleep 0.1; done; "
    for name in "ghi":
        make_task(tmp_path / "tasks", name, solve=WRITE_HELLO, test=gate + PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "run", str(tmp_path / "tasks"), "-s", "docker",
                             "-j", "2", "--executor", "ray", "--jobs-dir", str(jobs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(cluster))
    try:
        running = wait_until(lambda: jobs.is_dir() and any(jobs.iterdir())
                             and len(found := _containers(_only_job(jobs), running=True)) == 3 and found,
                             timeout=120, what="three sandboxes while both verifiers wait at their gate")
        import docker

        client = docker.from_env()
        for container in running:
            client.containers.get(container["Id"]).exec_run(["touch", "/tmp/gate"])
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 0, err + out
    assert "Outcomes: 3 scored (3 passed, 0 failed), 0 unscored, 0 errored" in out


def test_ray_client_address_runs_the_job_on_the_cluster(cluster, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    env = {key: value for key, value in _env(cluster).items() if key != "RAY_ADDRESS"}
    done = run_bench("run", str(_tasks(tmp_path, "mn", 0)), "-s", "docker", "-j", "2",
                     "--executor", cluster.client_address, "--jobs-dir", str(jobs), env=env, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    trials = _trials(_only_job(jobs))
    assert sorted(c["task_name"] for c, _ in trials) == ["m", "n"]
    assert all(c["executor"]["node_id"] in _node_ids(cluster) for c, _ in trials)


def test_bf_run_uses_the_callers_ray_connection_and_leaves_it_open(cluster, tmp_path: Path) -> None:
    import ray

    import benchflow as bf

    ray.init(address=cluster.address, log_to_driver=False)
    try:
        outcome = bf.run(str(_tasks(tmp_path, "uv", 0)), sandbox="docker", concurrency=2, executor="ray",
                         jobs_dir=str(tmp_path / "jobs"))
        assert outcome.exit_code == 0 and outcome.summary["passed"] == 2
        assert ray.is_initialized()  # the caller's connection, not the run's to close
        assert ray.get(ray.put("still connected")) == "still connected"
    finally:
        ray.shutdown()


def test_ctrl_c_cancels_the_cluster_trials_and_eval_resume_finishes_the_job(cluster, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "run", str(_tasks(tmp_path, "xy", 8)),
                             "-s", "docker", "-j", "2", "--executor", "ray", "--jobs-dir", str(jobs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(cluster))
    try:
        wait_until(lambda: jobs.is_dir() and any(jobs.iterdir()) and len(_containers(_only_job(jobs))) == 2,
                   timeout=120, what="both trials' sandboxes running")
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    job = _only_job(jobs)
    assert [r for _, r in _trials(job) if r.get("rewards")] == []
    assert _containers(job) == []  # the nodes removed the cancelled trials' sandboxes before the driver left
    done = run_bench("eval", "resume", str(job), env=_env(cluster), timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    finished = [(c, r) for c, r in _trials(job) if r.get("rewards")]
    assert sorted(c["task_name"] for c, _ in finished) == ["x", "y"]
    assert all(c["executor"]["kind"] == "ray" for c, _ in finished)  # resumed on the cluster, as recorded


def test_an_agent_on_a_node_reaches_the_model_through_the_drivers_gateway(cluster, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import benchflow as bf

    steps = [{"op": "ask_model", "api": "openai", "prompt": "what is six times seven?"},
             {"op": "tool", "id": "tc_write", "write": {"path": "answer.txt", "content": "42"}},
             {"op": "message", "text": "done"}]
    make_task(tmp_path / "tasks", "ask", dockerfile=PYTHON_IMAGE, network="no-network",
              test='[ "$(cat /app/answer.txt)" = 42 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt')
    jobs = tmp_path / "jobs"
    events: list[dict] = []
    with FakeModelServer() as upstream:  # only the driver has the key and the upstream's address
        for key, value in {"RAY_ADDRESS": cluster.address, "OPENAI_API_KEY": UPSTREAM_KEY,
                           "OPENAI_BASE_URL": upstream.url + "/v1"}.items():
            monkeypatch.setenv(key, value)
        outcome = bf.run(str(tmp_path / "tasks"), sandbox="docker", executor="ray", jobs_dir=str(jobs),
                         agent=str(fake_agent_file(tmp_path)), model="gpt-4o-mini",
                         agent_env={"FAKE_ACP_SCRIPT": json.dumps({"prompts": [steps]})}, on_event=events.append)
        assert outcome.exit_code == 0, outcome.summary
        assert [r["headers"]["authorization"] for r in upstream.requests] == [f"Bearer {UPSTREAM_KEY}"]
    phases = [e["phase"] for e in events if e["type"] == "phase"]
    assert phases[0] == "start" and {"install", "agent", "verifier"} <= set(phases)  # the node's, over the link
    ((config, result),) = _trials(_only_job(jobs))
    assert config["executor"]["node_id"] in _node_ids(cluster)
    assert result["rewards"] == {"reward": 1.0}
    assert result["agent_result"]["usage_source"] == "provider_response"  # the gateway's count came back
    trial = _only_job(jobs) / result["trial_name"]
    exchanges = (trial / "trajectory" / "llm_trajectory.jsonl").read_text().splitlines()
    assert len(exchanges) == 1 and json.loads(exchanges[0])["response"]["status_code"] == 200
    assert UPSTREAM_KEY not in "".join(p.read_text(errors="replace") for p in jobs.rglob("*") if p.is_file())


def test_a_node_killed_mid_run_loses_nothing(cluster, tmp_path: Path) -> None:
    victim = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    jobs = tmp_path / "jobs"
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "run", str(_tasks(tmp_path, "pqr", 6)),
                             "-s", "docker", "-j", "3", "--executor", "ray", "--jobs-dir", str(jobs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(cluster))
    try:
        (running,) = wait_until(lambda: _running_on(cluster, victim), timeout=120,
                                what="a trial running on the third node")
        lost_task = json.loads(running.read_text())["task_name"]
        cluster.remove_node(victim, allow_graceful=False)  # SIGKILL: its raylet and everything it ran
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 0, err + out
    assert "Outcomes: 3 scored (3 passed, 0 failed), 0 unscored, 0 errored" in out
    job = _only_job(jobs)
    trials = _trials(job)
    lost = [(c, r) for c, r in trials if c["task_name"] == lost_task and r["attempt"] == 1]
    assert [r["error_category"] for _, r in lost] == ["infra_failure"]  # recorded, not silently dropped
    retried = [r for c, r in trials if c["task_name"] == lost_task and r["attempt"] == 2]
    assert [r["rewards"] for r in retried] == [{"reward": 1.0}]
    assert {c["executor"]["node_id"] for c, r in trials if r.get("rewards")} <= _node_ids(cluster) - {victim.node_id}
    assert sorted(c["task_name"] for c, r in trials if r.get("rewards")) == ["p", "q", "r"]
    wait_until(lambda: _containers(job) == [], timeout=60, what="the lost node's sandbox removed")
