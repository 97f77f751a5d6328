"""allowlist networking for branch children and checkpoint retries on Docker: a child (in a sandbox
restored from the snapshot) and a retry reach the allowed host through their own egress proxy, never
another host, and each records its requests in its own egress.jsonl."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.integration.test_allowlist_network import Server

pytestmark = pytest.mark.docker

# "fetch" asks the allowed host and the denied one through the proxy; anything else does nothing
SOLVE = r'''#!/bin/sh
[ "$BENCHFLOW_PROMPT" = fetch ] || exit 0
python3 - <<'PY'
import json, urllib.error, urllib.request
out = dict()
out["allowed"] = urllib.request.urlopen("http://allowed.test:{allowed}/", timeout=10).read().decode()
try:
    urllib.request.urlopen("http://denied.test:{denied}/", timeout=10)
    out["denied"] = "answered"
except urllib.error.HTTPError as exc:
    out["denied"] = exc.code
open("/app/out.json", "w").write(json.dumps(out))
PY
'''
TEST = r'''#!/bin/sh
mkdir -p /logs/verifier
python3 - <<'PY'
import json
try:
    out = json.load(open("/app/out.json"))
except OSError:
    out = None
open("/logs/verifier/reward.txt", "w").write("1" if out == {{"allowed": "{token}", "denied": 403}} else "0")
print(out)
PY
'''
RESOLVE = {"BENCHFLOW_EGRESS_RESOLVE": "allowed.test=127.0.0.1,denied.test=127.0.0.1"}


@pytest.fixture
def egress_task(tmp_path: Path):
    token = secrets.token_hex(8)
    allowed, denied = Server(token), Server("must never be reached")
    task = tmp_path / "tasks" / "egress"
    for sub in ("environment", "oracle", "verifier"):
        (task / sub).mkdir(parents=True)
    (task / "task.md").write_text(
        "---\nschema_version: '1.3'\nagent: {timeout_sec: 60}\nverifier: {timeout_sec: 60}\n"
        "sandbox: {network_mode: allowlist, allowed_hosts: [allowed.test]}\n---\n\n## prompt\n\nFetch.\n")
    (task / "environment" / "Dockerfile").write_text("FROM benchflow/python:3.11-bookworm\nWORKDIR /app\n")
    (task / "oracle" / "solve.sh").write_text(SOLVE.format(allowed=allowed.port, denied=denied.port))
    (task / "verifier" / "test.sh").write_text(TEST.format(token=token))
    try:
        yield task, allowed, denied
    finally:
        allowed.close()
        denied.close()


def _requests(folder: Path) -> list[tuple]:
    log = [json.loads(line) for line in (folder / "egress.jsonl").read_text().splitlines()]
    return sorted((e["method"], e["host"], e["allowed"], e["status"]) for e in log)


FETCHED = [("GET", "allowed.test", True, 200), ("GET", "denied.test", False, 403)]


def _remove_kept_checkpoints(trial: Path) -> None:
    """--checkpoints keeps its snapshots on purpose (tree.json lists them): the test removes them."""
    from benchflow.sandbox import get_backend

    tree = json.loads((trial / "tree.json").read_text())
    kept = [c["snapshot"] for c in tree.get("checkpoints") or [] if c.get("kept") and c.get("snapshot")]
    assert get_backend("docker").remove_snapshots(kept) == {}


def test_branch_children_reach_only_the_allowed_host_through_their_own_proxy(tmp_path: Path, egress_task) -> None:
    task, allowed, denied = egress_task
    jobs = tmp_path / "jobs"
    # the second child runs in a sandbox restored from the snapshot: a new container, its own proxy
    done = run_bench("branch", "--tasks-dir", str(task), "--agent", "oracle", "--sandbox", "docker", "--jobs-dir",
                     str(jobs), "--parent", "discard", "--child", "label=first,prompt=fetch",
                     "--child", "label=second,prompt=fetch", "--child", "label=idle,prompt=rest", env=RESOLVE)
    assert done.returncode == 0, done.stderr + done.stdout
    [trial] = [p.parent for p in jobs.rglob("tree.json")]
    children = trial / "branches" / "fork-0" / "children"
    rewards = {c: json.loads((children / c / "observation.json").read_text())["reward"]
               for c in ("first", "second", "idle")}
    assert rewards == {"first": 1.0, "second": 1.0, "idle": 0.0}
    assert denied.hits == [] and allowed.hits == ["/", "/"]
    for child in ("first", "second"):
        assert _requests(children / child) == FETCHED
        network = json.loads((children / child / "network.json").read_text())
        assert network["allowed_hosts"] == ["allowed.test"] and network["cloud_metadata"]["blocked"] is True
    assert _requests(children / "idle") == []


def test_a_checkpoint_retry_runs_behind_the_allowlist_proxy(tmp_path: Path, egress_task) -> None:
    task, allowed, denied = egress_task
    jobs = tmp_path / "jobs"
    # the trial does nothing (reward 0); its retry from the checkpoint fetches through its own proxy
    done = run_bench("run", str(task), "-s", "docker", "--jobs-dir", str(jobs), "--prompt", "rest",
                     "--checkpoints", "prompt:1", "--retry-from-checkpoint", "on-failure", "--retry-prompt", "fetch",
                     env=RESOLVE)
    assert done.returncode == 0, done.stderr + done.stdout
    [result_path] = [p for p in jobs.rglob("result.json") if p.parent.name.startswith("egress__")]
    trial = result_path.parent
    _remove_kept_checkpoints(trial)
    result = json.loads(result_path.read_text())
    assert result["rewards"]["reward"] == 0.0
    assert (result["retry"]["status"], result["retry"]["reward"]) == ("passed", 1.0), result["retry"]
    assert denied.hits == [] and allowed.hits == ["/"]
    assert _requests(trial / result["retry"]["path"]) == FETCHED
    assert _requests(trial) == []


def test_a_continued_parent_keeps_its_earlier_egress_records(tmp_path: Path, egress_task) -> None:
    task, allowed, denied = egress_task
    jobs = tmp_path / "jobs"
    # the parent fetches before the checkpoint and again after it (--parent continue): a second proxy,
    # whose requests are added to the parent's egress.jsonl, not written over the first's
    done = run_bench("branch", "--tasks-dir", str(task), "--agent", "oracle", "--sandbox", "docker", "--jobs-dir",
                     str(jobs), "--prompt", "fetch", "--prompt", "fetch", "--checkpoint-after-prompt", "1",
                     "--parent", "continue", "--child", "label=a,prompt=rest", "--child", "label=b,prompt=rest",
                     env=RESOLVE)
    assert done.returncode == 0, done.stderr + done.stdout
    [trial] = [p.parent for p in jobs.rglob("tree.json")]
    assert json.loads((trial / "result.json").read_text())["rewards"]["reward"] == 1.0
    assert denied.hits == [] and allowed.hits == ["/", "/"]
    assert _requests(trial) == sorted(FETCHED * 2)
    network = json.loads((trial / "network.json").read_text())
    assert network["allowed_hosts"] == ["allowed.test"]
    assert network["continued"]["allowed_hosts"] == ["allowed.test"]
