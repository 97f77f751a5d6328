"""``bench view`` end to end in a real headless Chromium (Debian's package, driven by Playwright).

Each test starts the real CLI (``bench view … --port 0``) as a subprocess,
reads the URL it prints, and drives the page. Without chromium or the
playwright package the tests skip with the reason (and fail under CI=true);
``scripts/install-browser.sh`` installs both.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.viewer_jobs import (
    TOOL_OUTPUT,
    XSS_SCRIPT,
    XSS_TASK,
    XSS_TOOL,
    Jobs,
    make_jobs,
    write_big_trial,
)

from tests.browser import CHROMIUM, LAUNCH_ARGS, require_browser

URL_RE = re.compile(r"http://127\.0\.0\.1:\d+/")


class Viewer:
    """A running ``bench view`` subprocess: its URL, and its output once it stopped."""

    def __init__(self, target: Path, *extra: str) -> None:
        env = {**os.environ, "BENCHFLOW_NO_BROWSER": "1", "NO_COLOR": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "view", str(target), "--port", "0", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        self._url = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self._url.wait(30):
            self.proc.kill()
            pytest.fail(f"bench view printed no URL: {self.lines} {self.proc.stderr.read()}")
        self.url = next(URL_RE.search(line).group(0) for line in self.lines if URL_RE.search(line))

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if URL_RE.search(line):
                self._url.set()

    def wait(self, timeout: float = 20) -> int:
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Jobs:
    made = make_jobs(tmp_path_factory.mktemp("viewer"))
    write_big_trial(made.b)
    return made


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM), headless=True,
            args=LAUNCH_ARGS, viewport={"width": 1280, "height": 900})
        yield context
        context.close()


@pytest.fixture
def page(browser_context):
    page = browser_context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda dialog: (errors.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.errors = errors
    yield page
    page.close()


@pytest.fixture
def serve():
    started: list[Viewer] = []

    def start(target: Path, *extra: str) -> Viewer:
        viewer = Viewer(target, *extra)
        started.append(viewer)
        return viewer

    yield start
    for viewer in started:
        viewer.stop()


def rows(page) -> list[str]:
    return page.locator("#trials-table tbody tr td:first-child a").all_text_contents()


def test_job_filter_trial_and_tool_output(jobs: Jobs, page, serve, tmp_path: Path) -> None:
    viewer = serve(jobs.a)
    page.goto(viewer.url)
    page.wait_for_selector("#trials-table tbody tr")
    assert len(rows(page)) == 5
    assert page.locator("#score").inner_text().count("%") >= 1
    assert "claude-agent-acp" in page.locator(".kv").first.inner_text()

    page.check("#filter-failed")
    assert "hello-world" not in rows(page) and len(rows(page)) == 4
    page.select_option("#filter-category", "idle_timeout")
    assert rows(page) == ["flaky-net"]
    page.select_option("#filter-category", "")
    page.fill("#filter-text", "regex")
    assert rows(page) == ["regex-log"]

    page.click("text=regex-log")
    page.wait_for_selector("#acp-events .event")
    outputs = page.locator("#acp-events .tool-output").all_text_contents()
    assert any(TOOL_OUTPUT in text for text in outputs)
    long_output = page.locator("#acp-events details.long").first
    assert long_output.get_attribute("open") is None  # 400 lines start collapsed
    long_output.locator("summary").click()
    assert long_output.get_attribute("open") is not None

    shot = tmp_path / "trial.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000

    page.click("#back-to-job")
    page.wait_for_selector("#trials-table tbody tr")
    assert rows(page) == ["regex-log"]  # the filter survived the round trip (kept in the URL)
    assert page.errors == []


def test_sort_and_explain_link(jobs: Jobs, page, serve) -> None:
    page.goto(serve(jobs.a).url)
    page.wait_for_selector("#trials-table tbody tr")
    plain = ["broken-tests", "flaky-net", "hello-world", "regex-log"]
    page.click("#trials-table th[data-key=task_name]")
    assert [name for name in rows(page) if name != XSS_TASK] == plain
    page.click("#trials-table th[data-key=task_name]")
    assert [name for name in rows(page) if name != XSS_TASK] == plain[::-1]
    page.click("#trials-table th[data-key=reward]")
    rewards = page.locator("#trials-table tbody tr td:nth-child(2)").all_text_contents()
    assert rewards == ["0", "0", "1", "—", "—"]  # unscored last

    page.click("a.category:text('idle_timeout')")
    page.wait_for_selector("#explain-entry")
    entry = page.locator("#explain-entry").inner_text()
    assert "idle watchdog" in entry and "--agent-idle-timeout" in entry


def test_trial_tabs_regrade_and_llm(jobs: Jobs, page, serve) -> None:
    page.goto(serve(jobs.trial(jobs.a, "hello-world")).url)
    page.wait_for_selector("#trial-header")
    from playwright.sync_api import (
        expect,  # waits for the tab's data to load, up to its timeout
    )

    page.click("[data-tab=llm]")
    expect(page.locator("#llm-events")).to_contain_text("tokens in 1,234 · out 56")
    page.click("[data-tab=verifier]")
    expect(page.locator("#regrade")).to_be_visible()
    expect(page.locator("#reward-original")).to_be_visible()
    assert "1 passed" in page.locator(".verifier-file").first.inner_text() + page.locator(".verifier-file").last.inner_text()
    page.click("[data-tab=timing]")
    expect(page.locator("#timing")).to_contain_text("agent execution")
    page.click("[data-tab=instruction]")
    expect(page.locator("#instruction")).to_contain_text("Print hello world")
    assert page.errors == []


def test_xss_in_trajectory_and_task_name_stays_text(jobs: Jobs, page, serve) -> None:
    page.goto(serve(jobs.a).url)
    page.wait_for_selector("#trials-table tbody tr")
    assert XSS_TASK in rows(page)
    page.click(f"#trials-table a:text-is('{XSS_TASK}')")
    page.wait_for_selector("#acp-events .event")
    assert XSS_TASK in page.locator("#trial-header h1").inner_text()
    assert XSS_SCRIPT in page.locator("#acp-events").inner_text()
    assert any(XSS_TOOL in text for text in page.locator("#acp-events .tool-output").all_text_contents())
    for tab in ("instruction", "verifier"):
        page.click(f"[data-tab={tab}]")
        assert XSS_SCRIPT in page.locator("#tab-panel").inner_text()
    # Escaped, not merely blocked: no element came out of the hostile strings.
    assert page.locator("main img, main script, main b").count() == 0
    assert page.evaluate("window.__xss") is None
    assert page.errors == []


def test_large_trajectory_is_paged(jobs: Jobs, page, serve) -> None:
    page.goto(serve(jobs.b).url)
    page.click("text=big-task")
    page.wait_for_selector("#acp-events .event")
    assert page.locator("#acp-events .event").count() == 200
    assert "1–200 of 10,000" in page.locator(".pager .range").first.inner_text()
    page.locator(".pager button:text('Last »')").first.click()
    page.wait_for_selector("#acp-events .event:first-child .idx:text-is('#9801')")
    assert page.locator("#acp-events .event").count() == 200
    assert "9801–10000 of 10,000" in page.locator(".pager .range").first.inner_text()


def test_lone_trajectory_file(jobs: Jobs, page, serve) -> None:
    page.goto(serve(jobs.trial(jobs.a, "regex-log") / "trajectory" / "acp_trajectory.jsonl").url)
    page.wait_for_selector("#acp-events .event")
    assert page.locator("#acp-events .event").count() == 5
    assert page.locator("[data-tab]").all_text_contents() == ["Trajectory (5 events)", "Model calls (0)"]
    assert TOOL_OUTPUT in page.locator("#acp-events").inner_text()
    assert page.errors == []


def test_compare_two_jobs(jobs: Jobs, page, serve) -> None:
    page.goto(serve(jobs.root).url)
    page.wait_for_selector("#jobs-table tbody tr")
    for box in page.locator("#jobs-table tbody input[type=checkbox]").all():
        box.check()
    page.click("#compare-selected")
    page.wait_for_selector("#compare-table tbody tr")
    text = page.locator("#compare-table").inner_text()
    assert "regex-log" in text and "only_a" in text
    # what differs comes first, then the paired test, as `bench eval compare` prints them
    settings, tested = page.locator("#compare-settings"), page.locator("#compare-paired-test")
    assert settings.bounding_box()["y"] < tested.bounding_box()["y"] < page.locator("#compare-table").bounding_box()["y"]
    assert "McNemar exact p" in tested.inner_text() and "Flipped to B" in tested.inner_text()
    assert page.errors == []


@pytest.mark.parametrize(("button", "decision", "code"), [("#confirm-approve", "approved", 0),
                                                          ("#confirm-reject", "rejected", 3)])
def test_confirm_bar_decides_exit(jobs: Jobs, page, serve, button: str, decision: str, code: int) -> None:
    viewer = serve(jobs.trial(jobs.a, "hello-world"), "--confirm", "--redaction-summary", "2 API keys, 1 bearer token")
    page.goto(viewer.url)
    page.wait_for_selector("#confirm-bar:not([hidden])")
    assert "Masked for you: 2 API keys, 1 bearer token" in page.locator("#confirm-bar").inner_text()
    page.click(button)
    page.wait_for_selector(f"#confirm-status:has-text('{decision}')")
    assert viewer.wait() == code
    assert f"DECISION: {decision}" in viewer.lines


# ---- Pareto / Outcomes / Training tabs and --export ---------------------------------------------------------

SHOTS = os.environ.get("BENCHFLOW_VIEWER_SHOTS")
"""A folder to keep the tab screenshots in (they go to the test's tmp folder otherwise)."""


@pytest.fixture(scope="module")
def pictures(tmp_path_factory: pytest.TempPathFactory):
    from fixtures.viewer_pictures import make_picture_jobs

    return make_picture_jobs(tmp_path_factory.mktemp("pictures"))


def shoot(page, tmp_path: Path, name: str) -> None:
    folder = Path(SHOTS) if SHOTS else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / f"{name}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def pareto_rows(page) -> dict[str, list[str]]:
    table = {}
    for row in page.locator("#pareto-table tbody tr").all():
        cells = row.locator("td").all_inner_texts()
        table[cells[1].split(" · ")[1]] = cells
    return table


def check_pareto(page) -> dict[str, list[str]]:
    page.wait_for_selector("#pareto figure.chart[data-chart=drawn] >> nth=1")
    rows = pareto_rows(page)
    assert set(rows) == {"cheap-model", "pricey-model", "slow-model", "no model"} and len(page.locator("#pareto-table tbody tr").all()) == 5
    assert rows["cheap-model"][4] == "50.0%" and rows["pricey-model"][4] == "75.0%" and rows["slow-model"][4] == "25.0%"
    assert rows["cheap-model"][8:10] == ["on frontier", "on frontier"] and rows["slow-model"][8:10] == ["dominated", "dominated"]
    cost_chart = page.locator("#pareto figure.chart").first.get_attribute("aria-label")
    assert "Frontier: #1 fake-acp · cheap-model · acp; #2 fake-acp · pricey-model · acp." in cost_chart
    assert "2 task sets" in page.locator("#pareto-refused").inner_text()
    return rows


def test_pareto_outcomes_and_training_tabs(pictures, page, serve, tmp_path: Path) -> None:
    from fixtures.viewer_jobs import XSS_TASK
    from playwright.sync_api import expect

    page.goto(serve(pictures.root).url + "#/?view=pareto")
    check_pareto(page)
    shoot(page, tmp_path, "pareto")

    page.click("[data-view=outcomes]")
    page.wait_for_selector("#timeline figure.chart[data-chart=drawn]")
    # passed: oracle 4, cheap 4, pricey 6, slow 2, mixed 4 + 4; failed: nop 4, cheap 4, pricey 2, slow 6
    expect(page.locator("#outcome-counts .stat.passed .n")).to_have_text("24")
    expect(page.locator("#outcome-counts .stat.failed .n")).to_have_text("16")
    assert page.locator("#task-rates-table tbody tr").count() == 4
    assert XSS_TASK in page.locator("#task-rates-table").inner_text()
    shoot(page, tmp_path, "outcomes")
    page.select_option("#timeline-stack", "category")
    expect(page.locator("#timeline")).to_contain_text("No trial has an error category.")
    page.select_option("#outcomes-job", "acp-slow")
    expect(page.locator("#outcome-counts .stat.passed .n")).to_have_text("2")
    assert page.locator("#task-rates-table tbody tr td:nth-child(2)").all_inner_texts() == ["0 / 2", "0 / 2", "1 / 2", "1 / 2"]

    page.click("[data-view=training]")
    page.wait_for_selector("#rollouts-table tbody tr")
    assert "7 / 40" in page.locator("#training-summary").inner_text()
    assert "some call(s) without logprobs" in page.locator("#training-reasons").inner_text()
    assert XSS_TASK in page.locator("#rollouts-table").inner_text()
    shoot(page, tmp_path, "training")

    page.emulate_media(color_scheme="dark")
    page.click("[data-view=pareto]")
    check_pareto(page)
    shoot(page, tmp_path, "pareto-dark")
    page.emulate_media(color_scheme="light")

    assert page.locator("main img, main script").count() == 0 and page.evaluate("window.__xss") is None
    assert page.errors == []


def test_job_page_tabs_and_compare_pareto(pictures, page, serve) -> None:
    page.goto(serve(pictures.root).url + "#/job?id=acp-cheap&view=training")
    page.wait_for_selector("#rollouts-table tbody tr")
    assert "7 / 8" in page.locator("#training-summary").inner_text()
    page.click("[data-view=trials]")
    page.wait_for_selector("#trials-table tbody tr")
    assert page.locator("#trials-table tbody tr").count() == 8
    page.goto(page.url.split("#")[0] + "#/compare?a=acp-cheap&b=acp-slow")
    page.wait_for_selector("#pareto figure.chart[data-chart=drawn]")
    assert page.locator("#pareto-table tbody tr").count() == 2
    assert page.errors == []


def test_export_opens_offline_with_the_same_numbers(pictures, page, serve, tmp_path: Path) -> None:
    from fixtures.viewer_pictures import SECRET

    out = tmp_path / "export.html"
    made = subprocess.run([sys.executable, "-m", "benchflow.cli", "view", str(pictures.root), "--export", str(out)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr

    page.goto(serve(pictures.root).url + "#/?view=pareto")
    live = check_pareto(page)

    requests: list[str] = []
    console: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("console", lambda message: console.append(message.text) if message.type == "error" else None)
    page.goto(out.as_uri() + "#/?view=pareto")
    assert check_pareto(page) == live
    page.click("[data-view=outcomes]")
    page.wait_for_selector("#timeline figure.chart[data-chart=drawn]")
    page.click("[data-view=jobs]")
    page.click("#jobs-table a:text-is('acp-cheap')")
    page.click("#trials-table a >> nth=0")
    page.wait_for_selector("#acp-events .event")
    text = page.locator("main").inner_text()
    assert "~/projects/bench/notes.txt" in text and SECRET not in page.content()
    shoot(page, tmp_path, "export-trial")
    assert {url.split("#")[0] for url in requests} == {out.as_uri()}  # the file itself, nothing else
    assert console == [] and page.errors == []  # a blocked inline script or style would log a CSP error


HARBOR_JOB = Path(__file__).resolve().parents[1] / "fixtures" / "harbor-job" / "jobs" / "2026-05-01__10-00-00"


def test_a_harbor_trials_atif_steps_are_its_trajectory(page, serve, tmp_path: Path) -> None:
    job = tmp_path / HARBOR_JOB.name
    shutil.copytree(HARBOR_JOB, job)
    viewer = serve(job)
    page.goto(viewer.url + "#/trial?id=fix-bug__Qm7aZ2k")
    page.wait_for_selector("#acp-events .event")
    assert page.locator("#acp-events .event").count() == 9
    assert page.locator("#acp-events .event .role").all_text_contents()[:4] == ["User", "Thought", "Agent", "Tool call"]
    text = page.locator("#acp-events").inner_text()
    assert "Solve the task fix-bug" in text and "return a + b" in text and "The file /app/calc.py has been updated." in text
    assert page.errors == []
