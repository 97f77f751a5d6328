"""``bench eval continue`` / ``continue-batch`` as a user types them, on input refused before any sandbox.

What runs end to end (a timed-out ``bench run`` replayed, continued and scored) is
``tests/integration/test_continue_cli.py``; here: one line and exit 2 for bad input, the batch's summary.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import ROOT, run_bench

FIXTURE = ROOT / "tests" / "fixtures" / "continue"
TRIAL = FIXTURE / "openhands-0.7" / "2026-05-02__10-14-07" / "fix-bug__5e6f7a8b"


@pytest.mark.parametrize(("args", "why"), [
    (["{tmp}/nope"], "{tmp}/nope: no such folder; give a trial folder"),
    (["{trial}/.."], "config.json: missing; give a trial folder, not a job or jobs folder (bench eval continue-batch"),
    (["{trial}", "--proxy-mode", "sandbox"], "--proxy-mode sandbox: bench replays in its model gateway"),
    (["{trial}"], "task_path 'tasks/fix-bug' is not a folder here; give --tasks-dir"),
    (["{trial}", "--tasks-dir", "{tmp}"], "--tasks-dir {tmp}: no task folder fix-bug in it"),
    (["{trial}", "--tasks-dir", "{tasks}"], "agent 'openhands' cannot run here"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, why):
    values = {"tmp": tmp_path, "trial": TRIAL, "tasks": FIXTURE / "tasks"}
    done = run_bench("eval", "continue", *[a.format(**values) for a in args])
    assert done.returncode == 2, done.stderr + done.stdout
    assert done.stdout == "" and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("error: ") and why.format(**values) in done.stderr
    assert not (TRIAL.parent / "continued").exists()


def test_a_trial_that_did_not_time_out_is_refused_with_require_timeout(tmp_path):
    trial = shutil.copytree(TRIAL, tmp_path / "job" / TRIAL.name)
    result = json.loads((trial / "result.json").read_text())
    (trial / "result.json").write_text(json.dumps({**result, "error_category": "api_error"}))
    done = run_bench("eval", "continue", str(trial), "--require-timeout", "--tasks-dir", str(FIXTURE / "tasks"))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "error_category is 'api_error', not a timeout; --require-timeout" in done.stderr


def test_continue_batch_reports_what_it_found_and_could_not_start(tmp_path):
    shutil.copytree(TRIAL.parent, tmp_path / "jobs" / TRIAL.parent.name)
    done = run_bench("eval", "continue-batch", str(tmp_path / "jobs"), "--tasks-dir", str(FIXTURE / "tasks"))
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["total"], summary["succeeded"], summary["failed"], summary["skipped"]) == (1, 0, 1, 0)
    [error] = summary["errors"]
    assert error["folder"] == str(tmp_path / "jobs" / TRIAL.parent.name / TRIAL.name) and error["output"] is None
    assert "agent 'openhands' cannot run here" in error["error"]

    empty = run_bench("eval", "continue-batch", str(tmp_path / "jobs" / TRIAL.parent.name / TRIAL.name / "agent"))
    assert empty.returncode == 0 and json.loads(empty.stdout)["total"] == 0
    missing = run_bench("eval", "continue-batch", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such folder" in missing.stderr
