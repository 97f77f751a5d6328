"""``bench run --canonicalize one-healthy-per-task`` then ``bench train convert``, on rollouts a real run made.

``bench run`` drives the scripted ACP agent (tests/doubles/fake_acp_agent.py) in docker with ``--seeds 0,1``;
its model calls go through the job's gateway to the fake upstream (tests/doubles/fake_model_server.py). The
verifier passes odd seeds only, so the task has one passing and one failing rollout, each with recorded model
calls: the selection keeps the passing one, and the conversion of the selection (or of the canonical jobs
folder) has its row only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.doubles.fake_model_server import FakeModelServer
from tests.integration.test_agent_pipeline import PYTHON_IMAGE, UPSTREAM_KEY, fake_agent_file
from tests.integration.test_train_from_real_runs import SCRIPT
from tests.taskgen import make_task

pytestmark = pytest.mark.docker

ODD_SEEDS_PASS = 'if [ $((BENCHFLOW_SEED % 2)) = 1 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt'


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding the run's jobs, selection, health summary and canonical jobs folder."""
    tmp = tmp_path_factory.mktemp("canonical-real")
    make_task(tmp / "tasks", "alpha", dockerfile=PYTHON_IMAGE, network="no-network", test=ODD_SEEDS_PASS)
    env = {**os.environ, "NO_COLOR": "1", "OPENAI_API_KEY": UPSTREAM_KEY}
    with FakeModelServer() as upstream:
        env["OPENAI_BASE_URL"] = upstream.url + "/v1"
        done = run_bench("run", str(tmp / "tasks"), "-s", "docker", "--jobs-dir", str(tmp / "jobs"),
                         "--job-name", "seeded", "--seeds", "0,1", "-a", str(fake_agent_file(tmp)),
                         "-m", "gpt-4o-mini", "--agent-env", f"FAKE_ACP_SCRIPT={json.dumps(SCRIPT)}",
                         "--health-summary-out", str(tmp / "health.json"),
                         "--canonicalize", "one-healthy-per-task",
                         "--canonical-selection-out", str(tmp / "selection.json"),
                         "--canonical-jobs-dir", str(tmp / "canonical"), env=env)
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"Canonical selection: {tmp / 'selection.json'}" in done.stderr
    return tmp


def _trial_of_seed(job: Path, seed: int) -> str:
    for result in job.glob("*/result.json"):
        if json.loads(result.read_text()).get("seed") == seed:
            return result.parent.name
    raise AssertionError(f"no trial of seed {seed}")


def test_health_summary_and_selection_describe_the_real_rollouts(run: Path) -> None:
    job = run / "jobs" / "seeded"
    health = json.loads((run / "health.json").read_text())
    assert (health["total_rows"], health["scored_rows"], health["missing_llm_trajectory"]) == (2, 2, 0)
    assert all(r["valid_llm_trajectory"] and r["llm_trajectory_rows"] == 2 and r["tool_calls"] == 1
               for r in health["rows"])
    selection = json.loads((run / "selection.json").read_text())
    assert selection["policy"] == "one-healthy-per-task"
    (picked,) = selection["selected"]
    assert Path(picked["rollout_dir"]).name == _trial_of_seed(job, 1) and picked["reward"] == 1.0
    assert [Path(r["rollout_dir"]).name for r in selection["rejected"]] == [_trial_of_seed(job, 0)]


def test_convert_with_the_selection_writes_the_selected_rollout_only(run: Path, tmp_path: Path) -> None:
    out, manifest = tmp_path / "rows.jsonl", tmp_path / "manifest.json"
    done = run_bench("train", "convert", str(run / "jobs"), "-o", str(out), "--manifest", str(manifest),
                     "--canonical-selection", str(run / "selection.json"))
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["reward"] == 1.0 and _trial_of_seed(run / "jobs" / "seeded", 1) in row["source_path"]
    assert json.loads(manifest.read_text())["skipped_not_selected"] == 1
    everything = tmp_path / "all.jsonl"
    assert run_bench("train", "convert", str(run / "jobs"), "-o", str(everything)).returncode == 0
    assert len(everything.read_text().splitlines()) == 2, "without the selection both rollouts are rows"


def test_the_canonical_jobs_folder_converts_to_the_same_row(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "canonical.jsonl"
    selected = tmp_path / "selected.jsonl"
    assert run_bench("train", "convert", str(run / "canonical"), "-o", str(out)).returncode == 0
    assert run_bench("train", "convert", str(run / "jobs"), "-o", str(selected),
                     "--canonical-selection", str(run / "selection.json")).returncode == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    (same,) = [json.loads(line) for line in selected.read_text().splitlines()]
    assert row["messages"] == same["messages"] and row["reward"] == same["reward"] == 1.0
