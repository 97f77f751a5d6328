"""The viewer's trial document carries a branched trial's tree (forks, children, rewards, advantages) with
each child's viewer id, and that id opens the child's own trajectory."""

from __future__ import annotations

from pathlib import Path

from fixtures.branch_trial import make_branched_trial
from starlette.testclient import TestClient

from benchflow.viewer.app import create_app
from benchflow.viewer.sources import resolve_source


def test_trial_document_has_the_branch_tree_and_children_open_their_trajectory(tmp_path: Path) -> None:
    make_branched_trial(tmp_path / "job")
    api = TestClient(create_app(resolve_source(str(tmp_path / "job"))), base_url="http://127.0.0.1")
    body = api.get("/api/trial", params={"id": "t__ab12cd34"}).json()
    view = body["branches"]
    assert [(f["fork"], f["parent_node"]) for f in view["forks"]] == [("fork-0", None), ("fork-good", "good")]
    children = {c["node"]: c for f in view["forks"] for c in f["children"]}
    assert {n: (c["reward"], c["advantage"]) for n, c in children.items()} == {
        "good": (1.0, 1.0), "bad": (0.0, -1.0), "more": (0.5, -0.5), "same": (1.0, 0.5)}
    assert children["more"]["id"] == "t__ab12cd34/branches/fork-good/children/more"
    child = api.get("/api/trial", params={"id": children["more"]["id"]}).json()
    assert child["totals"]["acp"] == 1
    page = api.get("/api/trajectory", params={"id": children["more"]["id"], "kind": "acp"}).json()
    assert page["events"][0]["text"] == "prompt of more"


def test_a_trial_without_a_tree_has_no_branches(tmp_path: Path) -> None:
    trial = make_branched_trial(tmp_path / "job")
    (trial / "tree.json").unlink()
    api = TestClient(create_app(resolve_source(str(tmp_path / "job"))), base_url="http://127.0.0.1")
    assert api.get("/api/trial", params={"id": "t__ab12cd34"}).json()["branches"] is None
