"""Daytona snapshot names carry their owner scope (``BENCHFLOW_DAYTONA_OWNER``), so one owner's listing and
cleanup never take another's, and names made before owners existed still parse."""

from __future__ import annotations

import os

from benchflow.sandbox.daytona import snapshots


def test_a_name_carries_the_owner_and_only_that_owner_sees_it(monkeypatch) -> None:
    monkeypatch.setenv("BENCHFLOW_DAYTONA_OWNER", "ci-job 7")
    name = snapshots.snapshot_name(retain=True)
    parsed = snapshots.parse(name)
    assert (parsed.owner, parsed.host, parsed.pid, parsed.retained) == (
        "ci_job_7", snapshots.this_host(), str(os.getpid()), True)
    assert snapshots.in_scope(parsed) and snapshots.owner_gone(parsed) is False
    monkeypatch.setenv("BENCHFLOW_DAYTONA_OWNER", "someone-else")
    assert not snapshots.in_scope(snapshots.parse(name))
    monkeypatch.delenv("BENCHFLOW_DAYTONA_OWNER")
    assert snapshots.in_scope(snapshots.parse(name)), "without an owner, every BenchFlow snapshot is seen"


def test_a_name_without_an_owner_still_parses() -> None:
    parsed = snapshots.parse(f"bf-snap-{snapshots.this_host()}-999999999-0-abcd1234")
    assert (parsed.owner, parsed.pid, parsed.retained) == (None, "999999999", False)
    assert snapshots.owner_gone(parsed) is True
    assert snapshots.parse("my-own-snapshot") is None
