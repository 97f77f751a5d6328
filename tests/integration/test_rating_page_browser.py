"""``bench view --rate STORE`` in a real headless Chromium: keyboard votes, a skip, and nothing that unblinds.

Starts the real CLI as a subprocess on a loopback port, drives the page with
Playwright (Debian's chromium, as tests/integration/test_viewer_browser.py),
then reads the store the server wrote. Without chromium or playwright the test
skips with the reason (and fails under CI=true); scripts/install-browser.sh
installs both.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from fixtures.jobgen import TrialSpec, write_job
from fixtures.preference_jobs import rated_job

from tests.browser import CHROMIUM, LAUNCH_ARGS, require_browser

URL_RE = re.compile(r"http://127\.0\.0\.1:\d+/")
NAMES = ("alpha-agent", "beta-agent", "gamma-agent", "one-model", "two-model", "arms-job")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    arms = [("alpha-agent", "one-model"), ("beta-agent", "one-model"), ("gamma-agent", "two-model")]
    trials = [TrialSpec(task, agent=a, model=m, files={"artifacts/index.html": f"<h1>page {task}-{n}</h1>"})
              for task in ("t1", "t2") for n, (a, m) in enumerate(arms)]
    job = write_job(tmp_path, "arms-job", trials)
    (tmp_path / "rubric.json").write_text(json.dumps(
        {"id": "web", "version": "1", "aspects": [{"id": "layout", "label": "Layout", "min": 1, "max": 5}]}))
    env = {**os.environ, "NO_COLOR": "1"}
    made = subprocess.run([sys.executable, "-m", "benchflow.cli", "preferences", "pairs", str(job), "--store",
                           str(tmp_path / "store"), "--out", str(tmp_path / "pairs.jsonl"), "--entry", "index.html",
                           "--rubric", str(tmp_path / "rubric.json"), "--seed", "3"],
                          capture_output=True, text=True, env=env, check=False)
    assert made.returncode == 0, made.stderr
    return tmp_path / "store"


@pytest.fixture
def rating_url(store: Path):
    env = {**os.environ, "BENCHFLOW_NO_BROWSER": "1", "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "view", "--rate", str(store), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            lines.append(line)
            if URL_RE.search(line):
                found.set()

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(30):
        proc.kill()
        pytest.fail(f"bench view --rate printed no URL: {lines} {proc.stderr.read()}")
    yield next(URL_RE.search(line).group(0) for line in lines if URL_RE.search(line))
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def page(tmp_path_factory: pytest.TempPathFactory):
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM), headless=True,
            args=LAUNCH_ARGS, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(15_000)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.errors = errors
        yield page
        context.close()


def _votes(store: Path) -> list[dict]:
    db = sqlite3.connect(store / "workspace.sqlite3")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("SELECT * FROM votes ORDER BY created_at, rowid")]


def test_keyboard_votes_and_a_skip_are_written_and_names_never_shown(store: Path, rating_url: str, page) -> None:
    from playwright.sync_api import expect

    bodies: list[str] = []
    page.on("response", lambda r: bodies.append(r.text()) if "/api/" in r.url else None)
    page.goto(rating_url)
    page.fill("#rater-name", "ann")
    page.click("#start")
    page.wait_for_selector("#rating:not([hidden])")
    assert page.locator("#progress").inner_text() == "0 of 6 pairs answered"
    shown = [(page.locator("#left-id").inner_text(), page.locator("#right-id").inner_text())]
    page.select_option("#left-layout", "4")
    page.select_option("#right-layout", "2")
    page.locator("body").click(position={"x": 5, "y": 5})  # leave the select so the keys reach the page
    keys = ["1", "ArrowRight", "0", "s", "=", "2"]
    for n, key in enumerate(keys, 1):
        page.keyboard.press(key)
        if n < len(keys):
            expect(page.locator("#progress")).to_have_text(f"{n} of 6 pairs answered")
            shown.append((page.locator("#left-id").inner_text(), page.locator("#right-id").inner_text()))
    page.wait_for_selector("#done:not([hidden])")

    votes = _votes(store)
    assert [v["choice"] for v in votes] == ["left", "right", "tie", "skip", "tie", "right"]
    assert [(v["left_output"], v["right_output"]) for v in votes] == shown
    assert {v["rater_id"] for v in votes} == {"ann"} and {v["rater_kind"] for v in votes} == {"person"}
    assert all(v["assignment_id"] for v in votes) and {v["source"] for v in votes} == {"bench view --rate"}
    db = sqlite3.connect(store / "workspace.sqlite3")
    assert sorted(db.execute("SELECT output_id, aspect, score FROM scores")) == sorted(
        [(shown[0][0], "layout", 4.0), (shown[0][1], "layout", 2.0)])

    page.reload()  # the browser remembers the rater; every pair is answered
    page.wait_for_selector("#done:not([hidden])")
    page.click("#switch")  # another rater on the same browser, as a guest
    page.click("#guest")
    expect(page.locator("#progress")).to_have_text("0 of 6 pairs answered")
    page.keyboard.press("2")
    expect(page.locator("#progress")).to_have_text("1 of 6 pairs answered")
    guest = _votes(store)[-1]
    assert guest["rater_kind"] == "guest" and guest["rater_id"].startswith("guest-") and guest["choice"] == "right"
    seen = page.content() + "".join(bodies)
    assert not [name for name in NAMES if name in seen]
    assert not page.errors


def test_rating_server_answers_loopback_hosts_only(rating_url: str) -> None:
    assert httpx.get(rating_url + "api/rate/setup").json()["pairs"] == 6
    assert httpx.get(rating_url + "api/rate/setup", headers={"Host": "evil.example"}).status_code == 400
    bad = httpx.post(rating_url + "api/rate/vote", json={"rater": "ann", "assignment_id": "a_nope", "choice": "left"})
    assert bad.status_code == 404


def test_bench_view_shows_the_ratings_table_of_a_job(tmp_path: Path, page) -> None:
    job, _store = rated_job(tmp_path)
    env = {**os.environ, "BENCHFLOW_NO_BROWSER": "1", "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "view", str(job), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = next(URL_RE.search(line).group(0) for line in proc.stdout if URL_RE.search(line))
        page.goto(url)
        table = page.locator(".ratings-table")
        table.wait_for()
        assert "Preferences by agent+model" in page.locator(".ratings h2").inner_text()
        cells = table.locator("tbody tr td:first-child").all_text_contents()
        assert set(cells) == {"ann-agent/m", "bo-agent/m"}
        assert " – " in table.locator("tbody tr td:nth-child(3)").first.inner_text()
        assert not page.errors
    finally:
        proc.terminate()
        proc.wait(10)
