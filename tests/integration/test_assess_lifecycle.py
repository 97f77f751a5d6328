"""``bench assess`` end to end on two real rollouts of one task (the oracle's and nop's): the release proof from
the backend, the pair made by ``bench preferences pairs`` and voted on in the rating page (``bench view --rate``
in headless Chromium), labels, corrections, withdrawals, and evidence that breaks when one byte changes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.assessgen import PROTOCOL, RUBRIC, Kit
from tests.browser import CHROMIUM, LAUNCH_ARGS, require_browser
from tests.conftest import ROOT, run_bench
from tests.taskgen import make_task

SHA = re.compile(r"\b[0-9a-f]{64}\b")
URL_RE = re.compile(r"http://127\.0\.0\.1:\d+/")
DRAFT = "FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo '<h1>draft</h1>' > /app/index.html\n"
FINAL = "echo '<h1>final page</h1>' > /app/index.html"
PASS_IF_FINAL = "if grep -q final /app/index.html; then echo 1; else echo 0; fi > /logs/verifier/reward.txt"


def ok(*args: str) -> str:
    done = run_bench(*args)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def rollout(tmp_path: Path, job: str, *agent: str) -> Path:
    ok("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs"), "--job-name", job,
       "--freeze-workspace", *agent)
    return next((tmp_path / "jobs" / job).glob("hello__*"))


def browser_page(profile: Path):
    """A headless Chromium page (Playwright), or a skip with the reason (a failure under CI)."""
    require_browser()
    from playwright.sync_api import sync_playwright

    return sync_playwright, dict(user_data_dir=str(profile), executable_path=str(CHROMIUM), headless=True,
                                 args=LAUNCH_ARGS)


def vote_in_the_rating_page(store: Path, profile: Path, key: str) -> None:
    """Start ``bench view --rate STORE``; rater alice scores both sides and presses ``key``."""
    launcher, options = browser_page(profile)
    env = {**os.environ, "BENCHFLOW_NO_BROWSER": "1", "NO_COLOR": "1"}
    server = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "view", "--rate", str(store), "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    urls: list[str] = []
    found = threading.Event()

    def read() -> None:
        for line in server.stdout:
            if URL_RE.search(line):
                urls.append(URL_RE.search(line).group(0))
                found.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert found.wait(30), "bench view --rate printed no URL"
        with launcher() as pw:
            context = pw.chromium.launch_persistent_context(**options)
            page = context.new_page()
            page.set_default_timeout(15_000)
            page.goto(urls[0])
            page.fill("#rater-name", "alice")
            page.click("#start")
            page.wait_for_selector("#rating:not([hidden])")
            page.select_option("#left-clarity", "5")
            page.select_option("#right-clarity", "2")
            page.fill("#reason", "the left page is finished")
            page.locator("body").click(position={"x": 5, "y": 5})
            page.keyboard.press(key)
            page.wait_for_selector("#done:not([hidden])")
            context.close()
    finally:
        server.terminate()
        server.wait(10)


def make_ref(trial: Path, out: Path, *extra: str) -> Path:
    workspace = trial / "evidence" / "workspace"
    result = json.loads((trial / "result.json").read_text())
    ok("assess", "attempt-ref", str(trial), "--output", str(workspace), "--review-artifact",
       str(workspace / "index.html"), "--sandbox-provider", result["environment"], "--out", str(out), *extra)
    return out


@pytest.mark.docker
def test_assessment_lifecycle_on_two_real_rollouts(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "hello", solve=FINAL, test=PASS_IF_FINAL, dockerfile=DRAFT)
    rollouts = [rollout(tmp_path, "first"), rollout(tmp_path, "second", "-a", "nop")]
    untouched = {p: p.read_bytes() for r in rollouts for p in r.rglob("*")
                 if p.is_file() and (p.name in ("result.json", "rewards.jsonl") or "trajectory" in p.parts)}
    refs = [make_ref(r, tmp_path / f"ref-{n}.json") for n, r in enumerate(rollouts)]
    (tmp_path / "rubric.json").write_text(json.dumps(RUBRIC))
    (tmp_path / "protocol.json").write_text(json.dumps(PROTOCOL))
    kit = Kit(tmp_path, rollouts, refs, tmp_path / "rubric.json", tmp_path / "protocol.json")
    side = str(kit.sidecar)
    assert kit.sidecar == rollouts[0] / "assessment"

    ok("assess", "create", side, *kit.create_args())

    # The backend observes each attempt's sandbox: gone after the runs; a live one is reported present.
    proof = tmp_path / "proof.json"
    proof.write_text(ok("sandbox", "list", "--release-proof", str(refs[0]), "--release-proof", str(refs[1])))
    observed = json.loads(proof.read_text())
    assert observed["schema"] == "benchflow.assessment-release-proof.v1"
    assert [o["state"] for o in observed["observations"]] == ["absent", "absent"]
    created = ok("sandbox", "create", str(tmp_path / "tasks" / "hello"), "--sandbox",
                 json.loads((rollouts[0] / "result.json").read_text())["environment"])
    live = re.search(r"cleanup --id (\S+)", created).group(1)
    try:
        live_ref = make_ref(rollouts[1], tmp_path / "live-ref.json", "--runtime",
                            f"{observed['observations'][0]['provider']}:{live}:verifier")
        live_proof = run_bench("sandbox", "list", "--release-proof", str(live_ref))
        assert live_proof.returncode == 1 and f"{live} is present" in live_proof.stderr
        states = {o["runtime_id"]: o["state"] for o in json.loads(live_proof.stdout)["observations"]}
        assert states[live] == "present"
    finally:
        ok("sandbox", "cleanup", "--id", live)

    ok("assess", "release", side, "--proof", str(proof))

    # The collector: bench preferences pairs makes the blind pair, a rater votes in the rating page.
    store = tmp_path / "store"
    ok("preferences", "pairs", str(tmp_path / "jobs" / "first"), str(tmp_path / "jobs" / "second"), "--store",
       str(store), "--out", str(tmp_path / "pairs.jsonl"), "--output", "evidence/workspace", "--entry", "index.html",
       "--rubric", str(kit.rubric), "--seed", "7")
    vote_in_the_rating_page(store, tmp_path / "profile", "1")  # "left is better", whichever attempt is left
    db = store / "workspace.sqlite3"
    with contextlib.closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT v.assignment_id, o.trial_path FROM votes v "
                            "JOIN outputs o ON o.output_id = v.left_output").fetchall()
    assert len(rows) == 1
    assignment, left_trial = rows[0]
    left_is_a = Path(left_trial).resolve() == rollouts[0].resolve()
    code = str(ROOT / "src" / "benchflow" / "viewer")  # the rating page's code
    ok("assess", "assign", side, "--collector-db", str(db), "--collector-code", code, "--assignment", assignment)
    answer = json.loads(ok("assess", "import-vote", side, "--collector-db", str(db), "--collector-code", code,
                           "--json"))["event"]
    assert answer["payload"]["choice"] == ("left" if left_is_a else "right")
    assert answer["payload"]["actor"] == "alice" and answer["payload"]["reason"] == "the left page is finished"
    assert answer["payload"]["scores"]["A" if left_is_a else "B"] == {"clarity": 5.0}
    first, second = (1, 0) if left_is_a else (0, 1)
    assert f"revision 1: {first} (ready)" in ok("assess", "reduce", side)
    receipt = SHA.search(ok("assess", "consume", side, "--revision", "1", "--consumer", "trainer", "--receipt",
                            "ledger-1")).group(0)
    ok("assess", "correct", side, "--supersedes", answer["sha256"], "--choice", "right" if left_is_a else "left",
       "--reason", "the other page is finished", "--correction-reason", "sides misread", "--actor", "alice")
    assert f"revision 2: {second} (ready)" in ok("assess", "reduce", side)
    ok("assess", "withdraw", side, "--revision", "1", "--reason", "sides misread", "--disposition",
       "queued_compensation", "--actor", "ops")
    label = json.loads(ok("assess", "label", side, "--check"))
    assert (label["label"], label["revision"], label["revisions"][0]["withdrawn"]["disposition"]) == (
        second, 2, "queued_compensation")
    assert "Verified" in ok("assess", "verify", side, "--evidence", "--expect-event", receipt)

    # One byte of an attempt's output changes: the evidence no longer verifies.
    hello = rollouts[1] / "evidence" / "workspace" / "index.html"
    original = hello.read_bytes()
    hello.write_bytes(b"[" + original[1:])
    broken = run_bench("assess", "verify", side, "--evidence")
    assert broken.returncode == 1 and "evidence attempt B" in broken.stderr
    hello.write_bytes(original)
    ok("assess", "verify", side, "--evidence")

    # One byte of one log event changes: the chain no longer verifies.
    log = kit.sidecar / "events.jsonl"
    data = log.read_bytes()
    at = data.index(b"ledger-1")
    log.write_bytes(data[:at] + b"ledger-2" + data[at + 8:])
    broken = run_bench("assess", "verify", side, "--expect-event", receipt)
    assert broken.returncode == 1 and "sha256 does not match" in broken.stderr

    assert {p: p.read_bytes() for p in untouched} == untouched
