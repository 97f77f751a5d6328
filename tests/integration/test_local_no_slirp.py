"""The local sandbox on a machine without slirp4netns (issue #32): what needs no network runs, what
asks for it says once which package gives it, and nothing that fails for want of it is retried."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from benchflow.errors import BuildError, SandboxError
from benchflow.sandbox import SandboxSpec, get_backend
from benchflow.sandbox.local import ns as local_ns
from tests.conftest import EXAMPLE_TASKS, run_bench

pytestmark = pytest.mark.local_sandbox

PACKAGE = "apt-get install slirp4netns"


@pytest.fixture
def no_slirp_path():
    """A PATH with every program of this one but slirp4netns: a machine where it is not installed.

    The folder is not under /tmp: a sandbox's holder covers /tmp with its view in its own mount
    namespace, and bubblewrap is run from where PATH finds it.
    """
    parent = "/var/tmp" if os.path.isdir("/var/tmp") else str(Path.home())
    folder = Path(tempfile.mkdtemp(prefix="benchflow-no-slirp-", dir=parent))
    folder.chmod(0o755)  # the namespace tools run as the sandbox's root, an unprivileged id on the host
    try:
        for directory in os.environ.get("PATH", "").split(os.pathsep):
            if not os.path.isdir(directory):
                continue
            for name in os.listdir(directory):
                link = folder / name
                if name != "slirp4netns" and not os.path.lexists(link):
                    link.symlink_to(os.path.join(directory, name))
        assert shutil.which("slirp4netns", path=str(folder)) is None
        yield str(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def slirp_gone(no_slirp_path, monkeypatch):
    """This process's PATH without slirp4netns, once the local backend has been loaded: its capabilities
    are read when it is imported, and the other tests of this worker keep the machine's."""
    get_backend("local")
    monkeypatch.setenv("PATH", no_slirp_path)


def _machine(path: str, tmp_path: Path) -> dict[str, str]:
    """The environment of a fresh machine: no Docker engine answers, no slirp4netns."""
    return {"PATH": path, "DOCKER_HOST": "unix:///nonexistent/benchflow-docker.sock",
            "BENCHFLOW_CACHE": str(tmp_path / "cache"), "HOME": str(tmp_path)}


def _task(tmp_path: Path, name: str, *, network: str, run: str) -> Path:
    """hello-world as ``name`` with ``network`` and one more RUN step."""
    folder = tmp_path / "tasks" / name
    shutil.copytree(EXAMPLE_TASKS / "hello-world", folder)
    text = (folder / "task.md").read_text()
    text = text.replace("benchflow/hello-world", f"benchflow/{name}").replace("network_mode: no-network",
                                                                             f"network_mode: {network}")
    (folder / "task.md").write_text(text)
    dockerfile = folder / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + f"RUN {run}\n")
    return folder


def _results(jobs: Path) -> dict[str, dict]:
    return {p.parent.name.rsplit("__", 1)[0]: json.loads(p.read_text()) for p in jobs.glob("*/*/result.json")}


def test_readme_command_scores_100_without_slirp4netns_or_docker(no_slirp_path, tmp_path):
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(EXAMPLE_TASKS / "hello-world"), "--sandbox", "local", "--jobs-dir", str(jobs),
                     cwd=tmp_path, env=_machine(no_slirp_path, tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Score: 100.0% (1/1 passed)" in done.stdout, done.stdout + done.stderr
    assert "retry" not in done.stderr and "slirp4netns" not in done.stderr  # a no-network task needs none
    [(name, result)] = _results(jobs).items()
    assert name == "hello-world" and result["rewards"] == {"reward": 1.0}, result


def test_public_tasks_run_with_no_network_and_a_build_step_needing_it_names_the_package(no_slirp_path, tmp_path):
    _task(tmp_path, "public-hello", network="public", run="mkdir -p /opt/made")
    _task(tmp_path, "needs-network", network="public", run="grep -q tap0 /proc/net/dev")  # slirp's interface
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "--sandbox", "local", "--jobs-dir", str(jobs),
                     cwd=tmp_path, env=_machine(no_slirp_path, tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    said = [line for line in done.stderr.splitlines() if PACKAGE in line]
    assert len(said) == 1 and said[0].startswith("warning: sandbox local: no public network"), done.stderr
    assert "retry" not in done.stderr, done.stderr  # a missing tool fails the same way every time
    results = _results(jobs)
    assert results["public-hello"]["rewards"] == {"reward": 1.0}, results["public-hello"]
    failed = results["needs-network"]
    first = failed["error"].splitlines()[0]
    assert "RUN grep -q tap0 /proc/net/dev failed" in first and "may need network" in first and PACKAGE in first
    assert failed["sandbox_startup_info"]["reason"] == "build_failed"
    assert len(list(jobs.glob("*/needs-network__*"))) == 1  # attempted once


async def test_run_step_without_network_fails_with_one_line_naming_the_package(slirp_gone, tmp_path, cache):
    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM x\nWORKDIR /app\nRUN grep -q tap0 /proc/net/dev\n")
    sandbox = get_backend("local").create(SandboxSpec(name="offline-build", environment_dir=env, cache_key="k1"))
    with pytest.raises(BuildError) as failed:
        await sandbox.build()
    message = str(failed.value)
    assert "\n" not in message and "may need network" in message and PACKAGE in message, message


async def test_a_run_step_that_needs_no_network_builds_in_a_loopback_only_namespace(slirp_gone, tmp_path,
                                                                                    local_sandboxes):
    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM x\nWORKDIR /app\nRUN cut -d: -f1 /proc/net/dev | tail -n +3 | "
                                    "tr -d ' ' > /opt/build-interfaces\n")
    sandbox = await local_sandboxes(name="loopback-build", environment_dir=env, cache_key="k2",
                                    network_mode="no-network")
    seen = await sandbox.exec(["cat", "/opt/build-interfaces"])
    assert seen.success and seen.stdout.split() == ["lo"], seen.stderr  # a private loopback-only namespace


async def test_a_holder_asked_for_slirp_without_it_fails_deterministically(slirp_gone, tmp_path):
    with pytest.raises(SandboxError) as failed:
        await local_ns.start(tag=tmp_path, hostname="no-slirp", binds=[], overlays=[], network="slirp",
                             dirs=("newroot",))
    assert failed.value.deterministic, failed.value  # the scheduler attempts it once
    assert PACKAGE in str(failed.value) and "\n" not in str(failed.value)


def test_doctor_says_what_the_local_sandbox_cannot_do_without_slirp4netns(no_slirp_path, tmp_path):
    done = run_bench("doctor", "--offline", "--json", "--sandbox", "local", cwd=tmp_path,
                     env=_machine(no_slirp_path, tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    checks = {(c["group"], c["name"]): c for c in json.loads(done.stdout)["checks"]}
    assert checks[("sandbox", "local")]["status"] == "ok"
    note = checks[("sandbox", "local network")]
    assert note["status"] == "warn" and PACKAGE in note["detail"] and "run with no network" in note["detail"]
