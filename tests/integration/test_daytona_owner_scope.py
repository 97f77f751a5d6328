"""``BENCHFLOW_DAYTONA_OWNER`` and ``bench sandbox list --all`` on Daytona, against the Daytona API double:
one account shared by several owners, and sandboxes BenchFlow did not make."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.taskgen import PASS_IF_HELLO, make_task


def _ours(owner: str | None, job: str) -> dict[str, str]:
    """The labels of a Daytona sandbox a killed BenchFlow run of ``owner`` left (its pid is not running)."""
    return {"benchflow.owned": "true", "benchflow.backend": "daytona", "benchflow.job": job,
            "benchflow.trial": "t1", "benchflow.pid": "999999999", "benchflow.host": socket.gethostname(),
            **({"benchflow.owner": owner} if owner else {})}


def _listed(env: dict[str, str], *args: str) -> dict[str, dict]:
    done = run_bench("sandbox", "list", "--json", *args, env=env)
    assert done.returncode == 0, done.stderr
    return {row["id"]: row for row in json.loads(done.stdout) if row["sandbox"] == "daytona"}


def test_the_owner_sees_only_its_sandboxes_and_all_lists_the_account(tmp_path: Path, daytona_double) -> None:
    double = daytona_double.double
    alice = double.add_sandbox(_ours("alice", f"job-{tmp_path.name}"))
    bob = double.add_sandbox(_ours("bob", f"job-{tmp_path.name}"))
    console = double.add_sandbox({"team": "made-in-the-console"}, state="started")
    mine = {alice, bob, console}
    as_alice = daytona_double.env() | {"BENCHFLOW_DAYTONA_OWNER": "alice"}

    assert set(_listed(as_alice)) & mine == {alice}
    assert set(_listed(daytona_double.env())) & mine == {alice, bob}, "no owner set: every BenchFlow sandbox"
    everything = _listed(as_alice, "--all")
    assert {key: (row["account_owner"], row["foreign"]) for key, row in everything.items() if key in mine} == {
        alice: ("alice", False), bob: ("bob", False), console: (None, True)}
    table = run_bench("sandbox", "list", "--all", env=as_alice)
    assert table.returncode == 0, table.stderr
    assert "not BenchFlow" in next(line for line in table.stdout.splitlines() if console[:12] in line)

    refused = run_bench("sandbox", "cleanup", "--id", console, env=as_alice)
    assert refused.returncode == 1 and "no BenchFlow sandbox has this id" in refused.stderr
    # --dry-run: other tests' sandboxes on this machine's engine must not go
    would = run_bench("sandbox", "cleanup", "--all", "--dry-run", "--json", env=as_alice)
    assert would.returncode == 0, would.stderr
    assert {row["id"] for row in json.loads(would.stdout)["removed"]} & mine == {alice}, \
        "cleanup takes only this owner's: never another owner's, nor a sandbox BenchFlow did not make"
    cleaned = run_bench("sandbox", "cleanup", "--id", alice, env=as_alice)
    assert cleaned.returncode == 0, cleaned.stderr
    assert alice not in double.boxes and {bob, console} <= set(double.boxes)
    double.boxes.pop(bob)
    double.boxes.pop(console)


@pytest.mark.docker
def test_a_sandbox_bench_creates_carries_its_owner(tmp_path: Path, daytona_double) -> None:
    make_task(tmp_path / "tasks", "owned", test=PASS_IF_HELLO)
    as_carol = daytona_double.env() | {"BENCHFLOW_DAYTONA_OWNER": "carol"}
    made = run_bench("sandbox", "create", str(tmp_path / "tasks" / "owned"), "--sandbox", "daytona", env=as_carol)
    assert made.returncode == 0, made.stderr
    sandbox_id = made.stdout.rsplit("--id ", 1)[1].strip()
    [row] = [row for key, row in _listed(as_carol).items() if key.startswith(sandbox_id)]
    assert (row["account_owner"], row["kept"]) == ("carol", True)
    as_dave = daytona_double.env() | {"BENCHFLOW_DAYTONA_OWNER": "dave"}
    assert not [key for key in _listed(as_dave) if key.startswith(sandbox_id)]
    assert run_bench("sandbox", "cleanup", "--id", sandbox_id, env=as_dave).returncode == 1, \
        "another owner cannot clean it up"
    cleaned = run_bench("sandbox", "cleanup", "--id", sandbox_id, env=as_carol)
    assert cleaned.returncode == 0, cleaned.stderr
    assert not [key for key in _listed(as_carol, "--all") if key.startswith(sandbox_id)]
