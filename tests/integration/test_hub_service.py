"""``bench hub serve`` end to end, over SQLite and PostgreSQL: publish, run from the hub, push, leaderboard.

One oracle job runs (docker) against a dataset published on a hub (``bench run
-d org/name@version --hub URL``); every hub case then publishes the same tasks
and pushes that job. The leaderboard is read in headless Chromium.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fixtures.hub_server import Hub, bench_cmd, postgres_database

from tests.browser import CHROMIUM, require_browser

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tests" / "fixtures" / "tasks"
DATASET = "acme/mini@1.0"
XSS_LABEL = '<img src=x onerror="window.__xss=1">'


def _tasks_dir(base: Path) -> Path:
    tasks = base / "tasks"
    tasks.mkdir()
    for name in ("reward-pass", "reward-fail"):
        shutil.copytree(TASKS / name, tasks / name)
    return tasks


def _publish(hub: Hub, tasks: Path, name: str = DATASET, token: str | None = None):
    return bench_cmd("hub", "publish", str(tasks), "--name", name, "--description", "two fixture tasks",
                     "--license", "MIT", "--kind", "fixture", "--source-repo", "https://example.invalid/acme/mini",
                     "--source-commit", "0" * 40, "--exporter", "test@1", env=hub.env(token))


@pytest.fixture(scope="module")
def hub_job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(tasks folder, the job folder of an oracle run of DATASET read from a hub)."""
    base = tmp_path_factory.mktemp("hub-job")
    tasks = _tasks_dir(base)
    hub = Hub(f"sqlite:///{base / 'hub.sqlite3'}", base / "blobs")
    try:
        published = _publish(hub, tasks)
        assert published.returncode == 0, published.stderr
        ran = bench_cmd("run", "-d", DATASET, "--hub", hub.url, "--jobs-dir", str(base / "jobs"), "--job-name", "j1",
                        env={"BENCHFLOW_CACHE": str(base / "cache")})
    finally:
        hub.stop()
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Outcomes: 2 scored (1 passed, 1 failed)" in ran.stdout
    job = base / "jobs" / "j1"
    summary = json.loads((job / "summary.json").read_text())
    assert (summary["dataset_name"], summary["dataset_version"]) == ("acme/mini", "1.0")
    yield tasks, job


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def hub(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    base = tmp_path_factory.mktemp(f"hub-{request.param}")
    drop = None
    if request.param == "sqlite":
        db = f"sqlite:///{base / 'hub.sqlite3'}"
    else:
        db, drop = postgres_database()
    served = Hub(db, base / "blobs")
    yield served
    served.stop()
    if drop:
        drop()


@pytest.fixture(scope="module")
def published(hub: Hub, hub_job: tuple[Path, Path]) -> Hub:
    result = _publish(hub, hub_job[0])
    assert result.returncode == 0, result.stderr
    assert f"Published {DATASET} (2 tasks)" in result.stdout
    return hub


@pytest.mark.docker
def test_registry_json_serves_every_task_with_archive_and_digest(published: Hub, hub_job) -> None:
    from benchflow.tasks.digest import task_digest

    registry = httpx.get(f"{published.url}/api/registry.json").json()
    [entry] = registry
    assert (entry["name"], entry["version"], entry["license"]) == ("acme/mini", "1.0", "MIT")
    by_name = {t["name"]: t for t in entry["tasks"]}
    assert set(by_name) == {"reward-pass", "reward-fail"}
    for name, task in by_name.items():
        assert task["digest"] == task_digest(hub_job[0] / name)
        archive = httpx.get(task["archive_url"])
        assert archive.status_code == 200 and archive.headers["x-benchflow-task-digest"] == task["digest"]


@pytest.mark.docker
def test_republishing_a_version_is_refused(published: Hub, hub_job) -> None:
    again = _publish(published, hub_job[0])
    assert again.returncode == 2
    assert f"{DATASET} is already published" in again.stderr and "Traceback" not in again.stderr


@pytest.mark.docker
def test_a_wrong_token_is_refused(published: Hub, hub_job) -> None:
    result = bench_cmd("hub", "push", str(hub_job[1]), env=published.env("bfh_not-a-token"))
    assert result.returncode == 2
    assert "HTTP 401" in result.stderr and "not valid on this hub" in result.stderr
    result = _publish(published, hub_job[0], name="acme/other@1.0", token="bfh_not-a-token")
    assert result.returncode == 2 and "HTTP 401" in result.stderr


@pytest.mark.docker
def test_a_malformed_run_is_refused_with_the_schema_error(published: Hub, hub_job, tmp_path: Path) -> None:
    job = tmp_path / "j1"
    shutil.copytree(hub_job[1], job)
    result_file = next(job.glob("reward-pass__*/result.json"))
    record = json.loads(result_file.read_text())
    record["n_tool_calls"] = "many"
    result_file.write_text(json.dumps(record))
    pushed = bench_cmd("hub", "push", str(job), env=published.env())
    assert pushed.returncode == 2, pushed.stdout
    assert "HTTP 422" in pushed.stderr
    assert f"{result_file.parent.name}/result.json does not match the result schema: n_tool_calls: 'many'" \
        in pushed.stderr


@pytest.mark.docker
def test_a_run_of_other_task_content_is_refused(published: Hub, hub_job, tmp_path: Path) -> None:
    job = tmp_path / "j1"
    shutil.copytree(hub_job[1], job)
    result_file = next(job.glob("reward-fail__*/result.json"))
    record = json.loads(result_file.read_text())
    record["task_digest"] = "sha256:" + "1" * 64
    result_file.write_text(json.dumps(record))
    pushed = bench_cmd("hub", "push", str(job), env=published.env())
    assert pushed.returncode == 2
    assert f"task reward-fail ran with digest sha256:{'1' * 64}, but {DATASET} pins" in pushed.stderr


@pytest.mark.docker
def test_a_pushed_run_is_on_the_leaderboard_page(published: Hub, hub_job, tmp_path_factory) -> None:
    pushed = bench_cmd("hub", "push", str(hub_job[1].parent), "--label", "oracle baseline", env=published.env())
    assert pushed.returncode == 0, pushed.stderr
    assert f"to {DATASET}" in pushed.stdout and "oracle —: solve rate 0.500 over 2 tasks" in pushed.stdout
    board = httpx.get(f"{published.url}/api/datasets/acme/mini/1.0/leaderboard").json()
    [entry] = [e for e in board["entries"] if e["label"] == "oracle baseline"]
    assert (entry["agent"], entry["tasks"], entry["trials"], entry["solve_rate"]) == ("oracle", 2, 2, 0.5)
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            page = browser.new_page()
            page.goto(f"{published.url}/")
            page.click("text=acme/mini@1.0")
            row = page.locator("#leaderboard tbody tr", has_text="oracle baseline")
            cells = row.locator("td").all_text_contents()
            assert cells[1:5] == ["oracle", "—", "oracle baseline", "0.500"]
            assert cells[6] == "0.000–1.000"  # the 95% interval over two tasks
            tasks = page.locator("#tasks tbody tr td:first-child").all_text_contents()
            assert tasks == ["reward-fail", "reward-pass"]
            hostile = bench_cmd("hub", "push", str(hub_job[1]), "--label", XSS_LABEL, env=published.env())
            assert hostile.returncode == 0, hostile.stderr
            page.reload()
            assert page.locator("#leaderboard tbody tr", has_text=XSS_LABEL).count() == 1  # shown as text
            assert page.evaluate("window.__xss") is None
        finally:
            browser.close()


@pytest.mark.docker
def test_hub_show_gives_the_versions_control_results(published: Hub, hub_job, tmp_path: Path) -> None:
    """An oracle run and a nop run of the version, pushed: show names the tasks that went against each
    (the fixture's oracle fails reward-fail on purpose; nop solves neither task)."""
    jobs = tmp_path / "jobs"
    ran = bench_cmd("run", "-d", DATASET, "--hub", published.url, "--agent", "nop", "--jobs-dir", str(jobs),
                    "--job-name", "nop-control", env={"BENCHFLOW_CACHE": str(tmp_path / "cache")})
    assert ran.returncode in (0, 1), ran.stdout + ran.stderr
    for job, label in ((hub_job[1], "oracle control"), (jobs / "nop-control", "nop control")):
        pushed = bench_cmd("hub", "push", str(job), "--label", label, env=published.env())
        assert pushed.returncode == 0, pushed.stderr
    shown = bench_cmd("hub", "show", DATASET, "--hub", published.url)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "oracle: solve rate 0.500 over 2/2 tasks" in out and "(oracle control)" in out
    assert "not solved by the oracle: reward-fail\n" in out
    assert "empty (nop): solve rate 0.000 over 2/2 tasks" in out and "solved doing nothing" not in out
    as_json = json.loads(bench_cmd("hub", "show", DATASET, "--hub", published.url, "--json").stdout)
    assert {t["name"] for t in as_json["tasks"]} == {"reward-pass", "reward-fail"}
    by_kind = {c["control"]: c for c in as_json["controls"]}
    assert by_kind["oracle"]["control_deviations"] == ["reward-fail"] and by_kind["oracle"]["label"] == "oracle control"
    assert by_kind["empty"]["control_deviations"] == [] and by_kind["empty"]["agent"] == "nop"
