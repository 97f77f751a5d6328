"""``bench tasks check --level equivalence | acceptance-live``: real sandboxes, real verifiers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

BACKENDS = [pytest.param("docker", marks=pytest.mark.docker),
            pytest.param("local", marks=pytest.mark.local_sandbox)]
PYTHON_IMAGE = "FROM benchflow/python:3.11-bookworm\nWORKDIR /app\nRUN echo stale > /app/stale.txt\n"

# Removes a file of the image, writes a plain answer and a JSON document.
SOLVE_BOTH = """rm /app/stale.txt
printf '42\\n' > /app/answer.txt
printf '{"a": 1, "b": [1, 2]}\\n' > /app/out.json"""

# Compares values, not bytes: every value-equivalent variant passes, every corrupted one fails.
ROBUST_TEST = """python3 - <<'EOF' > /logs/verifier/reward.txt
import json, os
try:
    answer = open("/app/answer.txt", encoding="utf-8").read().strip()
    data = json.load(open("/app/out.json", encoding="utf-8"))
    gone = not os.path.exists("/app/stale.txt")
    print(1 if gone and answer == "42" and data == {"a": 1, "b": [1, 2]} else 0)
except Exception:
    print(0)
EOF"""


def rows(report: dict) -> dict[str, dict]:
    return {r["variant"]: r for r in report["variants"]}


def digest(task: Path) -> str:
    return run_bench("tasks", "digest", str(task)).stdout.strip()


@pytest.mark.docker
def test_equivalence_passes_a_verifier_that_compares_values(tmp_path: Path) -> None:
    task = make_task(tmp_path, "robust", solve=SOLVE_BOTH, test=ROBUST_TEST, dockerfile=PYTHON_IMAGE)
    out = tmp_path / "reports" / "equivalence.json"
    done = run_bench("tasks", "check", "--level", "equivalence", "--sandbox", "docker",
                     "--report-output", str(out), str(task))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 task checked at level equivalence: 1 ok, 0 with issues" in done.stdout
    report = json.loads(out.read_text())
    assert report["kind"] == "benchflow.equivalence-report" and report["schema_version"] == 1
    assert report["ok"] and report["oracle"]["reward"] == 1.0 and report["sandbox"] == "docker"
    assert report["output_files"] == ["answer.txt", "out.json"]
    got = rows(report)
    assert set(got) == {"nop", "emptied", "truncated", "garbage", "trailing-newline",
                        "trailing-whitespace", "line-endings", "json-reformatted"}
    for name in ("nop", "emptied", "truncated", "garbage"):
        assert got[name]["kind"] == "wrong" and got[name]["reward"] == 0.0 and got[name]["ok"], name
    for name in ("trailing-newline", "trailing-whitespace", "line-endings", "json-reformatted"):
        assert got[name]["kind"] == "equivalent" and got[name]["reward"] == 1.0 and got[name]["ok"], name
    assert got["json-reformatted"]["files_changed"] == ["out.json"]
    assert got["emptied"]["files_changed"] == ["answer.txt", "out.json"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_equivalence_flags_a_byte_exact_verifier(tmp_path: Path, backend: str) -> None:
    task = make_task(tmp_path, "brittle", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    done = run_bench("tasks", "check", "--level", "equivalence", "--sandbox", backend, str(task))
    assert done.returncode == 1, done.stdout + done.stderr
    table = {line.split()[0]: line.split() for line in done.stdout.splitlines() if line.startswith("  ")
             and len(line.split()) >= 5}
    # $(cat …) drops the final newline, so that variant passes; spaces and CRLF do not.
    assert table["trailing-newline"][-1] == "ok"
    assert table["trailing-whitespace"][-1] == "FAIL" and table["line-endings"][-1] == "FAIL"
    assert table["garbage"][-1] == "ok" and table["nop"][-1] == "ok"
    assert "trailing-whitespace (equivalent) scored 0.0, expected reward = 1" in done.stdout


@pytest.mark.docker
def test_equivalence_flags_a_verifier_that_accepts_anything(tmp_path: Path) -> None:
    task = make_task(tmp_path, "lenient", solve=WRITE_HELLO, test="echo 1 > /logs/verifier/reward.txt")
    out = tmp_path / "eq.json"
    done = run_bench("tasks", "check", "--level", "equivalence", "--report-output", str(out), str(task))
    assert done.returncode == 1
    got = rows(json.loads(out.read_text()))
    assert not any(got[name]["ok"] for name in ("nop", "emptied", "truncated", "garbage"))
    assert all(r["ok"] for r in got.values() if r["kind"] == "equivalent")


@pytest.mark.docker
def test_equivalence_needs_an_oracle_that_passes(tmp_path: Path) -> None:
    task = make_task(tmp_path, "broken-oracle", solve="echo nope > /app/hello.txt", test=PASS_IF_HELLO)
    out = tmp_path / "eq.json"
    done = run_bench("tasks", "check", "--level", "equivalence", "--report-output", str(out), str(task))
    assert done.returncode == 1
    report = json.loads(out.read_text())
    assert report["oracle"] == {"agent": "oracle", "reward": 0.0, "error": None, "ok": False}
    assert report["variants"] == [] and "the oracle must score 1.0" in done.stdout


def test_equivalence_refuses_a_task_without_oracle(tmp_path: Path) -> None:
    task = make_task(tmp_path, "no-oracle", test=PASS_IF_HELLO)
    (task / "oracle" / "solve.sh").unlink()
    done = run_bench("tasks", "check", "--level", "equivalence", "--sandbox", "local", str(task))
    assert done.returncode == 2 and "no oracle/solve.sh" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_acceptance_live_calibration_writes_report_and_sidecar(tmp_path: Path, backend: str) -> None:
    task = make_task(tmp_path, "calibrated", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    done = run_bench("tasks", "check", "--level", "acceptance-live", "--sandbox", backend, str(task))
    assert done.returncode == 0, done.stdout + done.stderr
    report_path = task / "evidence" / "acceptance-live-report.json"
    data = report_path.read_bytes()
    report = json.loads(data)
    assert report["kind"] == "benchflow.acceptance-live-report" and report["ok"] and report["sandbox"] == backend
    assert [(c["name"], c["agent"], c["reward"], c["ok"]) for c in report["cases"]] == [
        ("calibration-reference", "oracle", 1.0, True), ("calibration-no-op", "nop", 0.0, True)]
    sidecar = Path(f"{report_path}.sha256").read_text()
    assert sidecar == f"{hashlib.sha256(data).hexdigest()}  acceptance-live-report.json\n"


@pytest.mark.docker
def test_acceptance_live_declared_cases_fail_and_no_report_write(tmp_path: Path) -> None:
    task = make_task(tmp_path, "declared", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    text = (task / "task.md").read_text().replace("---\n\n## prompt", (
        "benchflow:\n  evidence:\n    acceptance_live:\n      report: evidence/live.json\n"
        "      oracle_reruns: 1\n      cases:\n"
        "        - {name: nop-passes, agent: nop, expect: {min_reward: 1.0}}\n"
        "---\n\n## prompt"), 1)
    (task / "task.md").write_text(text)
    before = digest(task)
    done = run_bench("tasks", "check", "--level", "acceptance-live", "--no-report-write",
                     "--report-output", str(tmp_path / "ignored.json"), str(task))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "case nop-passes (nop) scored 0.0, expected {'min_reward': 1.0}" in done.stdout
    assert "oracle-rerun-1" in done.stdout and "wrote" not in done.stdout
    assert digest(task) == before and not (tmp_path / "ignored.json").exists()

    out = tmp_path / "elsewhere" / "live.json"
    again = run_bench("tasks", "check", "--level", "acceptance-live", "--report-output", str(out), str(task))
    assert again.returncode == 1
    assert json.loads(out.read_text())["failed"] == 1 and Path(f"{out}.sha256").is_file()
    assert not (task / "evidence").exists()


def test_acceptance_live_refuses_malformed_cases(tmp_path: Path) -> None:
    task = make_task(tmp_path, "malformed", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    text = (task / "task.md").read_text().replace("---\n\n## prompt", (
        "benchflow: {evidence: {acceptance_live: {cases: [{name: x, agent: gpt, expect: {min_reward: 1}}]}}}\n"
        "---\n\n## prompt"), 1)
    (task / "task.md").write_text(text)
    done = run_bench("tasks", "check", "--level", "acceptance-live", "--sandbox", "local", str(task))
    assert done.returncode == 2
    assert "benchflow.evidence.acceptance_live.cases[0].agent" in done.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_equivalence_counts_an_unscored_wrong_variant_as_a_failure(tmp_path: Path, backend: str) -> None:
    only_when_right = "grep -qx hello /app/hello.txt && echo 1 > /logs/verifier/reward.txt"
    task = make_task(tmp_path, "silent", solve=WRITE_HELLO, test=only_when_right)
    out = tmp_path / "eq.json"
    done = run_bench("tasks", "check", "--level", "equivalence", "--sandbox", backend,
                     "--report-output", str(out), str(task))
    assert done.returncode == 1
    got = rows(json.loads(out.read_text()))
    assert got["emptied"]["reward"] is None and not got["emptied"]["ok"]
    assert "no reward file" in got["emptied"]["error"]
    assert "emptied (wrong) was not scored: verifier crashed" in done.stdout


@pytest.mark.docker
def test_equivalence_with_outputs_outside_the_workdir(tmp_path: Path) -> None:
    task = make_task(tmp_path, "elsewhere", solve="echo done > /tmp/bf-equivalence-flag",
                     test='[ -f /tmp/bf-equivalence-flag ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt')
    out = tmp_path / "eq.json"
    done = run_bench("tasks", "check", "--level", "equivalence", "--sandbox", "docker",
                     "--report-output", str(out), str(task))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text())
    assert report["output_files"] == [] and [r["variant"] for r in report["variants"]] == ["nop"]
    assert len(report["skipped"]) == 7 and report["workdir"] == "/app"
    assert "the oracle changed no file in the workdir (/app)" in report["verdict"]


def test_report_output_needs_a_single_task(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "one", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    make_task(tmp_path / "tasks", "two", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    done = run_bench("tasks", "check", "--level", "equivalence", "--sandbox", "local",
                     "--report-output", str(tmp_path / "eq.json"), str(tmp_path / "tasks"))
    assert done.returncode == 2 and "holds 2 tasks; give one task folder" in done.stderr
