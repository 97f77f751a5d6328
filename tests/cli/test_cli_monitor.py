"""``bench monitor run|replay`` as a user types them; the judge is a scripted provider on loopback, reached
through BenchFlow's model gateway (``bench monitor watch``: test_cli_monitor_watch.py)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.doubles.fake_model_server import FakeModelServer
from tests.doubles.scripted_anthropic import ScriptedAnthropic
from tests.doubles.scripted_openai import ScriptedOpenAI
from tests.fixtures.jobgen import TrialSpec, write_job
from tests.fixtures.train_jobs import conversation

KEY = "sk-ant-monitor-test-0123456789abcdef"
HARBOR_TRIAL = (Path(__file__).resolve().parents[1] / "fixtures" / "harbor-job" / "jobs" / "2026-05-01__10-00-00"
                / "regex-log__Lw2nV8d")
EVENTS = [{"type": "user_message", "text": "Create hello.txt saying hi"},
          {"type": "tool_call", "tool_call_id": "tc_1", "kind": "execute", "status": "completed",
           "raw_input": {"command": "echo hi > hello.txt"}},
          {"type": "agent_message", "text": "Done: hello.txt is written."}]
# The scripted judge scores a criterion 1 when every phrase its description quotes is in the trajectory.
RUBRIC = {"criteria": [{"name": "wrote_file", "description": 'It ran "echo hi > hello.txt"', "weight": 3},
                       {"name": "ran_tests", "description": 'It ran "pytest"', "weight": 1}]}


@pytest.fixture
def anthropic():
    with ScriptedAnthropic() as server:
        yield server


def judge_env(server) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.url}


def _files(tmp_path: Path) -> tuple[Path, Path]:
    trajectory = tmp_path / "acp_trajectory.jsonl"
    trajectory.write_text("".join(json.dumps(e) + "\n" for e in EVENTS))
    rubric = tmp_path / "rubric.json"
    rubric.write_text(json.dumps(RUBRIC))
    return trajectory, rubric


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), (proc.returncode, proc.stderr)
    return lines[0]


def test_run_scores_a_trajectory_through_the_gateway_and_alerts(bench, tmp_path: Path, anthropic) -> None:
    trajectory, rubric = _files(tmp_path)
    jobs = tmp_path / "monitor"
    done = bench("monitor", "run", str(trajectory), "--rubric", str(rubric), "--jobs-dir", str(jobs),
                 "--run-name", "first", env=judge_env(anthropic))
    assert done.returncode == 1, done.stderr  # scored, with an alert
    lines = done.stdout.splitlines()
    assert lines[0] == "acp_trajectory: reward 0.75 ALERT (ran_tests 0.00 < 0.5)"
    assert lines[1].startswith("  wrote_file 1.00") and lines[2].startswith("  ran_tests 0.00")
    assert lines[-1] == f"verdict: {jobs / 'first' / 'verdict.json'}"
    verdict = json.loads((jobs / "first" / "verdict.json").read_text())
    assert verdict["kind"] == "benchflow.monitor-verdict" and verdict["status"] == "scored"
    assert verdict["rewards"] == {"reward": 0.75} and verdict["alert"] is True
    assert verdict["source"] == {"kind": "acp", "path": str(trajectory)}
    assert verdict["trajectory"] == {"kind": "acp", "turns": 3, "tool_calls": 1}
    assert verdict["rubric"]["source"] == f"file:{rubric}" and verdict["judge"]["provider"] == "anthropic"
    assert verdict["judge"]["usage"]["total_tokens"] > 0
    # the judge read the trajectory (and nothing from a sandbox), through the gateway with a key of its own
    [call] = [c for c in anthropic.calls if c.kind == "verdict"]
    asked = call.body["messages"][0]["content"]
    assert '> tool call execute [tc_1]: {"command": "echo hi > hello.txt"}' in asked and "no workspace" in asked
    run = json.loads((jobs / "first" / "monitor-run.json").read_text())
    assert run["command"] == "run" and run["counts"] == {"rollouts": 1, "scored": 1, "alerts": 1}
    assert (jobs / "first" / "judge_llm_trajectory.jsonl").is_file()
    assert not any(KEY in p.read_text() for p in jobs.rglob("*") if p.is_file())


def test_run_without_an_alert_exits_0_and_prints_json(bench, tmp_path: Path, anthropic) -> None:
    trajectory, _ = _files(tmp_path)
    rubric = tmp_path / "lenient.json"
    rubric.write_text(json.dumps({"criteria": [{"name": "wrote_file", "description": 'It ran "echo hi"'}]}))
    done = bench("monitor", "run", str(trajectory), "--rubric", str(rubric), "--jobs-dir", str(tmp_path / "m"),
                 "--json", env=judge_env(anthropic))
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["rewards"] == {"reward": 1.0} and verdict["alert"] is False and verdict["alert_reasons"] == []
    assert Path(verdict["artifact_dir"]).parent == tmp_path / "m"


def test_run_reads_recorded_model_calls_with_an_openai_judge(bench, tmp_path: Path) -> None:
    calls = tmp_path / "llm_trajectory.jsonl"
    calls.write_text("".join(json.dumps(c) + "\n" for c in conversation("fix-bug", 3)))
    rubric = tmp_path / "rubric.json"
    rubric.write_text(json.dumps({"criteria": [{"name": "stepped", "description": 'It ran "echo step 1"'}]}))
    with ScriptedOpenAI() as server:
        done = bench("monitor", "run", str(calls), "--rubric", str(rubric), "--model", "gpt-4o-mini", "--json",
                     "--jobs-dir", str(tmp_path / "m"),
                     env={"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "sk-test-monitor-0123456789",
                          "OPENAI_BASE_URL": server.url + "/v1"})
        [call] = [c for c in server.calls if c.kind == "verdict"]
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["source"]["kind"] == "llm" and verdict["rewards"] == {"reward": 1.0}
    assert verdict["judge"] == {"model": "gpt-4o-mini", "provider": "openai", "usage": verdict["judge"]["usage"]}
    assert call.path == "/v1/chat/completions" and "< [call_fix-bug_1]: step 1" in call.body["messages"][1]["content"]


def test_replay_scores_a_trial_beside_its_eval_and_leaves_it_untouched(bench, tmp_path: Path, anthropic) -> None:
    job = write_job(tmp_path / "jobs", "job", [TrialSpec("hello", 1.0, suffix="aaaa0001", acp_events=EVENTS)])
    trial = next(job.glob("hello__*"))
    before = {p: p.read_bytes() for p in job.rglob("*") if p.is_file()}
    _, rubric = _files(tmp_path)
    done = bench("monitor", "replay", str(trial), "--rubric", str(rubric), "--jobs-dir", str(tmp_path / "m"),
                 "--json", env=judge_env(anthropic))
    assert done.returncode == 1, done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["rollout"] == trial.name and verdict["rewards"] == {"reward": 0.75}
    assert verdict["source"]["trial"] == str(trial) and verdict["source"]["task_name"] == "hello"
    assert verdict["source"]["path"] == str(trial / "trajectory" / "acp_trajectory.jsonl")
    assert verdict["eval"]["reward"] == 1.0 and verdict["eval"]["error"] is None
    assert {p: p.read_bytes() for p in job.rglob("*") if p.is_file()} == before


def test_replay_reads_a_harbor_trials_atif_trajectory(bench, tmp_path: Path, anthropic) -> None:
    trial = tmp_path / "regex-log__Lw2nV8d"
    shutil.copytree(HARBOR_TRIAL, trial)
    rubric = tmp_path / "rubric.json"
    rubric.write_text(json.dumps({"criteria": [{"name": "wrote_regex", "description": 'It wrote "/app/regex.txt"'}]}))
    done = bench("monitor", "replay", str(trial), "--rubric", str(rubric), "--jobs-dir", str(tmp_path / "m"),
                 "--json", env=judge_env(anthropic))
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["source"]["kind"] == "atif" and verdict["source"]["task_name"] == "regex-log"
    assert verdict["rewards"] == {"reward": 1.0} and verdict["eval"] is not None


def test_replay_with_the_task_scores_with_its_own_llm_judge_rubric(bench, tmp_path: Path, anthropic) -> None:
    task = tmp_path / "tasks" / "hello"
    (task / "verifier" / "rubrics").mkdir(parents=True)
    (task / "task.md").write_text("---\nschema_version: '1.3'\n---\n\n## prompt\n\nCreate hello.txt saying hi.\n")
    (task / "verifier" / "verifier.md").write_text(
        "---\ndocument_version: '0.3'\nverifier:\n  default_strategy: judge\n  strategies:\n    judge:\n"
        "      type: llm-judge\n      rubric: rubrics/r.json\n      model: claude-haiku-4-5\n---\n")
    (task / "verifier" / "rubrics" / "r.json").write_text(json.dumps(RUBRIC))
    job = write_job(tmp_path / "jobs", "job", [TrialSpec("hello", 1.0, acp_events=EVENTS)])
    trial = next(job.glob("hello__*"))
    done = bench("monitor", "replay", str(trial), "--task", str(task), "--jobs-dir", str(tmp_path / "m"), "--json",
                 env=judge_env(anthropic))
    assert done.returncode == 1, done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["rubric"]["source"] == "task:hello" and verdict["judge"]["model"] == "claude-haiku-4-5"
    assert verdict["task"]["name"] == "hello" and verdict["task"]["verifier"] == "llm-judge"
    assert verdict["notes"] == ["--task hello changed since this rollout ran (its digest differs)"]
    [call] = [c for c in anthropic.calls if c.kind == "verdict"]
    assert call.body["messages"][0]["content"].startswith("# Task given to the agent\n\nCreate hello.txt saying hi.")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_judge_that_cannot_score_is_the_monitors_failure_exit_3(bench, tmp_path: Path) -> None:
    trajectory, rubric = _files(tmp_path)
    with FakeModelServer() as server:
        server.content = "I would rather not grade this."
        done = bench("monitor", "run", str(trajectory), "--rubric", str(rubric), "--jobs-dir", str(tmp_path / "m"),
                     env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.url})
    assert done.returncode == 3, done.stderr
    assert done.stdout.startswith("acp_trajectory: not scored (verifier_error: the judge's reply holds no JSON object")
    gone = bench("monitor", "run", str(trajectory), "--rubric", str(rubric), "--jobs-dir", str(tmp_path / "m"),
                 "--json", env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{_closed_port()}"})
    assert gone.returncode == 3, gone.stderr
    verdict = json.loads(gone.stdout)
    assert verdict["status"] == "error" and verdict["error_category"] == "verifier_infra"
    assert verdict["rewards"] is None and verdict["alert"] is False  # the monitor failed, not the rollout


def test_bad_input_exits_2_with_one_line_and_writes_nothing(bench, tmp_path: Path, anthropic) -> None:
    trajectory, rubric = _files(tmp_path)
    jobs = tmp_path / "m"
    env = judge_env(anthropic)
    garbage = tmp_path / "notes.txt"
    garbage.write_text("hello\n")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    job = write_job(tmp_path / "jobs", "job", [TrialSpec("t1", acp_events=EVENTS)])
    empty_trial = write_job(tmp_path / "jobs", "job2", [TrialSpec("t2")])
    cases = [
        (("run", str(tmp_path / "nope.jsonl")), "no such file"),
        (("run", str(tmp_path)), "bench monitor replay"),
        (("run", str(garbage)), "not a trajectory this reads"),
        (("run", str(trajectory), "--rubric", str(broken)), "does not parse"),
        (("run", str(trajectory), "--alert-below", "2"), "--alert-below 2: give a number from 0 to 1"),
        (("run", str(trajectory), "--run-name", "../x"), "plain folder name"),
        (("run", str(trajectory), "--task", str(tmp_path)), str(tmp_path)),
        (("replay", str(job)), "a job folder; give one of its trial folders"),
        (("replay", str(tmp_path / "nope")), "no such folder"),
        (("replay", str(trajectory)), "bench monitor run"),
        (("replay", str(next(empty_trial.glob("t2__*")))), "kept no trajectory"),
        (("watch", str(tmp_path / "nope.jsonl")), "no such file"),
        (("watch", "-", "--concurrency", "0"), "--concurrency 0"),
    ]
    for args, expected in cases:
        assert expected in one_line_error(bench("monitor", *args, "--jobs-dir", str(jobs), env=env)), args
    no_key = bench("monitor", "run", str(trajectory), "--jobs-dir", str(jobs),
                   env={"ANTHROPIC_API_KEY": "", "ANTHROPIC_BASE_URL": ""})
    assert "no provider key" in one_line_error(no_key) and "ANTHROPIC_API_KEY" in no_key.stderr
    assert not jobs.exists() or not any(jobs.iterdir())
    assert bench("monitor", "run", str(trajectory), "--jobs-dir", str(jobs), "--run-name", "taken",
                 env=env).returncode == 1
    assert "exists; pick another name" in one_line_error(
        bench("monitor", "run", str(trajectory), "--jobs-dir", str(jobs), "--run-name", "taken", env=env))


def test_monitor_is_hidden_from_bench_help_but_has_its_own(bench) -> None:
    assert "monitor" not in bench("--help").stdout
    listed = bench("monitor", "--help")
    assert listed.returncode == 0
    for name, text in (("run", "Score one trajectory under monitor semantics."),
                       ("replay", "Re-score a persisted rollout under monitor semantics."),
                       ("watch", "Stream-score live production events.")):
        assert name in listed.stdout and text in listed.stdout
