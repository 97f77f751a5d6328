"""``bench assess …``: blind pairwise human assessments in an opt-in sidecar.

Each command parses its flags, calls one function of :mod:`benchflow.assess`
and prints one line (``--json``: the document). A write prints the event it
recorded, or the original one when the same write was recorded before.
Bad input and refused writes exit 2; ``verify``/``show`` exit 1 when the
sidecar does not verify; ``label --check`` exits 1 on a mismatch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List, Optional

import typer

attempt_ref_cmd = typer.Typer(add_completion=False)
create_cmd = typer.Typer(add_completion=False)
release_cmd = typer.Typer(add_completion=False)
assign_cmd = typer.Typer(add_completion=False)
import_vote_cmd = typer.Typer(add_completion=False)
correct_cmd = typer.Typer(add_completion=False)
retract_cmd = typer.Typer(add_completion=False)
reduce_cmd = typer.Typer(add_completion=False)
consume_cmd = typer.Typer(add_completion=False)
withdraw_cmd = typer.Typer(add_completion=False)
show_cmd = typer.Typer(add_completion=False)
verify_cmd = typer.Typer(add_completion=False)
label_cmd = typer.Typer(add_completion=False)

SIDECAR = typer.Argument(..., help="The assessment's sidecar directory, e.g. <completed-rollout>/assessment.")
KEY_HELP = ("Key for this write (default: derived from its inputs). A retry with the same key and payload returns "
            "the original event.")
JSON_HELP = "Print JSON instead of one line."
ACTOR_HELP = "Who records this (the reviewer's collector name, or an operator)."


def _key() -> Any:
    return typer.Option(None, "--idempotency-key", help=KEY_HELP)


def _json() -> Any:
    return typer.Option(False, "--json", help=JSON_HELP)


def _print_write(appended: Any, as_json: bool) -> None:
    event = appended.event
    if as_json:
        typer.echo(json.dumps({"existing": appended.existing, "event": event}, indent=2))
        return
    verb = "Already recorded" if appended.existing else "Recorded"
    typer.echo(f"{verb} {event['type']} {event['sha256']} (seq {event['seq']})")


@attempt_ref_cmd.command(help="Hash a completed rollout into a saved-attempt reference (JSON).")
def attempt_ref(
    rollout: Path = typer.Argument(..., help="A completed rollout folder (holds result.json)."),
    output: Path = typer.Option(..., "--output", help="The output to compare: a folder or one file. Required."),
    review_artifact: Path = typer.Option(..., "--review-artifact",
                                         help="The file a reviewer sees (e.g. a preview image). Required."),
    sandbox_provider: Optional[str] = typer.Option(None, "--sandbox-provider",
                                                   help="Provider of result.json's sandbox_id (daytona, docker, "
                                                        "modal, …)."),
    sandbox_role: str = typer.Option("solver", "--sandbox-role",
                                     help="solver, verifier or shared (one sandbox for both)."),
    runtime: Optional[List[str]] = typer.Option(None, "--runtime",
                                                help="Another allocation of this attempt: "
                                                     "PROVIDER:RUNTIME_ID[:ROLE]. Repeatable."),
    media_type: Optional[str] = typer.Option(None, "--media-type", help="The review artifact's media type."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the reference here (a new file) instead of "
                                                           "stdout."),
) -> None:
    from benchflow.assess import AssessmentError
    from benchflow.assess.attempt import make_attempt_ref
    from benchflow.assess.digest import write_new_json

    ref = make_attempt_ref(rollout, output=output, review_artifact=review_artifact,
                           sandbox_provider=sandbox_provider, sandbox_role=sandbox_role, runtimes=list(runtime or []),
                           media_type=media_type)
    if out is None:
        typer.echo(json.dumps(ref, indent=2))
        return
    try:
        write_new_json(out, ref)
    except FileExistsError as exc:
        raise AssessmentError(f"--out {out}: already exists; the reference is written to a new file only") from exc
    typer.echo(f"Wrote {out}")


@create_cmd.command(help="Start an assessment of two saved attempts of one task.")
def create(
    sidecar: Path = SIDECAR,
    attempt: Optional[List[Path]] = typer.Option(None, "--attempt", help="A saved-attempt reference file. Give "
                                                                          "exactly two. Required."),
    rubric: Path = typer.Option(..., "--rubric", help="The frozen rubric file. Required."),
    rubric_id: str = typer.Option(..., "--rubric-id", help="The rubric's id. Required."),
    rubric_version: str = typer.Option(..., "--rubric-version", help="The rubric's frozen version. Required."),
    protocol: Path = typer.Option(..., "--protocol", help="The frozen judge protocol "
                                                          "(benchflow.assessment-judge-protocol.v1). Required."),
    idempotency_key: Optional[str] = _key(),
    as_json: bool = _json(),
) -> None:
    from benchflow.assess import events

    _print_write(events.create(sidecar, attempts=list(attempt or []), rubric=rubric, rubric_id=rubric_id,
                               rubric_version=rubric_version, protocol=protocol, key=idempotency_key), as_json)


@release_cmd.command(help="Record that every runtime of both attempts was observed released.")
def release(
    sidecar: Path = SIDECAR,
    proof: Path = typer.Option(..., "--proof", help="Observations that every runtime is gone "
                                                    "(benchflow.assessment-release-proof.v1). Required."),
    idempotency_key: Optional[str] = _key(),
    as_json: bool = _json(),
) -> None:
    from benchflow.assess import events

    _print_write(events.release(sidecar, proof=proof, key=idempotency_key), as_json)


@assign_cmd.command(help="Bind the collector's persisted blind assignment (after the release).")
def assign(
    sidecar: Path = SIDECAR,
    collector_db: Path = typer.Option(..., "--collector-db", help="The collector's workspace.sqlite3 (a cli.py "
                                                                  "backup copy), read-only. Required."),
    collector_code: Path = typer.Option(..., "--collector-code", help="The collector's code folder "
                                                                      "(design-bench/prototype). Required."),
    assignment: str = typer.Option(..., "--assignment", help="The collector's assignment id. Required."),
    idempotency_key: Optional[str] = _key(),
    as_json: bool = _json(),
) -> None:
    from benchflow.assess import collector, events

    payload = collector.assignment_payload(sidecar, collector_db, collector_code, assignment)
    _print_write(events.assign(sidecar, payload, idempotency_key), as_json)


@import_vote_cmd.command(help="Bind the collector's vote on the assignment (a skip becomes abstain).")
def import_vote(
    sidecar: Path = SIDECAR,
    collector_db: Path = typer.Option(..., "--collector-db", help="The collector's workspace.sqlite3, read-only. "
                                                                  "Required."),
    collector_code: Path = typer.Option(..., "--collector-code", help="The collector's code folder. Required."),
    as_json: bool = _json(),
) -> None:
    from benchflow.assess import collector, events

    payload = collector.vote_payload(sidecar, collector_db, collector_code)
    _print_write(events.answer(sidecar, payload, None), as_json)


@correct_cmd.command(help="Replace the effective answer with a corrected one.")
def correct(
    sidecar: Path = SIDECAR,
    supersedes: str = typer.Option(..., "--supersedes", help="The current effective answer's event id. Required."),
    choice: str = typer.Option(..., "--choice", help="left (A), right (B), tie or abstain. Required."),
    reason: str = typer.Option(..., "--reason", help="The new answer's rationale. Required."),
    correction_reason: str = typer.Option(..., "--correction-reason", help="Why the answer changed. Required."),
    actor: str = typer.Option(..., "--actor", help=ACTOR_HELP + " Required."),
    actor_role: str = typer.Option("reviewer", "--actor-role", help="reviewer (the answer's own) or operator."),
    tag: Optional[List[str]] = typer.Option(None, "--tag", help="A feedback tag. Repeatable."),
    idempotency_key: Optional[str] = _key(),
    as_json: bool = _json(),
) -> None:
    from benchflow.assess import events

    _print_write(events.correct(sidecar, supersedes=supersedes, choice=choice, reason=reason,
                                correction_reason=correction_reason, actor=actor, actor_role=actor_role,
                                tags=list(tag or []), key=idempotency_key), as_json)


@retract_cmd.command(help="Retract the effective answer; its history stays in the log.")
def retract(
    sidecar: Path = SIDECAR,
    target: str = typer.Option(..., "--target", help="The current effective answer's event id. Required."),
    reason: str = typer.Option(..., "--reason", help="Why it is retracted. Required."),
    actor: str = typer.Option(..., "--actor", help=ACTOR_HELP + " Required."),
    actor_role: str = typer.Option("reviewer", "--actor-role", help="reviewer (the answer's own) or operator."),
    idempotency_key: Optional[str] = _key(),
    as_json: bool = _json(),
) -> None:
    from benchflow.assess import events

    _print_write(events.retract(sidecar, target=target, reason=reason, actor=actor, actor_role=actor_role,
                                key=idempotency_key), as_json)


@reduce_cmd.command(help="Record the deterministic label the log calls for, and refresh the label file.")
def reduce(
    sidecar: Path = SIDECAR,
    as_json: bool = _json(),
) -> None:
    from benchflow.assess import events
    from benchflow.assess.show import label_text

    appended = events.reduce(sidecar)
    if as_json:
        _print_write(appended, True)
        return
    payload, verb = appended.event["payload"], "Unchanged" if appended.existing else "Recorded"
    typer.echo(f"{verb} label revision {payload['revision']}: {label_text(payload['label'])} ({payload['state']}) "
               f"{appended.event['sha256']}")


@consume_cmd.command(help="Record that a consumer used one exact ready label revision.")
def consume(
    sidecar: Path = SIDECAR,
    revision: int = typer.Option(..., "--revision", help="The label revision used. Required."),
    consumer: str = typer.Option(..., "--consumer", help="The consumer's id. Required."),
    receipt: str = typer.Option(..., "--receipt", help="The consumer's immutable receipt (e.g. a ledger row). "
                                                       "Required."),
    idempotency_key: Optional[str] = _key(),
    as_json: bool = _json(),
) -> None:
    from benchflow.assess import events

    _print_write(events.consume(sidecar, revision=revision, consumer=consumer, receipt=receipt,
                                key=idempotency_key), as_json)


@withdraw_cmd.command(help="Bar a corrected or retracted label revision from future use.")
def withdraw(
    sidecar: Path = SIDECAR,
    revision: int = typer.Option(..., "--revision", help="The superseded label revision. Required."),
    reason: str = typer.Option(..., "--reason", help="Why it is withdrawn. Required."),
    disposition: str = typer.Option(..., "--disposition", help="not_applicable, queued_compensation or "
                                                               "compensated: what its consumers do. Required."),
    actor: str = typer.Option(..., "--actor", help=ACTOR_HELP + " Required."),
    actor_role: str = typer.Option("operator", "--actor-role", help="operator or reducer."),
    idempotency_key: Optional[str] = _key(),
    as_json: bool = _json(),
) -> None:
    from benchflow.assess import events

    _print_write(events.withdraw(sidecar, revision=revision, reason=reason, disposition=disposition, actor=actor,
                                 actor_role=actor_role, key=idempotency_key), as_json)


def _fail_lines(report: Any) -> None:
    for line in report.failures():
        typer.echo(f"error: {line}", err=True)


@show_cmd.command(help="Verify the sidecar's log and print its state.")
def show(
    sidecar: Path = SIDECAR,
    events: bool = typer.Option(False, "--events", help="List every event."),
    as_json: bool = _json(),
) -> None:
    from benchflow.assess.show import event_line, state_json, summary_line
    from benchflow.assess.verify import verify

    report = verify(sidecar)
    if as_json:
        doc = {"sidecar": str(sidecar), "verified": report.ok, "failures": report.failures(),
               **state_json(report.state)}
        if events:
            doc["events"] = report.events
        typer.echo(json.dumps(doc, indent=2))
    else:
        if report.state is not None:
            typer.echo(summary_line(report.state, verified=report.ok))
        if events:
            for event in report.events:
                typer.echo(event_line(event))
    _fail_lines(report)
    if not report.ok:
        raise typer.Exit(1)


@verify_cmd.command(help="Verify the hash chain, the label file and, optionally, the evidence.")
def verify(
    sidecar: Path = SIDECAR,
    evidence: bool = typer.Option(False, "--evidence", help="Also hash both attempts, the rubric and the protocol "
                                                            "again."),
    expect_event: Optional[str] = typer.Option(None, "--expect-event",
                                               help="An event SHA-256 a receipt holds; the log must still "
                                                    "contain it."),
    as_json: bool = _json(),
) -> None:
    from benchflow.assess.verify import verify as run_verify

    report = run_verify(sidecar, evidence=evidence, expect_event=expect_event)
    if as_json:
        typer.echo(json.dumps({"sidecar": report.sidecar, "verified": report.ok, "checks": report.checks},
                              indent=2))
    elif report.ok:
        typer.echo(f"Verified {sidecar}: " + "; ".join(c["detail"] for c in report.checks))
    else:
        typer.echo(f"NOT verified {sidecar}")
    _fail_lines(report)
    if not report.ok:
        raise typer.Exit(1)


@label_cmd.command(help="Print the label rebuilt from the sidecar's log alone (JSON).")
def label(
    sidecar: Path = SIDECAR,
    write: bool = typer.Option(False, "--write", help="Rewrite the label file from the log."),
    check: bool = typer.Option(False, "--check", help="Exit 1 unless the label file equals the log's label."),
) -> None:
    from benchflow.assess import AssessmentError
    from benchflow.assess.show import label_from_log

    if write and check:
        raise AssessmentError("--write and --check: give one (--write makes the file equal the log's label)")
    doc, ok, detail = label_from_log(sidecar, write=write)
    typer.echo(json.dumps(doc, indent=2))
    if check and not ok:
        typer.echo(f"error: {detail}", err=True)
        raise typer.Exit(1)
