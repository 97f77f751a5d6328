"""bench view of a scene trial: the trial document lists its turns, each linked to its own trajectory, and the
simulated user's rounds; a turn's folder opens as a page of its own (through Starlette's TestClient)."""

from __future__ import annotations

from starlette.testclient import TestClient

from benchflow.viewer.app import create_app
from benchflow.viewer.sources import resolve_source
from tests.fixtures.scene_trial import USER, scene_job


def test_a_scene_trial_lists_its_turns_with_links_and_the_user_rounds(tmp_path):
    job = scene_job(tmp_path)
    api = TestClient(create_app(resolve_source(str(job))), base_url="http://127.0.0.1")
    doc = api.get("/api/trial", params={"id": "scene-task__aaaa0001"}).json()
    turns = doc["summary"]["turns"]
    assert [(t["role"], t["agent"], t["status"], t["id"]) for t in turns] == [
        ("writer", "claude-agent-acp", "finished", "scene-task__aaaa0001/turns/01-writer"),
        ("reviewer", "codex-acp", "failed", "scene-task__aaaa0001/turns/02-reviewer"),
        ("editor", "claude-agent-acp", "not_run", None)]  # a turn that never ran has no trajectory to open
    assert doc["conversations"] == [{"folder": "turns/01-writer", **USER}]
    page = api.get("/api/trajectory", params={"id": turns[0]["id"], "kind": "acp"}).json()
    assert page["total"] == 1 and page["events"][0]["text"] == "hi"
    turn = api.get("/api/trial", params={"id": turns[1]["id"]}).json()
    assert turn["summary"] is None and (turn["turn"]["role"], turn["turn"]["status"]) == ("reviewer", "failed")
    plain = api.get("/api/trial", params={"id": "plain-task__aaaa0003"}).json()
    assert plain["summary"]["turns"] is None and plain["conversations"] == []


def test_the_export_holds_each_turns_page(tmp_path):
    from benchflow.viewer.export import collect

    entries, _ = collect(str(scene_job(tmp_path) / "scene-task__aaaa0001"))
    pages = {(path, params.get("id"), params.get("kind")) for path, params, _body in entries}
    assert {("trial", "turns/01-writer", None), ("trajectory", "turns/01-writer", "acp"),
            ("trial", "turns/02-reviewer", None)} <= pages
    assert not any(ident == "turns/03-editor" for _path, ident, _kind in pages)
