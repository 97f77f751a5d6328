"""Published benchmark conventions (Terminal-Bench 2, SkillsBench): the oracle scores through
``bench`` exactly what it scores by hand.

Each fixture in ``tests/fixtures/compat`` reproduces one family of habits of real published tasks
(see its ``task.toml`` header). The same task is run twice: by hand with nothing but the Docker SDK
(:mod:`tests.compat.byhand`), and with ``bench run``; both must give the oracle its full score.
The fixtures of :data:`BENCH_ONLY` need what the hand run's classic builder lacks (BuildKit's
heredocs), so only ``bench run`` builds them: on the docker sandbox and on the local one.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import docker
import pytest

from tests.conftest import ROOT, run_bench

from . import byhand

pytestmark = [pytest.mark.docker, pytest.mark.slow]

COMPAT = ROOT / "tests" / "fixtures" / "compat"
PREBUILT = "alexgshaw/compat-tb2-prebuilt-uvx:20251031"
ORACLE_REWARDS = {"tb2-prebuilt-uvx": "1", "skillsbench-skills": "1.000", "verbose-setx": "1.00",
                  "tb2-cwd-program": "1", "skillsbench-venv-path": "1", "tb2-root-owned-repo": "1",
                  "skillsbench-harbor-compose": "1"}
BENCH_ONLY = {"dockerfile-heredocs": "1"}
"""Fixtures the hand run cannot build (by hand needs BuildKit, not on this engine; bench translates heredocs)."""


def host_ca() -> Path:
    for candidate in (os.environ.get("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    pytest.skip("no host CA bundle to trust in builds")


def _remove_image(tag: str) -> None:
    try:
        docker.from_env().images.remove(tag, force=True)
    except docker.errors.ImageNotFound:
        pass


def _remove_task_images(task: str) -> None:
    """Every image bench built for ``task`` (``benchflow/<task>:<hash>``), so its next run builds it."""
    for image in docker.from_env().images.list(name=f"benchflow/{task}"):
        for tag in image.tags:
            _remove_image(tag)


def _results(jobs: Path) -> dict[str, dict]:
    """Task name -> its trial's result.json, config.json and the job's run-card.json."""
    found = {}
    for result in jobs.glob("*/*/result.json"):
        config = json.loads((result.parent / "config.json").read_text())
        card = json.loads((result.parent.parent / "run-card.json").read_text())
        found[result.parent.name.split("__")[0]] = {"result": json.loads(result.read_text()), "config": config,
                                                    "card": card}
    return found


@pytest.fixture(scope="module")
def through_bench(tmp_path_factory) -> dict[str, dict]:
    """One ``bench run`` over the whole compat folder, the prebuilt image absent from the engine."""
    _remove_image(PREBUILT)
    for name in BENCH_ONLY:
        _remove_task_images(name)
    jobs = tmp_path_factory.mktemp("jobs")
    done = run_bench("run", str(COMPAT), "-j", "2", "--ca-bundle", "host", "--jobs-dir", str(jobs), timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return _results(jobs)


@pytest.fixture(scope="module")
def by_hand() -> dict[str, str]:
    """The oracle by hand; the Terminal-Bench task's image is tagged with its pinned name, as if pulled."""
    rewards = {}
    try:
        for name in ORACLE_REWARDS:
            tag = PREBUILT if name == "tb2-prebuilt-uvx" else f"compat-byhand/{name}:latest"
            byhand.build(COMPAT / name, tag, host_ca())
            rewards[name] = byhand.oracle_reward(COMPAT / name, tag)
        yield rewards
    finally:
        for name in ORACLE_REWARDS:
            _remove_image(f"compat-byhand/{name}:latest")
        _remove_image(PREBUILT)


@pytest.mark.parametrize("name", sorted(ORACLE_REWARDS))
def test_oracle_scores_the_same_by_hand_and_through_bench(name, through_bench, by_hand):
    assert by_hand[name] == ORACLE_REWARDS[name]
    trial = through_bench[name]["result"]
    assert trial["verifier_error"] is None and trial["error"] is None, trial
    assert trial["rewards"]["reward"] == float(ORACLE_REWARDS[name]) == 1.0


def test_unavailable_prebuilt_image_builds_from_the_dockerfile_once(through_bench):
    trial = through_bench["tb2-prebuilt-uvx"]
    image = trial["config"]["sandbox_fit"]["image"]
    assert image["source"] == "dockerfile"
    assert image["prebuilt"] == PREBUILT and image["fallback_reason"].startswith("cannot be pulled")
    assert trial["config"]["attempt"] == 1  # decided once, before the trial: no failed attempts
    assert any(PREBUILT in line and "building environment/Dockerfile" in line for line in trial["card"]["warnings"])


def test_more_cpus_than_the_host_are_clamped_and_recorded(through_bench):
    cpus = through_bench["tb2-prebuilt-uvx"]["config"]["sandbox_fit"]["cpus"]
    host = docker.from_env().info()["NCPU"]
    assert cpus == {"asked": 4.0, "granted": float(min(4, host))}


def test_available_prebuilt_image_is_used_as_is(by_hand, tmp_path):
    assert by_hand["tb2-prebuilt-uvx"] == "1"  # the pinned tag now exists on the engine
    done = run_bench("run", str(COMPAT / "tb2-prebuilt-uvx"), "--jobs-dir", str(tmp_path), timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    trial = _results(tmp_path)["tb2-prebuilt-uvx"]
    assert trial["config"]["sandbox_fit"]["image"] == {"source": "prebuilt", "prebuilt": PREBUILT}
    assert trial["result"]["rewards"]["reward"] == 1.0


def test_ctrf_partial_reward_for_the_do_nothing_agent(tmp_path, through_bench):
    # --task-skills: a no-skill run's image has no task skill (the skill-installed test would fail)
    done = run_bench("run", str(COMPAT / "skillsbench-skills"), "-a", "nop", "--ca-bundle", "host", "--task-skills",
                     "--jobs-dir", str(tmp_path),
                     timeout=900)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    trial = _results(tmp_path)["skillsbench-skills"]["result"]
    assert trial["verifier_error"] is None
    assert trial["rewards"]["reward"] == 0.5  # 2 of the 4 tests need no work


def test_a_build_that_fails_a_tls_check_suggests_the_ca_bundle(tmp_path):
    task = tmp_path / "tasks" / "needs-proxy-ca"
    shutil.copytree(COMPAT / "verbose-setx", task)
    (task / "environment" / "Dockerfile").write_text(
        "FROM benchflow/python-slim:3.11-bookworm\n"
        "RUN pip install --retries 0 --timeout 30 --no-cache-dir uv==0.9.5\nWORKDIR /app\n")
    done = run_bench("run", str(task), "--jobs-dir", str(tmp_path / "jobs"), timeout=600)
    trial = _results(tmp_path / "jobs")["needs-proxy-ca"]["result"]
    assert trial["error_category"] == "sandbox_setup"
    assert "rerun with --ca-bundle host" in trial["error"].splitlines()[0], trial["error"][:500]
    assert done.returncode != 0


def test_runtime_capability_check_warns_about_adaptations(tmp_path):
    task = tmp_path / "tb2-absent-image"
    shutil.copytree(COMPAT / "tb2-prebuilt-uvx", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace(PREBUILT, f"alexgshaw/compat-absent:{os.getpid()}"))
    done = run_bench("tasks", "check", str(task), "--level", "runtime-capability", "--sandbox", "docker")
    assert done.returncode == 0, done.stderr
    host_cpus = docker.from_env().info()["NCPU"]
    assert ("sandbox.cpus 4 clamped to the host's" in done.stderr) == (host_cpus < 4)
    assert (f"prebuilt image alexgshaw/compat-absent:{os.getpid()} is not on the engine: a run pulls it, "
            "else builds environment/Dockerfile") in done.stderr


def test_an_environment_image_key_beside_a_dockerfile_builds_the_dockerfile(through_bench):
    trial = through_bench["skillsbench-venv-path"]
    assert trial["config"]["sandbox_fit"]["image"] == {"source": "dockerfile"}


def test_dry_run_reports_each_task_without_pulling(tmp_path):
    done = run_bench("run", str(COMPAT), "--dry-run", "--jobs-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    plan = {t["name"]: t["sandbox_fit"] for t in json.loads(done.stdout)["tasks"]}
    assert plan["skillsbench-skills"]["image"] == {"source": "dockerfile"}
    assert plan["tb2-prebuilt-uvx"]["cpus"]["asked"] == 4.0
    lines = [line for line in done.stderr.splitlines() if line.startswith("  task ")]
    assert len(lines) == len(ORACLE_REWARDS) + len(BENCH_ONLY) and all("| network: " in line and "| cpus: " in line for line in lines)


def test_dockerfile_heredocs_build_on_the_docker_sandbox(through_bench):
    """``RUN <<EOF`` under a bash SHELL, ``RUN python3 - <<'PY'``, ``cat > f <<'X'`` ending a continued
    RUN and ``COPY <<EOF`` (CA lines injected too: ``--ca-bundle host``) through the classic builder."""
    trial = through_bench["dockerfile-heredocs"]["result"]
    assert trial["error"] is None and trial["verifier_error"] is None, trial
    assert trial["rewards"]["reward"] == float(BENCH_ONLY["dockerfile-heredocs"])


@pytest.mark.local_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="the local sandbox builds RUN/COPY layers only as root")
def test_dockerfile_heredocs_build_on_the_local_sandbox(tmp_path):
    done = run_bench("run", str(COMPAT / "dockerfile-heredocs"), "--sandbox", "local", "--jobs-dir", str(tmp_path),
                     timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    trial = _results(tmp_path)["dockerfile-heredocs"]["result"]
    assert trial["rewards"]["reward"] == float(BENCH_ONLY["dockerfile-heredocs"])
