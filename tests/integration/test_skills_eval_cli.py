"""``bench skills eval`` end to end: the fixture skill ``stamp-maker`` with the fake ACP agent on Docker.

The agent does the same in every case: it runs the skill's script from where skills are deployed
(``$HOME/.agents/skills``) and writes hello.txt. So with the skill cases 1 and 2 pass and case 3
scores 0.5 (one of its two checks); without it only case 2 passes. The lift, by hand: deltas
(1, 0, 0) over the three scored cases, +1/3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_bench
from tests.integration.test_agent_pipeline import fake_agent_file

SKILL = ROOT / "tests" / "fixtures" / "skills" / "stamp-maker"
STEPS = [{"op": "tool", "id": "stamp",
          "run": 'sh "$HOME/.agents/skills/stamp-maker/scripts/stamp.sh" seed.txt > stamped.txt 2>/dev/null; true'},
         {"op": "tool", "id": "hello", "write": {"path": "hello.txt", "content": "hello\n"}}]


@pytest.mark.docker
def test_lift_of_the_skill_over_the_baseline(tmp_path: Path) -> None:
    agent = fake_agent_file(tmp_path, env={"FAKE_ACP_SCRIPT": json.dumps({"prompts": [STEPS]})})
    jobs = tmp_path / "jobs"
    done = run_bench("skills", "eval", str(SKILL), "--agent", str(agent), "--agent", "nop", "--sandbox", "docker",
                     "--concurrency", "3", "--jobs-dir", str(jobs), "--export-gepa", "--json", timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "case words-only left out" in done.stderr
    report = json.loads(done.stdout)
    row, nop = report["results"]
    assert nop["label"] == "nop" and nop["lift"]["pass_rate_delta"] == 0.0  # does nothing either way
    assert nop["with_skill"]["pass_rate"] == nop["baseline"]["pass_rate"] == 0.0
    cases = {c["id"]: c for c in row["cases"]}
    assert {k: (c["with_skill"], c["baseline"]) for k, c in cases.items()} == {
        "1": (1.0, 0.0), "2": (1.0, 1.0), "3": (0.5, 0.5)}
    with_rate, base_rate = 2 / 3, 1 / 3
    assert row["with_skill"]["pass_rate"] == pytest.approx(with_rate)
    assert row["baseline"]["pass_rate"] == pytest.approx(base_rate)
    lift = row["lift"]
    assert lift["paired"] == 3 and lift["pass_rate_delta"] == pytest.approx((1 + 0 + 0) / 3)
    # every resample of the deltas (1, 0, 0) has a mean in {0, 1/3, 2/3, 1}
    assert lift["ci"]["confidence"] == 0.95 and 0.0 <= lift["ci"]["low"] <= 1 / 3 <= lift["ci"]["high"] <= 1.0
    eval_dir = Path(report["eval_dir"])
    assert json.loads((eval_dir / "skill-eval.json").read_text()) == {k: v for k, v in report.items() if k != "gepa_dir"}
    # the baseline's tasks and sandbox never held the skill; its evals (the answers) reached no agent
    assert not list((eval_dir / "tasks").rglob("SKILL.md"))
    assert not (eval_dir / "skills" / "stamp-maker" / "evals").exists()
    baseline_config = json.loads(next(Path(row["jobs"]["baseline"]).rglob("config.json")).read_text())
    assert baseline_config["skill_mode"] == "no-skill" and baseline_config["skills_sandbox_dir"] is None
    trace = json.loads((eval_dir / "gepa" / "traces" / f"1-{row['label']}-with.json").read_text())
    assert trace["score"] == 1.0 and "PASS" in trace["feedback"] and trace["trajectory"]
    assert (eval_dir / "gepa" / "skill.md").read_text() == (SKILL / "SKILL.md").read_text()
    summary = json.loads((eval_dir / "gepa" / "summary.json").read_text())
    assert [lift["lift"] for lift in summary["lifts"]] == [pytest.approx(1 / 3), 0.0]


def test_no_evals_file_is_a_one_line_exit_2(tmp_path: Path) -> None:
    skill = tmp_path / "bare-skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: bare-skill\ndescription: no evals\n---\n")
    done = run_bench("skills", "eval", str(skill), "--agent", "nop", "--jobs-dir", str(tmp_path / "jobs"))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "evals/evals.json" in done.stderr
    assert not (tmp_path / "jobs").exists()
