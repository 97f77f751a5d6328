"""Which calls a prepared sandbox may serve: the same sandbox spec in everything but its labels."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from benchflow.daemon.prepared import spec_key
from benchflow.sandbox.base import SandboxSpec


def _spec(**changes) -> SandboxSpec:
    base = SandboxSpec(name="hello", environment_dir=Path("/tasks/hello/environment"), cache_key="abc",
                       env={"A": "1"}, labels={"benchflow.job": "/jobs/1", "benchflow.trial": "hello__1"})
    return dataclasses.replace(base, **changes)


def test_labels_do_not_matter_everything_else_does() -> None:
    same = spec_key(_spec())
    assert spec_key(_spec(labels={"benchflow.job": "/jobs/2", "benchflow.trial": "hello__2"})) == same
    assert spec_key(_spec(env={"A": "2"})) != same
    assert spec_key(_spec(cache_key="changed-task")) != same
    assert spec_key(_spec(mounts={"/bridge": Path("/tmp/trial-1")})) != same
    assert spec_key(_spec(network_mode="no-network")) != same
