"""bench traj export --format inspect: a log inspect_ai's read_eval_log loads, one sample per finished trial.

inspect_ai cannot share the test environment (it pins boto3 below what agentcore needs), so
scripts/setup.d/interop-formats.sh installs it into a folder of its own; the export and the read run in a
child interpreter with that folder at the end of sys.path (the environment's own packages win).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.interop_job import FAKE_KEY, PLAIN_SECRET, USAGE, interop_job, require_tool_folder

from tests.conftest import ROOT

_READ = """
import json, sys
sys.path.append(sys.argv[1])
from benchflow.cli.main import main
try:
    main(["traj", "export", sys.argv[2], "--format", "inspect", "--out", sys.argv[3]])
except SystemExit as exc:
    assert not exc.code, exc.code
from inspect_ai.log import read_eval_log
log = read_eval_log(sys.argv[3])
print(json.dumps({
    "status": log.status, "model": log.eval.model, "solver": log.eval.solver,
    "metrics": {k: m.value for k, m in log.results.scores[0].metrics.items()},
    "samples": [{"id": s.id, "epoch": s.epoch, "trial": s.metadata.get("trial"),
                 "score": s.scores["reward"].value if s.scores else None,
                 "error": s.error.message if s.error else None,
                 "usage": {k: u.model_dump() for k, u in s.model_usage.items()},
                 "messages": [{"role": m.role, "text": m.text,
                               "tool_calls": [c.id for c in getattr(m, "tool_calls", None) or []],
                               "tool_call_id": getattr(m, "tool_call_id", None)} for m in s.messages]}
                for s in log.samples]}))
"""


@pytest.fixture(scope="module")
def inspect_folder() -> Path:
    return require_tool_folder("inspect_ai")


@pytest.fixture
def job(tmp_path: Path) -> Path:
    return interop_job(tmp_path)


def _export_and_read(inspect_folder: Path, job: Path, out: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", _READ, str(inspect_folder), str(job), str(out)],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["job.eval", "job.json"])
def test_read_eval_log_loads_one_sample_per_finished_trial_with_its_reward(inspect_folder, job, tmp_path, name):
    log = _export_and_read(inspect_folder, job, tmp_path / name)
    by_trial = {s["trial"]: s for s in log["samples"]}
    assert set(by_trial) == {"fix-calc__0000aaaa", "fix-calc__0000bbbb", "fix-calc__0000cccc",
                             "broken-env__0000dddd"}  # slow-task never finished
    assert {t: s["score"] for t, s in by_trial.items()} == {
        "fix-calc__0000aaaa": 1.0, "fix-calc__0000bbbb": 0.0, "fix-calc__0000cccc": 1.0,
        "broken-env__0000dddd": None}
    assert by_trial["broken-env__0000dddd"]["error"] == "sandbox did not start"
    assert sorted((s["id"], s["epoch"]) for s in log["samples"]) == [
        ("broken-env", 1), ("fix-calc", 1), ("fix-calc", 2), ("fix-calc", 3)]
    assert log["metrics"] == {"mean": pytest.approx(2 / 3), "accuracy": pytest.approx(2 / 3)}
    assert log["status"] == "cancelled"  # a trial of the job had not finished
    assert (log["model"], log["solver"]) == ("claude-haiku-4-5", "claude-agent-acp")


def test_messages_tool_calls_and_usage_are_carried(inspect_folder, job, tmp_path):
    log = _export_and_read(inspect_folder, job, tmp_path / "job.eval")
    sample = next(s for s in log["samples"] if s["trial"] == "fix-calc__0000aaaa")
    roles = [m["role"] for m in sample["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "tool", "assistant"]
    calls = [c for m in sample["messages"] for c in m["tool_calls"]]
    answered = [m["tool_call_id"] for m in sample["messages"] if m["role"] == "tool"]
    assert calls == answered == ["toolu_01", "toolu_02", "toolu_03"]
    assert sample["messages"][-1]["text"] == "Done: the test passes."
    (usage,) = sample["usage"].values()
    assert (usage["input_tokens"], usage["output_tokens"], usage["input_tokens_cache_read"],
            usage["total_cost"]) == (USAGE["n_input_tokens"], USAGE["n_output_tokens"],
                                     USAGE["n_cache_read_tokens"], USAGE["cost_usd"])


def test_secrets_do_not_reach_the_log(inspect_folder, job, tmp_path):
    out = tmp_path / "job.json"
    _export_and_read(inspect_folder, job, out)
    text = out.read_text()
    assert "1 failed" in text and FAKE_KEY not in text and PLAIN_SECRET not in text


def test_without_inspect_ai_the_export_is_refused_in_one_line(job, tmp_path):
    hide = ("import sys; sys.modules['inspect_ai'] = None\nfrom benchflow.cli.main import main\n"
            f"main(['traj', 'export', {str(job)!r}, '--format', 'inspect', '--out', {str(tmp_path / 'x.eval')!r}])")
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 2 and "pip install inspect_ai" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.eval").exists()


def test_an_inspect_log_is_named_eval_or_json(job, bench, tmp_path):
    done = bench("traj", "export", str(job), "--format", "inspect", "--out", str(tmp_path / "log.txt"))
    assert done.returncode == 2 and ".eval or a .json" in done.stderr
