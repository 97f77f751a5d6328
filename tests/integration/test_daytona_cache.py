"""``bench cache list|clean -s daytona`` against the Daytona API double: the snapshots BenchFlow keeps on
the account, of this ``BENCHFLOW_DAYTONA_OWNER``; one a sandbox or a live run still uses stays."""

from __future__ import annotations

import json
import os
import secrets
import socket

from tests.conftest import run_bench


def _name(owner: str, pid: int, *, retained: bool) -> str:
    host = "".join(ch if ch.isalnum() or ch in "." else "_" for ch in socket.gethostname())[:40]
    return f"bf-snap-{owner}--{host}-{pid}-0-{'r' if retained else ''}{secrets.token_hex(4)}"


def test_cache_lists_and_cleans_this_owners_snapshots(daytona_double) -> None:
    double = daytona_double.double
    idle = _name("erin", 999999999, retained=True)            # kept by --retain-snapshots, nothing uses it
    started_from = _name("erin", 999999999, retained=True)    # a sandbox was started from it
    live = _name("erin", os.getpid(), retained=False)         # of a run that still runs (this process)
    others = _name("frank", 999999999, retained=True)         # another owner's
    for name in (idle, started_from, live, others):
        double.add_snapshot(name)
    user = double.add_sandbox({"benchflow.owned": "true", "benchflow.backend": "daytona"}, snapshot=started_from)
    env = daytona_double.env() | {"BENCHFLOW_DAYTONA_OWNER": "erin"}
    try:
        listed = run_bench("cache", "list", "-s", "daytona", "--json", env=env)
        assert listed.returncode == 0, listed.stderr
        rows = {row["ref"]: row for row in json.loads(listed.stdout)}
        assert set(rows) == {idle, started_from, live}, "this owner's snapshots only"
        assert {row["kind"] for row in rows.values()} == {"images"} and rows[idle]["size_bytes"] == 1 << 30

        dry = run_bench("cache", "clean", "-s", "daytona", "--json", env=env)
        assert dry.returncode == 0, dry.stderr
        actions = {row["ref"]: row["action"] for row in json.loads(dry.stdout)["entries"]}
        assert actions == {idle: "would remove", started_from: "kept", live: "kept"}
        assert {idle, started_from, live, others} <= set(double.snapshots), "nothing goes without --remove"

        old_only = run_bench("cache", "list", "-s", "daytona", "--older-than", "30d", "--json", env=env)
        assert old_only.returncode == 0 and json.loads(old_only.stdout) == []

        done = run_bench("cache", "clean", "-s", "daytona", "--remove", "--json", env=env)
        assert done.returncode == 0, done.stderr
        reasons = {row["ref"]: row["reason"] for row in json.loads(done.stdout)["entries"]}
        assert idle not in double.snapshots and {started_from, live, others} <= set(double.snapshots)
        assert user[:8] in reasons[started_from] and f"pid {os.getpid()}" in reasons[live]
    finally:
        double.boxes.pop(user, None)
        for name in (idle, started_from, live, others):
            double.snapshots.pop(name, None)


def test_without_a_key_daytona_cache_is_an_error_when_asked_for(daytona_double) -> None:
    env = {"DAYTONA_API_KEY": "", "BENCHFLOW_REMOTE_DOCKER_HOST": ""}
    asked = run_bench("cache", "list", "-s", "daytona", env=env)
    assert asked.returncode == 1 and "DAYTONA_API_KEY" in asked.stderr
