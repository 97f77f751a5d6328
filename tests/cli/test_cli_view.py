"""``bench view`` / ``bench eval view`` as a user runs them (subprocess), answering --confirm over HTTP."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fixtures.viewer_jobs import Jobs, make_jobs

URL_RE = re.compile(r"http://127\.0\.0\.1:(\d+)/")


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Jobs:
    return make_jobs(tmp_path_factory.mktemp("viewer"))


def start(*args: str) -> tuple[subprocess.Popen, str, list[str]]:
    """Start ``bench view`` and return it with its URL and the stdout lines read so far."""
    env = {**os.environ, "BENCHFLOW_NO_BROWSER": "1", "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if URL_RE.search(line):
            return proc, URL_RE.search(line).group(0), lines
    proc.wait(10)
    pytest.fail(f"no URL printed; exit {proc.returncode}: {lines} {proc.stderr.read()}")


@pytest.mark.parametrize("command", [["view"], ["eval", "view"]])
def test_help_matches_the_reference(bench, command: list[str]) -> None:
    result = bench(*command, "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    for expected in ("ROLLOUT_DIR", "--port", "[default: 8888]", "--confirm", "--redaction-summary",
                     "View a trial or session trajectory in the browser.", "exit 0 on approve, 3 on reject"):
        assert expected in text


@pytest.mark.parametrize(("target", "message"), [
    ("/no/such/folder", "no such file or folder"),
    ("hf://only-org", "hf://<org>/<dataset>"),
])
def test_bad_rollout_dir_is_one_line_exit_2(bench, target: str, message: str) -> None:
    result = bench("view", target)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_a_folder_with_nothing_to_view_is_exit_2(bench, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    assert bench("view", str(tmp_path)).returncode == 2
    result = bench("view", str(tmp_path / "notes.txt"))
    assert result.returncode == 2 and "trajectory .jsonl" in result.stderr


@pytest.mark.parametrize(("decision", "code"), [("approved", 0), ("rejected", 3)])
def test_confirm_prints_the_decision_and_exits(jobs: Jobs, decision: str, code: int) -> None:
    proc, url, lines = start("view", str(jobs.a), "--port", "0", "--confirm", "--redaction-summary", "1 API key")
    try:
        overview = httpx.get(url + "api/overview", timeout=10).json()
        assert overview["confirm"] == {"redaction_summary": "1 API key", "decision": None}
        response = httpx.post(url + "api/decision", json={"decision": decision}, timeout=10)
        assert response.json() == {"decision": decision}
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert f"DECISION: {decision}" in lines + out.splitlines()


def test_busy_port_moves_to_the_next_and_ctrl_c_stops(jobs: Jobs) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        busy = taken.getsockname()[1]
        proc, url, lines = start("view", str(jobs.a), "--port", str(busy))
        try:
            assert int(URL_RE.search(url).group(1)) != busy
            assert any(f"Port {busy} is in use" in line for line in lines)
            assert httpx.get(url + "api/job", params={"id": "."}, timeout=10).json()["name"] == "job-a"
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=20)
        finally:
            proc.kill()
    assert proc.returncode == 130
