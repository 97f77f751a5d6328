"""The oracle run by hand, the way a task author checks a Harbor-layout task without any harness.

Build ``environment/`` (the host CA trusted after ``FROM``, as a user behind a TLS proxy would add
by hand), start a container, copy ``solution/`` to ``/solution`` and run ``solve.sh`` as root in the
image's WORKDIR, copy ``tests/`` to ``/tests`` and run ``test.sh`` the same way, read
``/logs/verifier/reward.txt``. Only the Docker SDK: nothing of BenchFlow's is used, so the two
paths can disagree.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

import docker

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CA_INSIDE = "/usr/local/share/ca-certificates/host-ca.crt"
CA_VARS = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE")
LABEL = "benchflow.byhand.pid"
"""On every container a hand run starts, the pid of the process that started it (so that a runner can
remove what a killed run left: ``benchmarks/real_tasks.py``)."""


def _trust_ca(dockerfile: str) -> str:
    lines = []
    for line in dockerfile.splitlines():
        lines.append(line)
        if line.strip().upper().startswith("FROM "):
            lines.append(f"COPY host-ca.crt {CA_INSIDE}")
            lines.append("ENV " + " ".join(f"{name}={CA_INSIDE}" for name in CA_VARS))
    return "\n".join(lines) + "\n"


def build(task: Path, tag: str, ca_bundle: Path) -> None:
    """``docker build -t TAG environment/`` with the host CA trusted."""
    client = docker.from_env(timeout=900)
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp) / "context"
        shutil.copytree(task / "environment", context)
        shutil.copyfile(ca_bundle, context / "host-ca.crt")
        dockerfile = context / "Dockerfile"
        dockerfile.write_text(_trust_ca(dockerfile.read_text()))
        client.images.build(path=str(context), tag=tag, network_mode="host", rm=True, forcerm=True)


def _put(container, folder: Path, remote: str) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(folder, arcname=remote.strip("/"))
    container.put_archive("/", buffer.getvalue())


def oracle_reward(task: Path, tag: str, network: str = "none") -> str:
    """Run the oracle and the verifier (with the task's literal ``[solution.env]`` / ``[verifier.env]``)
    in a fresh container of image ``tag`` on engine network ``network``; the reward text."""
    client = docker.from_env(timeout=900)
    config = tomllib.loads((task / "task.toml").read_text())
    solution_env = {k: str(v) for k, v in (config.get("solution", {}).get("env") or {}).items()}
    verifier_env = {k: str(v) for k, v in (config.get("verifier", {}).get("env") or {}).items()}
    workdir = client.images.get(tag).attrs["Config"].get("WorkingDir") or "/root"
    container = client.containers.run(tag, ["sh", "-c", "while :; do sleep 3600; done"], detach=True,
                                      network_mode=network, user="0", labels={LABEL: str(os.getpid())})
    try:
        container.exec_run(["mkdir", "-p", "/logs/verifier", "/logs/agent"])
        _put(container, task / "solution", "/solution")
        agent_sec = str(int(config.get("agent", {}).get("timeout_sec", 3600)))
        verifier_sec = str(int(config.get("verifier", {}).get("timeout_sec", 3600)))
        container.exec_run(["timeout", agent_sec, "bash", "/solution/solve.sh"], workdir=workdir, user="0",
                           environment=solution_env)
        _put(container, task / "tests", "/tests")
        container.exec_run(["timeout", verifier_sec, "bash", "/tests/test.sh"], workdir=workdir, user="0",
                           environment=verifier_env)
        code, out = container.exec_run(["cat", "/logs/verifier/reward.txt"])
        return out.decode().strip() if code == 0 else "<no reward.txt>"
    finally:
        container.remove(force=True)
