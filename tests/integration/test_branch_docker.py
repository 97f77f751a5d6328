"""``bench branch`` with the oracle on Docker: children with different prompts from one snapshot reach
different rewards, a nested fork, isolated/concurrent children agree with sequential restores, a
kill -9 mid-branch is finished by a rerun with nothing leaked, a trial whose sandbox never started still
reports its tree, and what cannot branch is refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS, ROOT
from tests.waiting import wait_until

pytestmark = pytest.mark.docker

TASK = FIXTURE_TASKS / "branch-prompts"
CHILDREN = ["--child", "label=good,prompt=write done", "--child", "label=bad,prompt=write nope, really",
            "--child", "label=more,parent=good,prompt=append !", "--child", "label=same,parent=good,prompt=append "]


def _job(jobs: Path) -> Path:
    [job] = list(jobs.glob("branch-*"))
    return job


def _leftovers(job: Path) -> tuple[list, list]:
    import docker

    client = docker.from_env()
    try:
        label = f"benchflow.job={job.resolve()}"
        return (client.api.containers(all=True, filters={"label": label}),
                client.api.images(filters={"label": [label, "benchflow.kind=snapshot"]}))
    finally:
        client.close()


def _rewards(bench, target: Path) -> dict[str, tuple[float | None, float | None]]:
    shown = bench("eval", "branches", str(target), "--json")
    assert shown.returncode == 0, shown.stderr
    [view] = json.loads(shown.stdout)
    assert view["kind"] == "benchflow.branch-view" and view["schema_version"] == 1
    return {c["node"]: (c["reward"], c["advantage"]) for f in view["forks"] for c in f["children"]}


def test_oracle_children_from_one_snapshot_reach_different_rewards(bench, tmp_path: Path) -> None:
    done = bench("branch", "--tasks-dir", str(TASK), "--agent", "oracle", "--sandbox", "docker",
                 "--jobs-dir", str(tmp_path), *CHILDREN)
    assert done.returncode == 0, done.stderr + done.stdout
    job = _job(tmp_path)
    [trial] = [p for p in job.iterdir() if p.name.startswith("branch-prompts__")]
    tree = json.loads((trial / "tree.json").read_text())
    assert [(f["id"], f["parent_node"], f["children"], f["status"], f["snapshot_kept"]) for f in tree["forks"]] == [
        ("fork-0", None, ["good", "bad"], "complete", False), ("fork-good", "good", ["more", "same"], "complete", False)]
    good = json.loads((trial / "branches/fork-0/children/good/observation.json").read_text())
    assert good["status"] == "passed" and good["reward"] == 1.0 and good["request"]["prompts"] == ["write done"]
    assert (trial / "branches/fork-0/children/bad/agent/oracle.txt").is_file()
    assert "write nope, really" in (trial / "branches/fork-0/children/bad/verifier/test-stdout.txt").read_text()
    # the nested children start from good's state (its answer), not from the first snapshot
    assert _rewards(bench, job) == {"good": (1.0, 1.0), "bad": (0.0, -1.0), "more": (0.5, -0.5),
                                    "same": (1.0, 0.5)}
    assert _rewards(bench, trial)["more"] == (0.5, -0.5)
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"]["reward"] == 1.0  # --parent continue: restored, sent its prompt, verified
    assert result["branch"]["finished"] == 4
    assert _leftovers(job) == ([], [])
    assert bench("results", str(job)).returncode == 0
    import benchflow as bf

    assert bf.load_trial(trial) is not None


def test_isolated_and_concurrent_children_agree_with_sequential_restores(bench, tmp_path: Path) -> None:
    seen = {}
    for name, flags in (("seq", []), ("iso", ["--isolate-children"]), ("conc", ["--concurrency", "2"])):
        done = bench("branch", "--tasks-dir", str(TASK), "--agent", "oracle", "--sandbox", "docker",
                     "--jobs-dir", str(tmp_path / name), "--parent", "discard", *flags, *CHILDREN)
        assert done.returncode == 0, done.stderr + done.stdout
        job = _job(tmp_path / name)
        seen[name] = _rewards(bench, job)
        tree = json.loads(next(job.glob("*/tree.json")).read_text())
        assert tree["forks"][0]["isolated"] is bool(flags)
        assert _leftovers(job) == ([], [])
    assert seen["seq"] == seen["iso"] == seen["conc"]


def test_children_in_turns_agree_with_restores_of_one_sandbox(bench, tmp_path: Path) -> None:
    # flat children take turns (each later one in a sandbox started from the snapshot); with
    # --stop-on-child-failure they restore the one sandbox between children instead
    # ("same" appends nothing: 1.0 only if it saw good's answer instead of the snapshot)
    flat = ["--child", "label=good,prompt=write done", "--child", "label=same,prompt=append ",
            "--child", "label=bad,prompt=write nope", "--child", "label=again,prompt=write done"]
    seen = {}
    for name, flags in (("turns", []), ("restores", ["--stop-on-child-failure"])):
        done = bench("branch", "--tasks-dir", str(TASK), "--agent", "oracle", "--sandbox", "docker",
                     "--jobs-dir", str(tmp_path / name), *flags, *flat)
        assert done.returncode == 0, done.stderr + done.stdout
        job = _job(tmp_path / name)
        seen[name] = _rewards(bench, job)
        result = json.loads(next(job.glob("*/result.json")).read_text())
        assert result["rewards"]["reward"] == 1.0  # --parent continue after the children
        assert _leftovers(job) == ([], [])
    assert seen["turns"] == seen["restores"]
    assert {node: reward for node, (reward, _) in seen["turns"].items()} == {
        "good": 1.0, "same": 0.0, "bad": 0.0, "again": 1.0}


def test_kill_9_mid_branch_then_rerun_finishes_only_the_rest(bench, tmp_path: Path) -> None:
    args = ["branch", "--tasks-dir", str(TASK), "--agent", "oracle", "--sandbox", "docker", "--jobs-dir",
            str(tmp_path), "--child", "label=first,prompt=write done", "--child", "label=slow,prompt=sleep 20",
            "--child", "label=last,prompt=write no"]
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        def status(child: str) -> str | None:
            found = list(tmp_path.glob(f"branch-*/*/branches/fork-0/children/{child}/observation.json"))
            return json.loads(found[0].read_text())["status"] if found else None

        # children take turns only for their agents: first's verifier may still run when slow's agent starts
        wait_until(lambda: status("slow") == "running" and status("first") == "passed", timeout=240,
                   what="the first child's verdict and the slow child's start")
        wait_until(lambda: _leftovers(_job(tmp_path))[0], timeout=60, what="the slow child's container")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    job = _job(tmp_path)
    trial = next(job.glob("branch-prompts__*"))
    first = json.loads((trial / "branches/fork-0/children/first/observation.json").read_text())
    assert first["reward"] == 1.0 and not (trial / "result.json").exists()
    containers, images = _leftovers(job)
    assert containers and images  # what the kill left behind
    done = bench(*args)
    assert done.returncode == 0, done.stderr + done.stdout
    assert _job(tmp_path) == job  # the same request resumed its job
    again = json.loads((trial / "branches/fork-0/children/first/observation.json").read_text())
    assert again == first  # a finished child is not run again
    assert _rewards(bench, job) == {"first": (1.0, 0.5), "slow": (1.0, 0.5), "last": (0.0, -1.0)}
    assert _leftovers(job) == ([], [])


def test_a_sandbox_without_snapshots_is_refused_before_anything_starts(bench, tmp_path: Path) -> None:
    from tests.doubles.docker_variant import PLUGIN_PATH

    env = {"PYTHONPATH": os.pathsep.join([str(PLUGIN_PATH), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = bench("branch", "--tasks-dir", str(TASK), "--agent", "oracle", "--sandbox", "docker-variant",
                 "--jobs-dir", str(tmp_path), *CHILDREN, env=env)
    assert done.returncode == 2
    assert "docker-variant has no snapshots" in done.stderr and done.stderr.count("\n") <= 2
    assert not list(tmp_path.glob("branch-*"))


def test_resume_session_is_refused_with_the_reason(bench, tmp_path: Path) -> None:
    done = bench("branch", "--tasks-dir", str(TASK), "--agent", "oracle", "--sandbox", "docker",
                 "--jobs-dir", str(tmp_path), "--resume-session", *CHILDREN)
    assert done.returncode == 2 and "loadSession" in done.stderr


def test_a_ca_bundle_reaches_every_child_and_a_missing_one_is_refused_first(bench, tmp_path: Path) -> None:
    from tests.taskgen import make_task

    task = make_task(tmp_path / "tasks", "ca", test='[ "$(cat /app/answer.txt)" = done ] && echo 1 > '
                     '/logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt',
                     solve='mkdir -p /app; cmp -s "$SSL_CERT_FILE" /usr/local/share/ca-certificates/benchflow-ca.crt '
                           '&& grep -q BENCHFLOW-TEST-CA "$SSL_CERT_FILE" && echo done > /app/answer.txt')
    missing = bench("branch", "--tasks-dir", str(task), "--agent", "oracle", "--jobs-dir", str(tmp_path / "jobs"),
                    "--child", "label=a", "--child", "label=b", "--ca-bundle", str(tmp_path / "no.pem"))
    assert missing.returncode == 2 and "no such file" in missing.stderr and not (tmp_path / "jobs").exists()
    import ssl

    bundle = tmp_path / "ca.pem"
    bundle.write_text(ssl.DER_cert_to_PEM_cert(b"BENCHFLOW-TEST-CA").replace(
        "-----END CERTIFICATE-----", "BENCHFLOW-TEST-CA\n-----END CERTIFICATE-----"))
    done = bench("branch", "--tasks-dir", str(task), "--agent", "oracle", "--jobs-dir", str(tmp_path / "jobs"),
                 "--child", "label=a", "--child", "label=b", "--ca-bundle", str(bundle))
    assert done.returncode == 0, done.stderr + done.stdout
    assert _rewards(bench, _job(tmp_path / "jobs")) == {"a": (1.0, 0.0), "b": (1.0, 0.0)}


def test_a_branched_trial_whose_sandbox_never_started_still_reports_its_tree(bench, tmp_path: Path) -> None:
    from tests.taskgen import DOCKERFILE, make_task

    task = make_task(tmp_path / "tasks", "broken", test="echo 1 > /logs/verifier/reward.txt",
                     dockerfile=DOCKERFILE + "RUN exit 3\n")
    done = bench("branch", "--tasks-dir", str(task), "--agent", "oracle", "--sandbox", "docker",
                 "--jobs-dir", str(tmp_path), *CHILDREN[:4])
    assert done.returncode == 1, done.stderr + done.stdout
    [trial] = [p for p in _job(tmp_path).iterdir() if p.name.startswith("broken__")]
    result = json.loads((trial / "result.json").read_text())
    assert result["error_category"] == "sandbox_setup"
    assert result["branch"] == {"tree": "tree.json", "parent": "continue", "forks": 1, "children": 2,
                                "finished": 0, "best_reward": None}
    assert json.loads((trial / "config.json").read_text())["task_name"] == "broken"
    assert _leftovers(_job(tmp_path)) == ([], [])
