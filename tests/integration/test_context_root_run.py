"""``bench run --context-root``: a task written inside a repository whose Dockerfile copies from the
repository root builds and runs; without the flag its build fails, as ``docker build environment/`` would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "packages" / "greeter").mkdir(parents=True)
    (root / "packages" / "greeter" / "greeting.txt").write_text("hello from the monorepo\n")
    (root / "VERSION").write_text("v1\n")
    task = root / "tasks" / "greet"
    for folder in ("environment", "oracle", "verifier"):
        (task / folder).mkdir(parents=True)
    (task / "task.md").write_text("---\nschema_version: '1.3'\nagent: {timeout_sec: 60}\nverifier: {timeout_sec: 30}\n"
                                  "sandbox: {network_mode: no-network}\n---\n\n## prompt\n\n"
                                  "Copy /opt/greeter/greeting.txt to /app/out.txt.\n")
    (task / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\nWORKDIR /app\n"
                                                     "COPY packages/greeter /opt/greeter\nCOPY VERSION /opt/VERSION\n")
    for path, text in ((task / "oracle" / "solve.sh", "#!/bin/sh\ncp /opt/greeter/greeting.txt /app/out.txt\n"),
                       (task / "verifier" / "test.sh",
                        "#!/bin/sh\nmkdir -p /logs/verifier\necho \"version $(cat /opt/VERSION)\"\n"
                        "if [ \"$(cat /app/out.txt)\" = 'hello from the monorepo' ]; then echo 1; else echo 0; fi"
                        " > /logs/verifier/reward.txt\n")):
        path.write_text(text)
        path.chmod(0o755)
    return root


def _result(jobs: Path) -> tuple[Path, dict]:
    [path] = list(jobs.rglob("result.json"))
    return path.parent, json.loads(path.read_text())


@pytest.mark.parametrize("sandbox", [pytest.param("docker", marks=pytest.mark.docker),
                                     pytest.param("local", marks=pytest.mark.local_sandbox)])
def test_a_monorepo_task_builds_from_its_context_root_and_not_without_it(bench, repo, tmp_path, sandbox):
    task = repo / "tasks" / "greet"
    without = bench("run", str(task), "-s", sandbox, "--jobs-dir", str(tmp_path / "without"), "--retry-attempts", "0")
    assert without.returncode == 1, without.stderr + without.stdout
    _, result = _result(tmp_path / "without")
    assert result["error_category"] == "sandbox_setup" and "packages/greeter" in result["error"]

    done = bench("run", str(task), "-s", sandbox, "--jobs-dir", str(tmp_path / "with"), "--context-root", str(repo))
    assert done.returncode == 0, done.stderr + done.stdout
    trial, result = _result(tmp_path / "with")
    assert result["rewards"]["reward"] == 1.0 and result["error"] is None
    assert "version v1" in (trial / "verifier" / "test-stdout.txt").read_text()
    assert json.loads((trial / "config.json").read_text())["context_root"] == str(repo.resolve())
    assert (task / "environment" / "Dockerfile").read_text().count("COPY packages/greeter") == 1  # untouched
    assert not (task / "environment" / "_deps").exists()

    (repo / "VERSION").write_text("v2\n")  # a source under the root changed: a new image, not the cached one
    again = bench("run", str(task), "-s", sandbox, "--jobs-dir", str(tmp_path / "again"), "--context-root", str(repo))
    assert again.returncode == 0, again.stderr + again.stdout
    trial, _ = _result(tmp_path / "again")
    assert "version v2" in (trial / "verifier" / "test-stdout.txt").read_text()


def test_a_context_root_that_is_not_a_folder_is_refused_in_one_line(bench, repo, tmp_path):
    refused = bench("run", str(repo / "tasks" / "greet"), "--jobs-dir", str(tmp_path / "jobs"), "--context-root",
                    str(tmp_path / "nowhere"))
    assert refused.returncode == 2 and refused.stderr.strip().count("\n") == 0
    assert f"--context-root {tmp_path / 'nowhere'}: not a folder" in refused.stderr
    assert not (tmp_path / "jobs").exists()
