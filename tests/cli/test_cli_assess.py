"""``bench assess`` as a user runs it (subprocess), on saved rollouts and a collector store."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.assessgen import Kit, collector_store, make_kit, write_proof

COMMANDS = ["attempt-ref", "create", "release", "assign", "import-vote", "correct", "retract", "reduce", "consume",
            "withdraw", "show", "verify", "label"]
SHA = re.compile(r"\b[0-9a-f]{64}\b")
REFERENCE_FLAGS = {  # every flag of each command in the CLI reference (shared/seed, `bench assess …`)
    'attempt-ref': ['--output', '--review-artifact', '--sandbox-provider', '--sandbox-role', '--runtime', '--media-type', '--out'],
    'create': ['--attempt', '--rubric', '--rubric-id', '--rubric-version', '--protocol', '--idempotency-key', '--json'],
    'release': ['--proof', '--idempotency-key', '--json'],
    'assign': ['--collector-db', '--collector-code', '--assignment', '--idempotency-key', '--json'],
    'import-vote': ['--collector-db', '--collector-code', '--json'],
    'correct': ['--supersedes', '--choice', '--reason', '--correction-reason', '--actor', '--actor-role', '--tag', '--idempotency-key', '--json'],
    'retract': ['--target', '--reason', '--actor', '--actor-role', '--idempotency-key', '--json'],
    'reduce': ['--json'],
    'consume': ['--revision', '--consumer', '--receipt', '--idempotency-key', '--json'],
    'withdraw': ['--revision', '--reason', '--disposition', '--actor', '--actor-role', '--idempotency-key', '--json'],
    'show': ['--events', '--json'],
    'verify': ['--evidence', '--expect-event', '--json'],
    'label': ['--write', '--check'],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_help_has_every_flag_of_the_reference(bench, command: str) -> None:
    result = bench("assess", command, "--help")
    assert result.returncode == 0
    flags = REFERENCE_FLAGS[command]
    assert flags, command
    for flag in flags:
        assert flag in result.stdout, (command, flag)


@pytest.fixture
def kit(tmp_path: Path) -> Kit:
    return make_kit(tmp_path)


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_attempt_ref_prints_or_writes_a_new_file_only(bench, kit: Kit) -> None:
    rollout = kit.rollouts[0]
    args = ["assess", "attempt-ref", str(rollout), "--output", str(kit.output(0)), "--review-artifact",
            str(kit.output(0) / "hello.txt"), "--runtime", "other:vm-7:verifier", "--media-type", "text/plain"]
    ref = json.loads(ok(bench(*args)))
    assert ref["schema"] == "benchflow.assessment-attempt-ref.v1" and ref["task"]["name"] == "hello"
    assert ref["runtimes"] == [{"provider": "test-provider", "runtime_id": "sbx-a", "role": "solver"},
                               {"provider": "other", "runtime_id": "vm-7", "role": "verifier"}]
    assert ref["review_artifact"]["media_type"] == "text/plain" and ref["output"]["kind"] == "folder"
    assert "reward" not in json.dumps(ref)
    out = kit.root / "new-ref.json"
    assert "Wrote" in ok(bench(*args, "--out", str(out)))
    assert json.loads(out.read_text()) == ref
    again = bench(*args, "--out", str(out))
    assert again.returncode == 2 and "already exists" in again.stderr
    bad = bench("assess", "attempt-ref", str(kit.root), "--output", str(kit.output(0)), "--review-artifact",
                str(kit.output(0) / "hello.txt"))
    assert bad.returncode == 2 and "no result.json" in bad.stderr and "Traceback" not in bad.stderr
    role = bench(*args[:-4], "--runtime", "other:vm-7:judge")
    assert role.returncode == 2 and "judge" in role.stderr


@pytest.mark.parametrize(("edit", "message"), [
    (lambda args: args[:2] + args[4:], "give exactly two"),
    (lambda args: [a.replace("protocol.json", "rubric.json") for a in args], "schema is not"),
    (lambda args: [*args[:4], "--rubric", "/no/such/rubric.md", *args[6:]], "no such file"),
])
def test_create_refuses_bad_input_with_exit_2(bench, kit: Kit, edit, message: str) -> None:
    result = bench("assess", "create", str(kit.sidecar), *edit(kit.create_args()))
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_full_lifecycle_through_the_cli(bench, kit: Kit) -> None:
    side = str(kit.sidecar)
    results_before = {p: p.read_bytes() for p in kit.root.rglob("result.json")}
    created = ok(bench("assess", "create", side, *kit.create_args()))
    assert created.startswith("Recorded created ")
    assert ok(bench("assess", "create", side, *kit.create_args())).startswith("Already recorded created ")
    early = bench("assess", "assign", side, "--collector-db", "x", "--collector-code", "y", "--assignment", "a")
    assert early.returncode == 2
    proof = write_proof(kit, kit.root / "proof.json")
    ok(bench("assess", "release", side, "--proof", str(proof), "--idempotency-key", "rel-1"))
    ids = collector_store(kit, kit.root / "store", choice="right")  # B shown left: "right" is attempt A
    code = kit.root / "collector-code"
    code.mkdir()
    (code / "app.py").write_text("print('collector')\n")
    db = str(kit.root / "store" / "workspace.sqlite3")
    ok(bench("assess", "assign", side, "--collector-db", db, "--collector-code", str(code), "--assignment",
             ids["assignment"]))
    vote = json.loads(ok(bench("assess", "import-vote", side, "--collector-db", db, "--collector-code", str(code),
                               "--json")))
    answer = vote["event"]
    assert answer["payload"]["choice"] == "left" and answer["payload"]["scores"]["A"] == {"clarity": 4.0}
    assert json.loads(ok(bench("assess", "import-vote", side, "--collector-db", db, "--collector-code",
                               str(code), "--json")))["existing"] is True

    due = json.loads(ok(bench("assess", "label", side, "--check")))  # every write refreshes the label file
    assert due["reduce_due"] is True and due["state"] == "pending"
    assert "Recorded label revision 1: 1 (ready)" in ok(bench("assess", "reduce", side))
    assert "Unchanged label revision 1" in ok(bench("assess", "reduce", side))
    assert json.loads(ok(bench("assess", "label", side, "--check")))["label"] == 1
    receipt = ok(bench("assess", "consume", side, "--revision", "1", "--consumer", "trainer", "--receipt",
                       "ledger-17"))
    receipt_sha = SHA.search(receipt).group(0)

    wrong = bench("assess", "correct", side, "--supersedes", answer["sha256"], "--choice", "sideways", "--reason",
                  "r", "--correction-reason", "c", "--actor", "alice")
    assert wrong.returncode == 2 and "--choice" in wrong.stderr
    ok(bench("assess", "correct", side, "--supersedes", answer["sha256"], "--choice", "tie", "--reason", "equal",
             "--correction-reason", "misclick", "--actor", "alice", "--tag", "misclick"))
    assert "Recorded label revision 2: 0.5 (ready)" in ok(bench("assess", "reduce", side))
    current = bench("assess", "withdraw", side, "--revision", "2", "--reason", "x", "--disposition",
                    "not_applicable", "--actor", "ops")
    assert current.returncode == 2 and "is current" in current.stderr
    ok(bench("assess", "withdraw", side, "--revision", "1", "--reason", "misclick", "--disposition",
             "queued_compensation", "--actor", "ops"))
    used = bench("assess", "consume", side, "--revision", "1", "--consumer", "late", "--receipt", "x")
    assert used.returncode == 2 and "superseded" in used.stderr

    shown = ok(bench("assess", "show", side))
    assert shown.count("\n") == 1 and "label 0.5 (revision 2, ready)" in shown and "verified" in shown
    lines = ok(bench("assess", "show", side, "--events")).splitlines()[1:]
    assert [line.split("\t")[1] for line in lines] == ["created", "released", "assigned", "answered", "reduced",
                                                       "consumed", "corrected", "reduced", "withdrawn"]
    report = json.loads(ok(bench("assess", "verify", side, "--evidence", "--expect-event", receipt_sha, "--json")))
    assert report["verified"] and {c["check"] for c in report["checks"]} >= {
        "chain", "rules", "label file", "expected event", "evidence attempt A", "evidence attempt B",
        "evidence rubric", "evidence protocol"}
    assert {p: p.read_bytes() for p in kit.root.rglob("result.json")} == results_before

    # the label comes from the log alone: no rollout, no result.json needed
    for path in results_before:
        path.unlink()
    assert json.loads(ok(bench("assess", "label", side)))["label"] == 0.5

    label_file = kit.sidecar / "label.json"
    label_file.write_text(label_file.read_text().replace('"label": 0.5', '"label": 1'))
    mismatch = bench("assess", "label", side, "--check")
    assert mismatch.returncode == 1 and "differs" in mismatch.stderr
    assert bench("assess", "verify", side).returncode == 1
    ok(bench("assess", "label", side, "--write"))
    ok(bench("assess", "label", side, "--check"))

    missing = bench("assess", "verify", side, "--expect-event", "0" * 64)
    assert missing.returncode == 1 and "is not in the log" in missing.stderr


def test_not_a_sidecar_is_exit_2(bench, tmp_path: Path) -> None:
    for command in (["show"], ["verify"], ["label"], ["reduce"]):
        result = bench("assess", *command, str(tmp_path))
        assert result.returncode == 2 and "not an assessment sidecar" in result.stderr, command
    assert not (tmp_path / ".lock").exists()


def test_two_bench_processes_writing_at_once(bench, kit: Kit) -> None:
    side = str(kit.sidecar)
    ok(bench("assess", "create", side, *kit.create_args()))
    ok(bench("assess", "release", side, "--proof", str(write_proof(kit, kit.root / "proof.json"))))
    ids = collector_store(kit, kit.root / "store", choice="skip")
    db, code = str(kit.root / "store" / "workspace.sqlite3"), str(kit.root)
    ok(bench("assess", "assign", side, "--collector-db", db, "--collector-code", code, "--assignment",
             ids["assignment"]))
    ok(bench("assess", "import-vote", side, "--collector-db", db, "--collector-code", code))
    assert "1: withheld (withheld)" in ok(bench("assess", "reduce", side))
    # a withheld label cannot be consumed; two writers race to retract / try consume
    procs = [subprocess.Popen([sys.executable, "-m", "benchflow.cli", "assess", *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for args in (["retract", side, "--target", _effective(bench, side), "--reason", "skip", "--actor",
                           "alice"],
                          ["consume", side, "--revision", "1", "--consumer", "c", "--receipt", "r"])]
    codes = [p.wait(60) for p in procs]
    assert codes == [0, 2], [p.stderr.read() for p in procs]
    assert json.loads(ok(bench("assess", "verify", side, "--json")))["verified"] is True


def _effective(bench, side: str) -> str:
    return json.loads(ok(bench("assess", "show", side, "--json")))["effective_answer"]


def test_release_proof_never_says_absent_for_a_provider_it_cannot_ask(bench, kit: Kit) -> None:
    for target in (kit.refs[0], kit.rollouts[0]):  # a saved-attempt reference, or a trial folder
        result = bench("sandbox", "list", "--release-proof", str(target))
        assert result.returncode == 1, result.stderr
        proof = json.loads(result.stdout)
        assert proof["schema"] == "benchflow.assessment-release-proof.v1"
        assert [(o["runtime_id"], o["state"]) for o in proof["observations"]] == [("sbx-a", "unknown")]
        assert "test-provider:sbx-a is unknown" in result.stderr
    bad = bench("sandbox", "list", "--release-proof", str(kit.rubric))
    assert bad.returncode == 2 and "--release-proof" in bad.stderr
