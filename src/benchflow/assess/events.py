"""One function per write command of ``bench assess``; each appends at most one event.

Every write runs :func:`_record`: under the sidecar's lock it looks the
idempotency key up (a retry returns the original event), folds the log with
the new event so the reducer's rules refuse what they must, writes the event
and refreshes the label file (``label.json`` is always the log's label).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchflow.assess import AssessmentError
from benchflow.assess.attempt import load_attempt_ref, ref_sha256, stale_parts
from benchflow.assess.digest import sha256_bytes
from benchflow.assess.log import Appended, Sidecar, Writer, default_key, writer
from benchflow.assess.reducer import CHOICES, DISPOSITIONS, RuleBroken, fold, label_document
from benchflow.util.atomic import write_json
from benchflow.util.files import sha256_hex

PROTOCOL_SCHEMA = "benchflow.assessment-judge-protocol.v1"
PROOF_SCHEMA = "benchflow.assessment-release-proof.v1"


def _refresh_label(w: Writer) -> None:
    write_json(w.sidecar.label, label_document(fold(w.events)))


def _commit(w: Writer, kind: str, payload: dict[str, Any], key: str, command: str,
            before_write: Callable[[], None] | None = None) -> Appended:
    event = w.candidate(kind, payload, key)
    try:
        fold([*w.events, event])
    except RuleBroken as exc:
        raise AssessmentError(f"{command}: refused: {str(exc).split(': ', 1)[-1]}") from exc
    if before_write is not None:
        before_write()
    w.append(event)
    _refresh_label(w)
    return Appended(event, existing=False)


def _record(sidecar: Path, kind: str, payload: dict[str, Any], key: str | None, command: str, *,
            create: bool = False, before_write: Callable[[], None] | None = None) -> Appended:
    key = key or default_key(kind, payload)
    with writer(Sidecar(sidecar), create=create) as w:
        found = w.recorded(kind, payload, key)
        if found is not None:
            return Appended(found, existing=True)
        return _commit(w, kind, payload, key, command, before_write)


def _read_json(path: Path, flag: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AssessmentError(f"{flag} {path}: not a readable JSON file ({exc})") from exc


def create(sidecar: Path, *, attempts: list[Path], rubric: Path, rubric_id: str, rubric_version: str,
           protocol: Path, key: str | None) -> Appended:
    """Start the assessment: two attempt refs of one task, the rubric and the protocol, frozen."""
    if len(attempts) != 2:
        raise AssessmentError(f"--attempt: give exactly two saved-attempt references (got {len(attempts)})")
    refs = [load_attempt_ref(path) for path in attempts]
    if refs[0]["task"] != refs[1]["task"]:
        raise AssessmentError(f"--attempt: the two attempts are of different tasks ({refs[0]['task']} vs "
                              f"{refs[1]['task']}); an assessment compares two attempts of one task")
    if refs[0]["rollout"] == refs[1]["rollout"]:
        raise AssessmentError("--attempt: both references name the same rollout; give two different attempts")
    for path, ref in zip(attempts, refs):
        stale = stale_parts(ref)
        if stale:
            raise AssessmentError(f"--attempt {path}: changed since it was hashed: {stale[0]}; make the "
                                  "reference again")
    if not rubric.is_file():
        raise AssessmentError(f"--rubric {rubric}: no such file")
    spec = _read_json(protocol, "--protocol")
    if not isinstance(spec, dict) or spec.get("schema") != PROTOCOL_SCHEMA:
        raise AssessmentError(f"--protocol {protocol}: schema is not {PROTOCOL_SCHEMA}")
    for flag, value in (("--rubric-id", rubric_id), ("--rubric-version", rubric_version)):
        if not value.strip():
            raise AssessmentError(f"{flag}: must not be empty")
    rubric_bytes, protocol_bytes = rubric.read_bytes(), protocol.read_bytes()
    rubric_file = f"frozen/rubric{rubric.suffix}"
    payload = {
        "task": refs[0]["task"],
        "attempts": {side: {"ref_sha256": ref_sha256(ref), "ref": ref} for side, ref in zip("AB", refs)},
        "rubric": {"id": rubric_id, "version": rubric_version, "sha256": sha256_bytes(rubric_bytes),
                   "file": rubric_file},
        "protocol": {"schema": PROTOCOL_SCHEMA, "sha256": sha256_bytes(protocol_bytes),
                     "file": "frozen/protocol.json"},
    }

    def freeze() -> None:
        from benchflow.util.atomic import write_bytes

        write_bytes(Path(sidecar) / rubric_file, rubric_bytes, 0o444)
        write_bytes(Path(sidecar) / "frozen" / "protocol.json", protocol_bytes, 0o444)

    return _record(sidecar, "created", payload, key, "create", create=True, before_write=freeze)


def runtimes_of(created: dict[str, Any]) -> list[dict[str, str]]:
    """Every runtime of both attempts, each with its side (A or B)."""
    return [{"attempt": side, **runtime} for side in "AB"
            for runtime in created["attempts"][side]["ref"]["runtimes"]]


def release(sidecar: Path, *, proof: Path, key: str | None) -> Appended:
    """Bind observations that every runtime of both attempts is gone."""
    if not proof.is_file():
        raise AssessmentError(f"--proof {proof}: no such file")
    doc = _read_json(proof, "--proof")
    if not isinstance(doc, dict) or doc.get("schema") != PROOF_SCHEMA:
        raise AssessmentError(f"--proof {proof}: schema is not {PROOF_SCHEMA}; make one with bench sandbox list "
                              "--release-proof")
    observations = doc.get("observations")
    if not isinstance(observations, list) or not all(isinstance(o, dict) for o in observations):
        raise AssessmentError(f"--proof {proof}: observations must be a list of objects")
    seen = {(str(o.get("provider")), str(o.get("runtime_id"))): o for o in observations}
    created = fold(_events(sidecar)).created or {}
    bound, missing = [], []
    for runtime in runtimes_of(created):
        found = seen.get((runtime["provider"], runtime["runtime_id"]))
        if found is None or found.get("state") != "absent":
            state = "not observed" if found is None else f"observed {found.get('state')!r}"
            missing.append(f"{runtime['provider']}:{runtime['runtime_id']} (attempt {runtime['attempt']}, {state})")
        else:
            bound.append({**runtime, "state": "absent", "observed_at": found.get("observed_at"),
                          "method": found.get("method")})
    if missing:
        raise AssessmentError(f"--proof {proof}: not every runtime is observed released: {'; '.join(missing)}")
    payload = {"proof_sha256": sha256_hex(proof), "observer": doc.get("observer"), "observations": bound}
    return _record(sidecar, "released", payload, key, "release")


def _events(sidecar: Path) -> list[dict[str, Any]]:
    from benchflow.assess.log import read_events

    return read_events(Sidecar(sidecar))


def _choice(choice: str) -> str:
    if choice not in CHOICES:
        raise AssessmentError(f"--choice {choice!r}: one of left (A), right (B), tie or abstain")
    return choice


def _role(role: str, allowed: tuple[str, ...]) -> str:
    if role not in allowed:
        raise AssessmentError(f"--actor-role {role!r}: one of {', '.join(allowed)}")
    return role


def _event_id(value: str, flag: str) -> str:
    value = value.strip().lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise AssessmentError(f"{flag} {value!r}: give the full 64-hex event id (bench assess show --events)")
    return value


def _text(value: str, flag: str) -> str:
    if not value.strip():
        raise AssessmentError(f"{flag}: must not be empty")
    return value


def answer(sidecar: Path, payload: dict[str, Any], key: str | None) -> Appended:
    """Bind the imported vote (built by :mod:`benchflow.assess.collector`)."""
    return _record(sidecar, "answered", payload, key, "import-vote")


def assign(sidecar: Path, payload: dict[str, Any], key: str | None) -> Appended:
    """Bind the collector's assignment (built by :mod:`benchflow.assess.collector`)."""
    return _record(sidecar, "assigned", payload, key, "assign")


def correct(sidecar: Path, *, supersedes: str, choice: str, reason: str, correction_reason: str, actor: str,
            actor_role: str, tags: list[str], key: str | None) -> Appended:
    payload = {"supersedes": _event_id(supersedes, "--supersedes"), "choice": _choice(choice),
               "reason": _text(reason, "--reason"), "correction_reason": _text(correction_reason,
                                                                               "--correction-reason"),
               "actor": _text(actor, "--actor"), "actor_role": _role(actor_role, ("reviewer", "operator")),
               "tags": list(tags)}
    return _record(sidecar, "corrected", payload, key, "correct")


def retract(sidecar: Path, *, target: str, reason: str, actor: str, actor_role: str, key: str | None) -> Appended:
    payload = {"target": _event_id(target, "--target"), "reason": _text(reason, "--reason"),
               "actor": _text(actor, "--actor"), "actor_role": _role(actor_role, ("reviewer", "operator"))}
    return _record(sidecar, "retracted", payload, key, "retract")


def reduce(sidecar: Path) -> Appended:
    """Record the label the log calls for as a new revision (none when it did not change)."""
    with writer(Sidecar(sidecar)) as w:
        state = fold(w.events)
        wanted = state.called_for()
        if wanted is None:
            raise AssessmentError("reduce: nothing to reduce yet: import the vote first (bench assess "
                                  "import-vote)")
        if not state.reduce_due():
            _refresh_label(w)
            reduced = next(e for e in w.events if e["sha256"] == state.current.event)
            return Appended(reduced, existing=True)
        label, status, basis = wanted
        payload = {"revision": len(state.revisions) + 1, "label": label, "state": status, "basis": basis}
        return _commit(w, "reduced", payload, default_key("reduced", payload), "reduce")


def consume(sidecar: Path, *, revision: int, consumer: str, receipt: str, key: str | None) -> Appended:
    """A consumer's receipt for one exact ready revision (its reduced event is named in the payload)."""
    state = fold(_events(sidecar))
    try:
        revision_event = state.revision(revision).event
    except RuleBroken as exc:
        raise AssessmentError(f"--revision: {exc}") from exc
    payload = {"revision": revision, "revision_event": revision_event, "consumer": _text(consumer, "--consumer"),
               "receipt": _text(receipt, "--receipt")}
    return _record(sidecar, "consumed", payload, key, "consume")


def withdraw(sidecar: Path, *, revision: int, reason: str, disposition: str, actor: str, actor_role: str,
             key: str | None) -> Appended:
    if disposition not in DISPOSITIONS:
        raise AssessmentError(f"--disposition {disposition!r}: one of {', '.join(DISPOSITIONS)}")
    payload = {"revision": revision, "reason": _text(reason, "--reason"), "disposition": disposition,
               "actor": _text(actor, "--actor"), "actor_role": _role(actor_role, ("operator", "reducer"))}
    return _record(sidecar, "withdrawn", payload, key, "withdraw")

