"""bench run's output when it is not a terminal: plain lines, markup-looking text as is, no Rich."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

from benchflow.cli.run_view import RunView, print_final


def test_events_and_final_lines_are_plain_text(capsys) -> None:
    with RunView(quiet=False) as view:
        view({"type": "job_started", "job_dir": "jobs/[x]", "why": "fresh", "sandbox": "docker",
              "sandbox_reason": "--sandbox", "agent": "oracle", "total": 2, "reused": 0, "todo": ["a", "b"]})
        view({"type": "trial_finished", "task": "a", "attempt": 1, "will_retry": False,
              "result": {"rewards": {"reward": 1.0}, "timing": {"total": 1.25}}})
        view({"type": "not_started", "task": "b", "reason": "--max-rollouts 1 reached"})
    summary = {"mean_reward": 1.0, "score": "100.0%", "passed": 1, "total": 1}
    print_final(SimpleNamespace(summary=summary, outcomes_line="Outcomes: 1 scored", job_dir="jobs/[x]",
                                gate={"reasons": []}))
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "Job jobs/[x] (fresh); sandbox docker [--sandbox]; agent oracle; 2 to run, 0 reused",
        "a: reward 1 in 1.2s",
        "warning: b: not started (--max-rollouts 1 reached)",
    ]
    assert out.splitlines() == ["Outcomes: 1 scored", "Score: 100.0% (1/1 passed), mean reward 1.000",
                                "Job: jobs/[x]"]


def test_quiet_prints_warnings_only(capsys) -> None:
    with RunView(quiet=True) as view:
        view({"type": "trial_finished", "task": "a", "attempt": 1, "will_retry": False,
              "result": {"rewards": {"reward": 0.0}, "timing": {"total": 1.0}}})
        view({"type": "trial_cancelled", "task": "b", "reason": "budget"})
    assert capsys.readouterr().err.splitlines() == ["warning: b: trial cancelled (budget)"]


def test_piped_output_does_not_load_rich() -> None:
    code = ("import sys; from benchflow.cli.run_view import RunView, print_final\n"
            "with RunView() as v: v({'type': 'retry', 'task': 't', 'attempt': 2, 'delay_sec': 1})\n"
            "assert not [m for m in sys.modules if m == 'rich' or m.startswith('rich.')], 'rich was imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "t: retry 2 in 1s"
