"""The viewer's JSON endpoints, through Starlette's TestClient (no server, no browser)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fixtures.viewer_jobs import (
    IDLE_ERROR,
    XSS_TASK,
    Jobs,
    llm_exchanges,
    make_jobs,
    write_big_trial,
)
from starlette.testclient import TestClient

from benchflow.viewer.app import PAGE_LIMIT_MAX, STATIC_DIR, ConfirmState, create_app
from benchflow.viewer.sources import resolve_source

LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Jobs:
    made = make_jobs(tmp_path_factory.mktemp("viewer"))
    write_big_trial(made.b, n_events=1_000)
    return made


def client(target: Path, confirm: ConfirmState | None = None) -> TestClient:
    return TestClient(create_app(resolve_source(str(target)), confirm=confirm), base_url=LOCAL)


@pytest.fixture(scope="module")
def api(jobs: Jobs) -> TestClient:
    return client(jobs.root)


def test_overview_names_every_kind(jobs: Jobs) -> None:
    hello = jobs.trial(jobs.a, "hello-world")
    cases = {jobs.root: ("jobs", ["job-a", "job-b"], None), jobs.a: ("job", ["."], None),
             hello: ("trial", [], "."), hello / "trajectory" / "acp_trajectory.jsonl": ("trajectory", [], "acp_trajectory.jsonl")}
    for target, (kind, job_ids, trial) in cases.items():
        body = client(target).get("/api/overview").json()
        assert (body["kind"], [j["id"] for j in body["jobs"]], body["trial"]) == (kind, job_ids, trial)
        assert body["confirm"] is None
    first = client(jobs.root).get("/api/overview").json()["jobs"][0]
    assert first["settings"]["agent"] == "claude-agent-acp" and first["n_trials"] == 5
    assert first["denominators"]["passed"] == 1


def test_job_lists_trials_with_ids_outcomes_and_categories(api: TestClient) -> None:
    body = api.get("/api/job", params={"id": "job-a"}).json()
    assert body["kind"] == "benchflow.job" and body["id"] == "job-a"
    by_task = {t["task_name"]: t for t in body["trials"]}
    assert {t: r["outcome"] for t, r in by_task.items()} == {
        "hello-world": "passed", "regex-log": "failed", "flaky-net": "errored",
        "broken-tests": "verifier_errored", XSS_TASK: "failed"}
    assert by_task["flaky-net"]["id"] == "job-a/flaky-net__aaaa0003"
    assert by_task["flaky-net"]["error"] == IDLE_ERROR
    assert body["error_categories"] == {"idle_timeout": 1}
    assert body["verifier_error_categories"] == {"verifier_failure": 1}


def test_trial_document_has_records_and_totals_but_no_trajectory(api: TestClient) -> None:
    body = api.get("/api/trial", params={"id": "job-a/hello-world__aaaa0001"}).json()
    assert body["kind"] == "benchflow.trial" and body["summary"]["reward"] == 1.0
    assert body["totals"] == {"acp": 5, "llm": 1}
    assert body["instruction"] == "Print hello world to /app/out.txt."
    assert body["regrade"]["reward"] == 0.0
    assert "1 passed" in body["verifier_files"]["test-stdout.txt"]
    assert "trajectories" not in body


def test_trajectory_pages(api: TestClient) -> None:
    big = "job-b/big-task__bbbbbbbb"
    page = api.get("/api/trajectory", params={"id": big, "kind": "acp", "offset": 990, "limit": 200}).json()
    assert page["total"] == 1000 and len(page["events"]) == 10
    assert page["events"][0]["text"] == "message 990"
    capped = api.get("/api/trajectory", params={"id": big, "limit": 10**6}).json()
    assert capped["limit"] == PAGE_LIMIT_MAX and len(capped["events"]) == PAGE_LIMIT_MAX
    llm = api.get("/api/trajectory", params={"id": "job-a/hello-world__aaaa0001", "kind": "llm"}).json()
    assert llm["total"] == 1 and llm["events"][0]["response"]["body"]["usage"]["prompt_tokens"] == 1234


@pytest.mark.parametrize("params", [{"kind": "nope"}, {"offset": "x"}, {"limit": "1.5"}])
def test_trajectory_bad_parameters_are_400(api: TestClient, params: dict) -> None:
    response = api.get("/api/trajectory", params={"id": "job-a/hello-world__aaaa0001", **params})
    assert response.status_code == 400 and response.json()["error"]


@pytest.mark.parametrize(("endpoint", "ident"), [
    ("trial", "../"), ("trial", "/etc"), ("trial", "job-a/../../.."), ("trial", "job-a/missing__00000000"),
    ("trial", "job-a"), ("job", "job-a/hello-world__aaaa0001"), ("job", ".."), ("trajectory", "/etc/passwd"),
])
def test_ids_outside_the_folder_or_of_the_wrong_kind_are_404(api: TestClient, endpoint: str, ident: str) -> None:
    assert api.get(f"/api/{endpoint}", params={"id": ident}).status_code == 404


def test_symlink_out_of_the_folder_is_refused(jobs: Jobs, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere__00000000"
    (outside / "trajectory").mkdir(parents=True)
    link = jobs.a / "escape__00000000"
    link.symlink_to(outside, target_is_directory=True)
    try:
        assert client(jobs.a).get("/api/trial", params={"id": "escape__00000000"}).status_code == 404
    finally:
        link.unlink()


def test_lone_llm_trajectory_file_is_recognised(tmp_path: Path) -> None:
    path = tmp_path / "exchanges.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in llm_exchanges() * 3))
    api = client(path)
    body = api.get("/api/trial", params={"id": "exchanges.jsonl"}).json()
    assert body["summary"] is None and body["totals"] == {"acp": 0, "llm": 3}
    assert api.get("/api/trial", params={"id": "."}).status_code == 404  # only the file itself


def test_compare_pairs_the_two_jobs(api: TestClient) -> None:
    body = api.get("/api/compare", params={"a": "job-a", "b": "job-b"}).json()
    assert body["kind"] == "benchflow.comparison"
    assert (body["a"]["id"], body["b"]["id"]) == ("job-a", "job-b")
    rows = {r["task"]: r for r in body["rows"]}
    assert rows["regex-log"]["delta"] == 1.0 and rows["broken-tests"]["status"] == "only_a"
    assert api.get("/api/compare", params={"a": "job-a", "b": "nope"}).status_code == 404


def test_explain_catalogue_and_one_entry(api: TestClient) -> None:
    catalogue = api.get("/api/explain").json()
    assert {"idle_timeout", "verifier_failure", "provider_auth"} <= set(catalogue)
    entry = api.get("/api/explain", params={"code": "R212", "job": "job-a"}).json()
    assert entry["code"] == "provider_auth" and "{job}" not in entry["next"]
    assert api.get("/api/explain", params={"code": "no_such_code"}).status_code == 404


def test_decision_needs_confirm_json_and_a_known_value(jobs: Jobs) -> None:
    hello = jobs.trial(jobs.a, "hello-world")
    assert client(hello).post("/api/decision", json={"decision": "approved"}).status_code == 404
    seen: list[str] = []
    state = ConfirmState(redaction_summary="2 API keys", on_decision=seen.append)
    api = client(hello, state)
    assert api.get("/api/overview").json()["confirm"] == {"redaction_summary": "2 API keys", "decision": None}
    assert api.post("/api/decision", data={"decision": "approved"}).status_code == 415  # a cross-site form post
    assert api.post("/api/decision", json={"decision": "maybe"}).status_code == 400
    assert api.get("/api/decision").status_code == 405
    assert api.post("/api/decision", json={"decision": "rejected"}).json() == {"decision": "rejected"}
    assert api.post("/api/decision", json={"decision": "approved"}).json() == {"decision": "rejected"}
    assert seen == ["rejected"] and state.decision == "rejected"


@pytest.mark.parametrize("host", ["testserver", "evil.example", "127.0.0.1.nip.io"])
def test_only_loopback_host_names_are_answered(jobs: Jobs, host: str) -> None:
    app = create_app(resolve_source(str(jobs.a)))
    assert TestClient(app, base_url=f"http://{host}").get("/api/overview").status_code == 400


def test_page_and_assets_are_local_and_locked_down(api: TestClient) -> None:
    for path in ("/", "/static/app.js", "/api/overview"):
        response = api.get(path)
        assert response.status_code == 200
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert response.headers["x-content-type-options"] == "nosniff"
    html = api.get("/").text
    refs = [ref for ref in re.findall(r'(?:src|href)="([^"]+)"', html) if not ref.startswith("#")]
    assert len(refs) == 8  # two stylesheets (uPlot's, ours) and six scripts
    for ref in refs:
        assert ref.startswith("/static/") and api.get(ref).status_code == 200
    for asset in STATIC_DIR.rglob("*"):
        if asset.suffix not in (".js", ".css", ".html"):
            continue
        code = re.sub(r"/\*!.*?\*/", "", asset.read_text())  # a vendored file's licence banner may name its home page
        assert not re.search(r"https?://", code), f"{asset.name} refers to the network"
        if asset.suffix == ".js":
            assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(", code)
