"""``bench assess`` end to end on two real oracle rollouts: release proof from the backend, collector votes,
labels, corrections, withdrawals, and evidence that breaks when one byte changes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.assessgen import PROTOCOL, RUBRIC, Kit, collector_store
from tests.conftest import run_bench
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

SHA = re.compile(r"\b[0-9a-f]{64}\b")


def ok(*args: str) -> str:
    done = run_bench(*args)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def oracle_rollout(tmp_path: Path, job: str) -> Path:
    ok("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs"), "--job-name", job,
       "--freeze-workspace")
    return next((tmp_path / "jobs" / job).glob("hello__*"))


def make_ref(rollout: Path, out: Path, *extra: str) -> Path:
    workspace = rollout / "evidence" / "workspace"
    result = json.loads((rollout / "result.json").read_text())
    ok("assess", "attempt-ref", str(rollout), "--output", str(workspace), "--review-artifact",
       str(workspace / "hello.txt"), "--sandbox-provider", result["environment"], "--out", str(out), *extra)
    return out


@pytest.mark.docker
def test_assessment_lifecycle_on_two_oracle_rollouts(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    rollouts = [oracle_rollout(tmp_path, "first"), oracle_rollout(tmp_path, "second")]
    untouched = {p: p.read_bytes() for r in rollouts for p in r.rglob("*")
                 if p.is_file() and (p.name in ("result.json", "rewards.jsonl") or "trajectory" in p.parts)}
    refs = [make_ref(r, tmp_path / f"ref-{n}.json") for n, r in enumerate(rollouts)]
    (tmp_path / "rubric.json").write_text(json.dumps(RUBRIC))
    (tmp_path / "protocol.json").write_text(json.dumps(PROTOCOL))
    kit = Kit(tmp_path, rollouts, refs, tmp_path / "rubric.json", tmp_path / "protocol.json")
    side = str(kit.sidecar)
    assert kit.sidecar == rollouts[0] / "assessment"

    ok("assess", "create", side, *kit.create_args())

    # The backend observes each attempt's sandbox: gone after the runs; a live one is reported present.
    proof = tmp_path / "proof.json"
    proof.write_text(ok("sandbox", "list", "--release-proof", str(refs[0]), "--release-proof", str(refs[1])))
    observed = json.loads(proof.read_text())
    assert observed["schema"] == "benchflow.assessment-release-proof.v1"
    assert [o["state"] for o in observed["observations"]] == ["absent", "absent"]
    created = ok("sandbox", "create", str(tmp_path / "tasks" / "hello"), "--sandbox",
                 json.loads((rollouts[0] / "result.json").read_text())["environment"])
    live = re.search(r"cleanup --id (\S+)", created).group(1)
    try:
        live_ref = make_ref(rollouts[1], tmp_path / "live-ref.json", "--runtime",
                            f"{observed['observations'][0]['provider']}:{live}:verifier")
        live_proof = run_bench("sandbox", "list", "--release-proof", str(live_ref))
        assert live_proof.returncode == 1 and f"{live} is present" in live_proof.stderr
        states = {o["runtime_id"]: o["state"] for o in json.loads(live_proof.stdout)["observations"]}
        assert states[live] == "present"
    finally:
        ok("sandbox", "cleanup", "--id", live)

    ok("assess", "release", side, "--proof", str(proof))
    ids = collector_store(kit, tmp_path / "store", choice="left")  # B is shown left: "left" prefers B
    db, code = str(tmp_path / "store" / "workspace.sqlite3"), str(Path(__file__).resolve().parents[2] / "src" /
                                                                    "benchflow" / "collector")
    ok("assess", "assign", side, "--collector-db", db, "--collector-code", code, "--assignment", ids["assignment"])
    answer = json.loads(ok("assess", "import-vote", side, "--collector-db", db, "--collector-code", code,
                           "--json"))["event"]
    assert answer["payload"]["choice"] == "right"
    assert "revision 1: 0 (ready)" in ok("assess", "reduce", side)
    receipt = SHA.search(ok("assess", "consume", side, "--revision", "1", "--consumer", "trainer", "--receipt",
                            "ledger-1")).group(0)
    ok("assess", "correct", side, "--supersedes", answer["sha256"], "--choice", "left", "--reason", "A is clearer",
       "--correction-reason", "sides misread", "--actor", "alice")
    assert "revision 2: 1 (ready)" in ok("assess", "reduce", side)
    ok("assess", "withdraw", side, "--revision", "1", "--reason", "sides misread", "--disposition",
       "queued_compensation", "--actor", "ops")
    label = json.loads(ok("assess", "label", side, "--check"))
    assert (label["label"], label["revision"], label["revisions"][0]["withdrawn"]["disposition"]) == (
        1, 2, "queued_compensation")
    assert "Verified" in ok("assess", "verify", side, "--evidence", "--expect-event", receipt)

    # One byte of an attempt's output changes: the evidence no longer verifies.
    hello = rollouts[1] / "evidence" / "workspace" / "hello.txt"
    original = hello.read_bytes()
    hello.write_bytes(b"j" + original[1:])
    broken = run_bench("assess", "verify", side, "--evidence")
    assert broken.returncode == 1 and "evidence attempt B" in broken.stderr
    hello.write_bytes(original)
    ok("assess", "verify", side, "--evidence")

    # One byte of one log event changes: the chain no longer verifies.
    log = kit.sidecar / "events.jsonl"
    data = log.read_bytes()
    at = data.index(b"ledger-1")
    log.write_bytes(data[:at] + b"ledger-2" + data[at + 8:])
    broken = run_bench("assess", "verify", side, "--expect-event", receipt)
    assert broken.returncode == 1 and "sha256 does not match" in broken.stderr

    assert {p: p.read_bytes() for p in untouched} == untouched
