"""``bench run --publish-hf``: a finished oracle job's artifacts reach the HF Hub double, redacted.

One real oracle run (Docker) publishes to :class:`tests.doubles.hf_hub_double.HfHubDouble`
on loopback; what the double received is checked on its side.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.doubles.hf_hub_double import HfHubDouble
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

pytestmark = pytest.mark.docker

SECRET = "sk-ant-api03-" + "Q" * 40


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory):
    from tests.conftest import run_bench

    root = tmp_path_factory.mktemp("publish")
    make_task(root / "tasks", "hello", solve=f"echo using {SECRET}; {WRITE_HELLO}", test=PASS_IF_HELLO)
    with HfHubDouble() as hub:
        hub.add_repo("org/model", {"README.md": "model card"}, repo_type="model")
        env = {"HF_ENDPOINT": hub.url, "HF_TOKEN": hub.token, "HF_HOME": str(root / "hf-home")}
        done = run_bench("run", str(root / "tasks"), "--jobs-dir", str(root / "jobs"), "--publish-hf", "org/evals",
                         "--hf-prefix", "runs", "--hf-public-read-check", "--eval-results-model", "org/model",
                         "--eval-results-dataset", "org/bench", "--eval-results-task", "default", env=env)
        yield root, hub, done, env


def test_artifacts_arrive_redacted_under_the_prefix(published) -> None:
    root, hub, done, _ = published
    assert done.returncode == 0, done.stdout + done.stderr
    [job] = [p for p in (root / "jobs").iterdir() if p.is_dir()]
    files = hub.files("org/evals")
    base = f"runs/{job.name}"
    assert f"{base}/summary.json" in files and f"{base}/bundle.json" in files
    result = next(p for p in files if p.endswith("/result.json"))
    assert json.loads(files[result])["rewards"] == {"reward": 1.0}
    oracle_logs = [p for p in files if p.endswith("agent/oracle.txt")]
    assert oracle_logs and b"using" in files[oracle_logs[0]]
    assert SECRET.encode() not in hub.all_request_bytes()
    assert hub.token not in done.stdout + done.stderr
    assert "publicly readable" in done.stderr
    # the job on disk is untouched: the secret is still in the local log
    assert SECRET in next(job.rglob("oracle.txt")).read_text()


def test_eval_results_entry_is_a_pull_request_on_the_model(published) -> None:
    _, hub, done, _ = published
    model = hub.repos[("model", "org/model")]
    assert model.pull_requests == ["refs/pr/1"] and "eval-results pull request" in done.stderr
    entries = {p: c for p, c in model.commits[model.refs["refs/pr/1"]].items() if p.startswith(".eval_results/")}
    [text] = entries.values()
    import yaml

    [entry] = yaml.safe_load(text)
    assert entry["dataset"] == {"id": "org/bench", "task_id": "default"} and entry["value"] == 1.0
    assert ".eval_results/" not in "".join(hub.files("org/model", repo_type="model"))  # main is unchanged


def test_a_failed_publish_is_reported_and_keeps_the_job(published) -> None:
    from benchflow.hf.publish import PublishRequest, publish_job

    root, hub, _, env = published
    [job] = [p for p in (root / "jobs").iterdir() if p.is_dir()]
    before = sorted(p.relative_to(job).as_posix() for p in job.rglob("*"))
    mp = pytest.MonkeyPatch()
    try:
        mp.setenv("HF_ENDPOINT", env["HF_ENDPOINT"])
        mp.setenv("HF_TOKEN", "hf_wrongtoken0000000000000000")
        report = publish_job(job, PublishRequest(repo="org/evals"))
    finally:
        mp.undo()
    assert report.error and "HF_TOKEN" in report.error
    assert sorted(p.relative_to(job).as_posix() for p in job.rglob("*")) == before


def test_publish_flags_are_checked_before_the_run(bench, tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    for args, needle in ((["--hf-prefix", "x"], "needs --publish-hf"),
                         (["--publish-hf", "org/e", "--eval-results-model", "org/m"], "--eval-results-dataset"),
                         (["--publish-hf", "nope"], "org/name"),
                         (["--publish-hf", "org/e"], "HF_TOKEN")):
        done = bench("run", str(tmp_path / "tasks"), "--jobs-dir", str(tmp_path / "jobs"), *args,
                     env={"HF_TOKEN": ""})
        assert done.returncode == 2 and needle in done.stderr, (args, done.stderr)
    assert not (tmp_path / "jobs").exists()


def test_public_read_check_reports_a_private_repo(published) -> None:
    from benchflow.hf.publish import PublishRequest, publish_job

    root, hub, _, env = published
    hub.add_repo("org/private-evals", {"README.md": "private"}, private=True)
    [job] = [p for p in (root / "jobs").iterdir() if p.is_dir()]
    mp = pytest.MonkeyPatch()
    try:
        for key in ("HF_ENDPOINT", "HF_TOKEN", "HF_HOME"):
            mp.setenv(key, env[key])
        report = publish_job(job, PublishRequest(repo="org/private-evals", prefix="p", public_read_check=True))
    finally:
        mp.undo()
    assert report.public_read is False and "not readable without a token" in (report.error or "")
    assert f"p/{job.name}/summary.json" in hub.files("org/private-evals")  # the upload itself went through
