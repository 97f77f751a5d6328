"""``bench run`` / ``bench eval resume`` as a user types them: bad input gets one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    return tmp_path / "tasks"


@pytest.mark.parametrize("args, needle", [
    (["--keep-sandbox", "sometimes"], "keep_sandbox"),
    (["--retry-policy", "always"], "retry.policy"),
    (["-j", "0"], "concurrency"),
    (["--fail-under", "2"], "fail_under"),
    (["--fail-on", "crash"], "fail_on"),
    (["--agent-env", "NOEQUALS"], "KEY=VALUE"),
    (["--agent-idle-timeout", "soon"], "--agent-idle-timeout"),
    (["--sandbox", "moon"], "unknown sandbox"),
    (["--config-override", "{\"task\": {\"name\": \"org/other\"}}"], "cannot patch task: it names the task"),
    (["--config-override", "{\"verfier\": {}}"], "'verfier' is not a task config section; patch one of agent,"),
    (["--config-override", "{\"agent\": {\"timeout_sec\": \"soon\"}}"], "agent.timeout_sec"),
    (["--config-override", "@/no/such/patch.json"], "cannot read it"),
])
def test_bad_flag_values_are_one_line_and_exit_2(bench, tasks: Path, args: list[str], needle: str) -> None:
    done = bench("run", str(tasks), "--dry-run", *args)
    assert done.returncode == 2, done.stderr
    assert needle in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_target_and_empty_selection(bench, tmp_path: Path, tasks: Path) -> None:
    missing = bench("run", str(tmp_path / "nope"), "--dry-run")
    assert missing.returncode == 2 and "no such folder" in missing.stderr
    nothing = bench("run", "--dry-run")
    assert nothing.returncode == 2 and "no tasks" in nothing.stderr
    empty = bench("run", str(tasks), "--dry-run", "-i", "zzz*")
    assert empty.returncode == 2 and "no task selected" in empty.stderr


def test_unknown_agent_lists_known_ones(bench, tasks: Path, tmp_path: Path) -> None:
    done = bench("run", str(tasks), "-a", "no-such-agent", "--jobs-dir", str(tmp_path / "jobs"))
    assert done.returncode == 2
    assert "no-such-agent" in done.stderr and "oracle" in done.stderr


def test_run_config_unknown_key_names_file_and_key(bench, tasks: Path, tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("agent: oracle\nconcurency: 2\n")
    done = bench("run", str(tasks), "--config", str(config), "--dry-run")
    assert done.returncode == 2
    assert "run.yaml: unknown key 'concurency' (did you mean 'concurrency'?)" in done.stderr


def test_run_config_is_the_whole_run_and_flags_win(bench, tasks: Path, tmp_path: Path) -> None:
    import json

    config = tmp_path / "run.yaml"
    config.write_text(f"tasks_dir: {tasks}\nagent: nop\nconcurrency: 3\nexclude: [other]\nprompts: [null, 'Check your work.']\n")
    plan = bench("run", "--config", str(config), "--dry-run", "-j", "2")
    assert plan.returncode in (0, 1), plan.stderr
    doc = json.loads(plan.stdout)
    assert doc["agent"] == "nop" and doc["concurrency"] == 2
    assert [t["name"] for t in doc["tasks"]] == ["hello"]


def test_retry_concurrency_flag_and_run_config_key_reach_the_plan(bench, tasks: Path, tmp_path: Path) -> None:
    import json

    flag = bench("run", str(tasks), "--dry-run", "--retry-concurrency", "2")
    config = tmp_path / "run.yaml"
    config.write_text(f"tasks_dir: {tasks}\nretry_concurrency: 3\n")
    key = bench("run", "--config", str(config), "--dry-run")
    assert json.loads(flag.stdout)["retry"]["concurrency"] == 2, flag.stderr
    assert json.loads(key.stdout)["retry"]["concurrency"] == 3, key.stderr
    zero = bench("run", str(tasks), "--dry-run", "--retry-concurrency", "0")
    assert zero.returncode == 2 and "retry.concurrency" in zero.stderr


def test_resume_refuses_a_folder_that_is_not_a_job(bench, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = bench("eval", "resume", str(tmp_path / "empty"))
    assert done.returncode == 2 and "not a job folder" in done.stderr


def test_help_all_shows_the_hidden_run_flags(bench) -> None:
    short = bench("run", "--help")
    full = bench("run", "--help-all")
    assert short.returncode == 0 and full.returncode == 0
    assert "--retry-attempts" not in short.stdout and "--retry-attempts" in full.stdout
    assert "--ca-bundle" in full.stdout


def test_keep_sandbox_on_a_backend_that_cannot_keep_is_refused_at_plan_time(bench, tasks: Path, tmp_path: Path) -> None:
    planned = bench("run", str(tasks), "--sandbox", "local", "--keep-sandbox", "always", "--dry-run")
    assert planned.returncode == 1
    refusal = [line for line in planned.stderr.splitlines() if "--keep-sandbox" in line]
    assert len(refusal) == 1 and refusal[0].startswith(
        "  refuse: --keep-sandbox always: sandbox local cannot keep a sandbox after its trial; use --sandbox ")
    assert "docker" in refusal[0].split("use --sandbox ")[1]  # one that can keep is named
    ran = bench("run", str(tasks), "--sandbox", "local", "--keep-sandbox", "on-failure",
                "--jobs-dir", str(tmp_path / "jobs"))
    assert ran.returncode == 1 and "--keep-sandbox on-failure: sandbox local cannot keep" in ran.stderr
    assert not (tmp_path / "jobs").exists(), "refused before any job folder or sandbox"
    kept = bench("run", str(tasks), "--sandbox", "docker", "--keep-sandbox", "always", "--dry-run")
    assert "--keep-sandbox" not in kept.stderr


def test_config_override_takes_task_toml_s_section_names(bench, tasks: Path) -> None:
    """``environment`` / ``solution`` (task.toml's, Harbor's names) patch the sections they load into."""
    plain = bench("run", str(tasks), "--dry-run")
    done = bench("run", str(tasks), "--dry-run", "--config-override", '{"environment": {"cpus": 2}}')
    assert done.returncode in (0, 1), done.stderr
    assert "| cpus: 1 ->" in plain.stderr and "| cpus: 2 ->" in done.stderr
