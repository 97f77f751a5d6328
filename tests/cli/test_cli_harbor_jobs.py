"""A Harbor job folder (tests/fixtures/harbor-job, written by harbor 0.25.0's own models) read by every
result command as a user types it; the commands that cannot honour one refuse in one line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "harbor-job" / "jobs"
JOB_NAME = "2026-05-01__10-00-00"
FAKE_KEY = "sk-ant-api03-" + "Q1w2E3r4T5" * 4  # what fix-bug__Hx4bP9c's shell printed (generate.py)
BENCH_JOB = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "job-0.7" / "2026-04-22__22-37-42"


@pytest.fixture
def jobs(tmp_path) -> Path:
    """A copy of the fixture's jobs folder, so a command that writes cannot change the fixture."""
    shutil.copytree(FIXTURE, tmp_path / "jobs")
    return tmp_path / "jobs"


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    return lines[0]


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_results_json_reads_every_harbor_trial_with_its_outcome(bench, jobs):
    proc = bench("results", str(jobs / JOB_NAME), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    trials = {t["name"]: t for t in doc["trials"]}
    assert len(trials) == 6  # each of Harbor's n_attempts is a sample: none is dropped as a retry
    assert (trials["fix-bug__Qm7aZ2k"]["outcome"], trials["fix-bug__Qm7aZ2k"]["reward"]) == ("passed", 1.0)
    assert (trials["fix-bug__Hx4bP9c"]["outcome"], trials["fix-bug__Hx4bP9c"]["reward"]) == ("failed", 0.0)
    timed_out = trials["regex-log__Tz6cR3e"]
    assert (timed_out["outcome"], timed_out["error_category"]) == ("failed", "timeout")
    assert timed_out["error"].startswith("AgentTimeoutError: Agent execution timed out")
    no_reward = trials["verify-crash__Bk9dM5f"]
    assert (no_reward["outcome"], no_reward["verifier_error_category"]) == ("verifier_errored", "verifier_failure")
    sandbox = trials["verify-crash__Np3eS7g"]
    assert (sandbox["outcome"], sandbox["error_category"]) == ("errored", "sandbox_setup")
    # tokens: Harbor's input count includes the cache reads; the total is input + output
    assert trials["fix-bug__Qm7aZ2k"]["total_tokens"] == 41230 + 2210
    assert trials["fix-bug__Qm7aZ2k"]["duration_sec"] == 215.9
    assert doc["settings"]["agent"] == "claude-code" and doc["settings"]["model"] == "anthropic/claude-sonnet-4-5"
    # the same figures Harbor's own result.json holds: mean 1/6 over all trials, pass@2 1/3
    harbor = json.loads((jobs / JOB_NAME / "result.json").read_text())["stats"]["evals"]
    (stats,) = harbor.values()
    assert doc["solve_rates"]["pass_at_k"]["2"] == pytest.approx(stats["pass_at_k"]["2"])
    assert doc["solve_rates"]["solve_rate"] == pytest.approx(stats["metrics"][0]["mean"])


def test_inspect_reads_one_harbor_trial(bench, jobs):
    proc = bench("eval", "inspect", str(jobs / JOB_NAME / "regex-log__Tz6cR3e"))
    assert proc.returncode == 0, proc.stderr
    assert "agent: claude-code  model: anthropic/claude-sonnet-4-5" in proc.stdout
    assert "error [timeout]: AgentTimeoutError" in proc.stdout


def test_list_and_metrics_find_a_harbor_job_in_a_jobs_folder(bench, jobs):
    listed = bench("eval", "list", str(jobs), "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)["jobs"]
    assert (row["name"], row["agent"], row["trials"]) == (JOB_NAME, "claude-code", 6)
    assert bench("results", str(jobs)).stdout == bench("eval", "list", str(jobs)).stdout
    metrics = bench("eval", "metrics", str(jobs))
    assert metrics.returncode == 0, metrics.stderr
    assert "Jobs: 1 under" in metrics.stdout and "pass@2 33.3%" in metrics.stdout


def test_compare_pairs_a_harbor_job_with_a_bench_job_by_task(bench, jobs):
    proc = bench("eval", "compare", str(jobs / JOB_NAME), str(BENCH_JOB), "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {row["task"]: row for row in json.loads(proc.stdout)["rows"]}
    assert {task for task, row in rows.items() if row["status"] == "paired"} == {"fix-bug", "regex-log",
                                                                                  "verify-crash"}
    assert rows["fix-bug"]["n_a"] == 2 and rows["fix-bug"]["reward_a"] == 0.5 and rows["fix-bug"]["reward_b"] == 1.0
    assert rows["idle-task"]["status"] == "only_b"


def test_view_export_shows_the_harbor_job(bench, jobs, tmp_path):
    out = tmp_path / "view.html"
    proc = bench("view", str(jobs / JOB_NAME), "--export", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "6 trial page(s)" in proc.stderr + proc.stdout
    page = out.read_text()
    assert "verify-crash__Np3eS7g" in page and "EnvironmentStartTimeoutError" in page
    block = re.search(r'id="bf-export">(.*?)</script>', page, re.DOTALL).group(1)
    answers = {(path, params.get("id"), params.get("kind")): body
               for path, params, body in json.loads(block)["answers"]}
    # a trial page draws the agent's ATIF steps as the events of a BenchFlow trial's trajectory
    trial = answers[("trial", "fix-bug__Qm7aZ2k", None)]
    events = answers[("trajectory", "fix-bug__Qm7aZ2k", "acp")]["events"]
    assert trial["totals"]["acp"] == len(events) == 9  # the instruction, a thought, 3 messages, 4 calls
    assert [e["type"] for e in events[:4]] == ["user_message", "agent_thought", "agent_message", "tool_call"]
    assert events[0]["text"] == "Solve the task fix-bug: read /app/README.md and make its tests pass."
    edit = next(e for e in events if e["type"] == "tool_call" and e["title"] == "Edit")
    assert edit["raw_input"]["new_string"] == "return a + b" and edit["status"] == "completed"
    assert edit["raw_output"] == "The file /app/calc.py has been updated."
    assert events[-1] == {"type": "agent_message", "text": "Fixed: add() returns a + b and the three tests pass."}
    failed = answers[("trajectory", "regex-log__Tz6cR3e", "acp")]["events"]
    assert "No such file or directory" in failed[2]["raw_output"]
    assert answers[("trajectory", "verify-crash__Np3eS7g", "acp")]["total"] == 0  # its agent never ran
    leaked = answers[("trajectory", "fix-bug__Hx4bP9c", "acp")]["events"][3]["raw_output"]
    assert leaked.startswith("ANTHROPIC_API_KEY=") and FAKE_KEY not in page  # shared: redacted


def test_bundle_packs_harbor_records_and_logs(bench, jobs, tmp_path):
    out = tmp_path / "job.zip"
    proc = bench("bundle", str(jobs / JOB_NAME), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    names = set(zipfile.ZipFile(out).namelist())
    for name in ("config.json", "result.json", "regex-log__Tz6cR3e/result.json", "regex-log__Tz6cR3e/exception.txt",
                 "fix-bug__Qm7aZ2k/agent/trajectory.json", "fix-bug__Qm7aZ2k/verifier/reward.txt"):
        assert f"{JOB_NAME}/{name}" in names


@pytest.mark.parametrize("command", [["regrade"], ["eval", "regrade"], ["train", "token-coverage"]])
def test_regrade_and_token_coverage_refuse_a_harbor_folder_in_one_line(bench, jobs, command):
    before = files_under(jobs)
    for target in (jobs / JOB_NAME, jobs / JOB_NAME / "fix-bug__Qm7aZ2k"):
        line = one_line_error(bench(*command, str(target)))
        assert "Harbor" in line and str(target) in line
    assert files_under(jobs) == before  # nothing written into the Harbor job


def atif_steps(trial: Path) -> list[dict]:
    return json.loads((trial / "agent" / "trajectory.json").read_text())["steps"]


def test_train_convert_makes_a_row_of_each_harbor_trials_atif_trajectory(bench, jobs, tmp_path):
    before = files_under(jobs)
    out, manifest = tmp_path / "rows.jsonl", tmp_path / "manifest.json"
    proc = bench("train", "convert", str(jobs / JOB_NAME), "-o", str(out), "--manifest", str(manifest))
    assert proc.returncode == 0, proc.stderr
    rows = {row["source_path"].split("/")[0]: row for row in map(json.loads, out.read_text().splitlines())}
    # the agent errors (a timeout, a verifier crash, a sandbox that never started) are skipped as for our trials
    assert sorted(rows) == ["fix-bug__Hx4bP9c", "fix-bug__Qm7aZ2k", "regex-log__Lw2nV8d"]
    doc = json.loads(manifest.read_text())
    assert (doc["rollouts_seen"], doc["rows_written"], doc["skipped_terminal_error"]) == (6, 3, 3)
    row = rows["fix-bug__Qm7aZ2k"]
    steps = atif_steps(jobs / JOB_NAME / "fix-bug__Qm7aZ2k")
    assert {k: row[k] for k in ("task_name", "reward", "agent", "model", "source", "source_path", "exchange_index")} \
        == {"task_name": "fix-bug", "reward": 1.0, "agent": "claude-code", "model": "anthropic/claude-sonnet-4-5",
            "source": "atif-trajectory", "source_path": "fix-bug__Qm7aZ2k/agent/trajectory.json",
            "exchange_index": steps[-1]["step_id"]}
    messages = row["messages"]
    assert messages[0] == {"role": "user", "content": steps[0]["message"]}
    assert [m["role"] for m in messages] == ["user"] + ["assistant", "tool"] * 4 + ["assistant"]
    for step, call, result in zip(steps[1:5], messages[1::2], messages[2::2]):  # each step: its call and result
        (tool_call,) = step["tool_calls"]
        assert call["content"] == step["message"] and "reasoning_content" not in call
        assert call["tool_calls"] == [{"id": tool_call["tool_call_id"], "type": "function", "function": {
            "name": tool_call["function_name"], "arguments": json.dumps(tool_call["arguments"])}}]
        assert result == {"role": "tool", "content": step["observation"]["results"][0]["content"],
                          "tool_call_id": tool_call["tool_call_id"]}
    assert messages[-1] == {"role": "assistant", "content": steps[-1]["message"]}
    assert row["token_usage"]["n_output_tokens"] == 2210  # the trial's result.json, as for our rows
    leaked = rows["fix-bug__Hx4bP9c"]["messages"][2]["content"]
    assert leaked.startswith("ANTHROPIC_API_KEY=") and FAKE_KEY not in out.read_text()  # redacted by default
    assert files_under(jobs) == before  # nothing written into the Harbor job


def test_train_convert_exchange_rows_of_one_harbor_trial_validate(bench, jobs, tmp_path):
    trial = jobs / JOB_NAME / "fix-bug__Qm7aZ2k"
    out = tmp_path / "trl.jsonl"
    proc = bench("train", "convert", str(trial), "-o", str(out), "--format", "trl-sft", "--row-mode", "exchange")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    agent_steps = [s for s in atif_steps(trial) if s["source"] == "agent"]
    assert [r["exchange_index"] for r in rows] == [s["step_id"] for s in agent_steps]  # one row per model response
    assert [r["completion"][0]["content"] for r in rows] == [s["message"] for s in agent_steps]
    assert len(rows[2]["prompt"]) == 5  # the instruction and the two calls and results before it
    checked = bench("train", "validate", str(out), "--format", "trl-sft", "--expected-rows", str(len(rows)))
    assert checked.returncode == 0, checked.stdout + checked.stderr
