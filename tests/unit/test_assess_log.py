"""The sidecar log: hash chain, torn writes, idempotent writes, two writers at once, evidence checks."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from benchflow.assess import AssessmentError, collector
from benchflow.assess import events as ev
from benchflow.assess.log import LogBroken, Sidecar, read_events
from benchflow.assess.verify import verify
from tests.assessgen import collector_store, make_kit, write_proof


def created(tmp_path: Path):
    kit = make_kit(tmp_path)
    ev.create(kit.sidecar, attempts=kit.refs, rubric=kit.rubric, rubric_id="clarity", rubric_version="1",
              protocol=kit.protocol, key=None)
    return kit


def test_one_changed_byte_of_an_event_breaks_the_chain(tmp_path: Path) -> None:
    kit = created(tmp_path)
    ev.release(kit.sidecar, proof=write_proof(kit, tmp_path / "proof.json"), key=None)
    assert verify(kit.sidecar).ok
    log = Sidecar(kit.sidecar).events
    data = bytearray(log.read_bytes())
    at = data.rindex(b"sbx-b")
    data[at + 4] = ord("c")  # sbx-b -> sbx-c inside the release event
    log.write_bytes(bytes(data))
    report = verify(kit.sidecar)
    assert not report.ok and "line 2: sha256 does not match" in report.failures()[0]
    with pytest.raises(LogBroken):  # and no writer appends to it
        ev.consume(kit.sidecar, revision=1, consumer="c", receipt="r", key=None)


def test_a_torn_write_is_detected(tmp_path: Path) -> None:
    kit = created(tmp_path)
    log = Sidecar(kit.sidecar).events
    log.write_bytes(log.read_bytes() + b'{"schema": "benchflow.assessment-event.v1", "se')
    report = verify(kit.sidecar)
    assert not report.ok and "torn write" in report.failures()[0]


def test_a_removed_event_breaks_the_chain(tmp_path: Path) -> None:
    kit = created(tmp_path)
    ev.release(kit.sidecar, proof=write_proof(kit, tmp_path / "proof.json"), key=None)
    log = Sidecar(kit.sidecar).events
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(lines[1])
    assert "chain broken" in verify(kit.sidecar).failures()[0]


def test_idempotency_keys(tmp_path: Path) -> None:
    kit = created(tmp_path)
    proof = write_proof(kit, tmp_path / "proof.json")
    first = ev.release(kit.sidecar, proof=proof, key="release-1")
    again = ev.release(kit.sidecar, proof=proof, key="release-1")
    assert not first.existing and again.existing and again.event == first.event
    other = write_proof(kit, tmp_path / "proof2.json")
    other.write_text(other.read_text().replace("2026-01-01", "2026-01-02"))
    with pytest.raises(AssessmentError, match="already used for another write"):
        ev.release(kit.sidecar, proof=other, key="release-1")
    # without a key, the key is derived from the inputs: a retry of create returns the first event
    retry = ev.create(kit.sidecar, attempts=kit.refs, rubric=kit.rubric, rubric_id="clarity", rubric_version="1",
                      protocol=kit.protocol, key=None)
    assert retry.existing and retry.event["seq"] == 0
    assert len(read_events(Sidecar(kit.sidecar))) == 2


def test_create_refuses_another_assessment_and_keeps_the_frozen_rubric(tmp_path: Path) -> None:
    kit = created(tmp_path)
    frozen = (kit.sidecar / "frozen" / "rubric.json").read_bytes()
    kit.rubric.write_text('{"id": "other"}')
    with pytest.raises(AssessmentError, match="already created"):
        ev.create(kit.sidecar, attempts=kit.refs, rubric=kit.rubric, rubric_id="clarity", rubric_version="2",
                  protocol=kit.protocol, key=None)
    assert (kit.sidecar / "frozen" / "rubric.json").read_bytes() == frozen


def test_release_needs_every_runtime_observed_absent(tmp_path: Path) -> None:
    kit = created(tmp_path)
    with pytest.raises(AssessmentError, match=r"test-provider:sbx-b \(attempt B, observed 'present'\)"):
        ev.release(kit.sidecar, proof=write_proof(kit, tmp_path / "p.json", states=("absent", "present")), key=None)


def test_evidence_rehashes_attempts_rubric_and_protocol(tmp_path: Path) -> None:
    kit = created(tmp_path)
    assert verify(kit.sidecar, evidence=True).ok
    hello = kit.output(1) / "hello.txt"
    hello.write_text(hello.read_text().replace("B", "C"))
    failures = verify(kit.sidecar, evidence=True).failures()
    assert len(failures) == 1 and failures[0].startswith("evidence attempt B: output")
    assert verify(kit.sidecar).ok  # without --evidence only the log and the label file are checked


def _consume(sidecar: str, consumer: str, rounds: int) -> None:
    for n in range(rounds):
        ev.consume(Path(sidecar), revision=1, consumer=consumer, receipt=f"row-{n}", key=None)


def test_two_concurrent_writers_both_succeed_with_one_chain(tmp_path: Path) -> None:
    kit = created(tmp_path)
    ev.release(kit.sidecar, proof=write_proof(kit, tmp_path / "proof.json"), key=None)
    ids = collector_store(kit, tmp_path / "store", choice="tie")
    db, code = tmp_path / "store" / "workspace.sqlite3", tmp_path / "code"
    code.mkdir()
    ev.assign(kit.sidecar, collector.assignment_payload(kit.sidecar, db, code, ids["assignment"]), None)
    ev.answer(kit.sidecar, collector.vote_payload(kit.sidecar, db, code), None)
    ev.reduce(kit.sidecar)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_consume, args=(str(kit.sidecar), name, 15)) for name in ("one", "two")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [w.exitcode for w in workers] == [0, 0]
    events = read_events(Sidecar(kit.sidecar))
    receipts = sorted((e["payload"]["consumer"], e["payload"]["receipt"]) for e in events if e["type"] == "consumed")
    assert receipts == sorted((c, f"row-{n}") for c in ("one", "two") for n in range(15))
    report = verify(kit.sidecar)
    assert report.ok, report.failures()
    label = json.loads((kit.sidecar / "label.json").read_text())
    assert label["label"] == 0.5 and len(label["revisions"][0]["consumers"]) == 30


def test_a_hand_edited_reference_is_refused_with_the_field(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    ref = json.loads(kit.refs[1].read_text())
    del ref["output"]["sha256"]
    kit.refs[1].write_text(json.dumps(ref))
    with pytest.raises(AssessmentError, match="field 'output' must hold path, kind and sha256"):
        ev.create(kit.sidecar, attempts=kit.refs, rubric=kit.rubric, rubric_id="clarity", rubric_version="1",
                  protocol=kit.protocol, key=None)
    assert not kit.sidecar.exists()
