"""``bench sandbox list --all`` on Modal, against the Modal API double: every sandbox of the environment,
in every app, those BenchFlow did not make too (marked, never cleaned up)."""

from __future__ import annotations

import json
import secrets

from modal_proto import api_pb2

from tests.conftest import run_bench
from tests.doubles.modal_double_state import Box


def test_all_lists_every_app_and_what_benchflow_did_not_make(modal_double) -> None:
    boxes = modal_double.state.boxes
    ours = {"benchflow.owned": "true", "benchflow.backend": "modal", "benchflow.job": "elsewhere",
            "benchflow.pid": "999999999", "benchflow.host": "another-host"}
    other_app = Box(id=f"sb-v2-{secrets.token_hex(8)}", task_id="ta-x", app_id="ap-another-app",
                    definition=api_pb2.Sandbox(), tags=ours, env={})
    foreign = Box(id=f"sb-v2-{secrets.token_hex(8)}", task_id="ta-y", app_id="ap-another-app",
                  definition=api_pb2.Sandbox(), tags={"team": "notebooks"}, env={})
    boxes[other_app.id], boxes[foreign.id] = other_app, foreign
    try:
        env = modal_double.env()
        plain = run_bench("sandbox", "list", "--json", env=env)
        assert plain.returncode == 0, plain.stderr
        assert not {row["id"] for row in json.loads(plain.stdout)} & {other_app.id, foreign.id}, \
            "without --all: BenchFlow's sandboxes of its own app only"
        every = run_bench("sandbox", "list", "--all", "--json", env=env)
        assert every.returncode == 0, every.stderr
        rows = {row["id"]: row for row in json.loads(every.stdout)}
        assert (rows[other_app.id]["foreign"], rows[other_app.id]["job"]) == (False, "elsewhere")
        assert (rows[foreign.id]["foreign"], rows[foreign.id]["owner"]) == (True, "not BenchFlow's")
        refused = run_bench("sandbox", "cleanup", "--id", foreign.id, env=env)
        assert refused.returncode == 1 and "no BenchFlow sandbox has this id" in refused.stderr
        assert foreign.id in boxes
    finally:
        boxes.pop(other_app.id, None)
        boxes.pop(foreign.id, None)
