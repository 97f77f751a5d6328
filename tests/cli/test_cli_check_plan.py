"""``bench check`` / ``bench tasks check`` with a run's settings (--agent, --model, --sandbox-user,
--verifier-sandbox): what ``bench run`` with them would refuse, found before any sandbox starts; and
--level runtime-capability without --sandbox, judged against a sandbox that can run the task."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task


@pytest.fixture
def task(tmp_path: Path) -> Path:
    return make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)


def _frontmatter(task: Path, old: str, new: str) -> None:
    text = (task / "task.md").read_text()
    assert old in text
    (task / "task.md").write_text(text.replace(old, new))


def test_runtime_capability_without_sandbox_names_the_sandbox_it_picked(bench, task):
    done = bench("check", "--level", "runtime-capability", str(task))
    assert done.returncode == 0, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("ok    hello  (on ") and "the first sandbox here that can run it" in first


def test_runtime_capability_without_sandbox_fails_a_task_no_sandbox_here_can_run(bench, task):
    _frontmatter(task, "sandbox: {network_mode: no-network}", "sandbox: {network_mode: no-network, gpus: 1}")
    done = bench("tasks", "check", "--level", "runtime-capability", str(task),
                 env={"MODAL_TOKEN_ID": "", "MODAL_TOKEN_SECRET": ""})  # no GPU sandbox set up here
    assert done.returncode == 1
    assert "sandbox.gpus: the task asks for GPUs" in done.stdout


def test_an_unknown_agent_is_a_one_line_usage_error(bench, task):
    done = bench("check", str(task), "--agent", "no-such-agent")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "unknown agent 'no-such-agent'" in done.stderr


@pytest.mark.parametrize("flag, value, needle", [
    ("--sandbox-user", "Bad User", "--sandbox-user 'Bad User'"),
    ("--verifier-sandbox", "sometimes", "verifier_sandbox"),
])
def test_a_bad_run_setting_is_refused_as_bench_run_refuses_it(bench, task, tmp_path, flag, value, needle):
    checked = bench("check", str(task), flag, value)
    assert checked.returncode == 2 and needle in checked.stderr
    ran = bench("run", str(task), flag, value, "--dry-run", "--jobs-dir", str(tmp_path / "jobs"))
    assert ran.returncode == 2 and needle in ran.stderr


def test_the_oracle_agent_needs_an_oracle(bench, task):
    (task / "oracle" / "solve.sh").unlink()
    (task / "oracle").rmdir()
    assert bench("check", str(task)).returncode == 0, "no run settings given: the plan is not checked"
    done = bench("check", str(task), "--agent", "oracle", "--sandbox-user", "root")
    assert done.returncode == 1
    assert "  - no oracle (oracle/solve.sh or solution/solve.sh) to run" in done.stdout


def test_separate_verifier_refusals_and_where_its_image_comes_from(bench, task):
    plain = bench("check", str(task), "--verifier-sandbox", "separate")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "(verifier image: the task's own image (image: build environment/Dockerfile))" in plain.stdout
    _frontmatter(task, "verifier: {timeout_sec: 30}", "verifier: {timeout_sec: 30, service: db}")
    refused = bench("check", str(task), "--verifier-sandbox", "separate", "--sandbox", "docker")
    assert refused.returncode == 1
    assert "verifier.service 'db': a separate verifier sandbox has only its own main service" in refused.stdout
    assert bench("check", str(task), "--sandbox", "docker").returncode == 0  # its own sandbox has service db


def test_live_levels_refuse_run_settings(bench, task):
    done = bench("check", str(task), "--level", "equivalence", "--model", "gpt-x")
    assert done.returncode == 2 and "--model: --level equivalence runs the oracle" in done.stderr


def test_the_flags_are_in_help(bench):
    shown = bench("tasks", "check", "--help").stdout
    for flag in ("--agent", "--model", "--sandbox-user", "--verifier-sandbox"):
        assert flag in shown
    assert "claude-agent-acp" in shown
