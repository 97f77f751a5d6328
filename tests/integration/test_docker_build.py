"""Docker image builds: cache by digest, FROM override, CA injection, timeouts, failures."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from benchflow.errors import BuildError, TaskError
from benchflow.sandbox import SandboxSpec, get_backend
from benchflow.sandbox.ca import CA_PATH, ENV_VARS

pytestmark = pytest.mark.docker

FAKE_CA = """-----BEGIN CERTIFICATE-----
MIIBbenchflowtestcertificatenotrealAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
-----END CERTIFICATE-----
"""


def env_with(tmp_path: Path, dockerfile: str, **files: str) -> Path:
    env = tmp_path / "environment"
    env.mkdir(exist_ok=True)
    (env / "Dockerfile").write_text(dockerfile)
    for name, text in files.items():
        (env / name).write_text(text)
    return env


def spec(env: Path | None, key: str, **overrides) -> SandboxSpec:
    fields = dict(name="build-test", environment_dir=env, cache_key=f"{key}-{os.getpid()}-{time.time_ns()}",
                  network_mode="no-network")
    fields.update(overrides)
    return SandboxSpec(**fields)


async def test_unchanged_task_is_never_rebuilt(tmp_path):
    env = env_with(tmp_path, "FROM debian:bookworm-slim\nRUN echo hello > /hello\n")
    first_spec = spec(env, "hit")
    first = get_backend("docker").create(first_spec)
    await first.build()
    assert "Step" in first.build_log  # the engine's log is kept for the trial
    again = get_backend("docker").create(first_spec)
    await again.build()
    assert again.image == first.image and again.build_log == ""
    changed = get_backend("docker").create(spec(env, "miss"))
    await changed.build()
    assert changed.image != first.image and changed.build_log


async def test_base_image_override_rewrites_from_on_a_copy(tmp_path):
    text = "FROM registry.invalid/never:pulled\nRUN test -x /usr/bin/python3 && echo has-python > /which\n"
    env = env_with(tmp_path, text)
    box = get_backend("docker").create(spec(env, "override", base_image_override="benchflow/python:3.11-bookworm"))
    await box.start()
    try:
        assert (await box.exec(["cat", "/which"])).stdout.strip() == "has-python"
    finally:
        await box.stop()
    assert (env / "Dockerfile").read_text() == text, "the task folder is never rewritten"


async def test_ca_bundle_is_trusted_in_build_steps_and_in_the_sandbox(tmp_path):
    bundle = tmp_path / "host-ca.pem"
    bundle.write_text(FAKE_CA)
    env = env_with(tmp_path, "FROM debian:bookworm-slim\nRUN cat \"$SSL_CERT_FILE\" > /seen-in-build\n")
    box = get_backend("docker").create(spec(env, "ca", ca_bundle=bundle))
    await box.start()
    try:
        assert (await box.exec(["cat", "/seen-in-build"])).stdout == FAKE_CA
        assert (await box.exec(["cat", CA_PATH])).stdout == FAKE_CA
        shown = (await box.exec(["env"], user="agent")).stdout.splitlines()
        for name in ENV_VARS:
            assert f"{name}={CA_PATH}" in shown
    finally:
        await box.stop()


async def test_ca_bundle_reaches_a_prebuilt_image(tmp_path):
    bundle = tmp_path / "host-ca.pem"
    bundle.write_text(FAKE_CA)
    box = get_backend("docker").create(spec(None, "ca-prebuilt", image="debian:bookworm-slim", ca_bundle=bundle))
    await box.start()
    try:
        assert (await box.exec(["cat", CA_PATH])).stdout == FAKE_CA
        assert (await box.exec(["sh", "-c", "echo $REQUESTS_CA_BUNDLE"])).stdout.strip() == CA_PATH
    finally:
        await box.stop()


async def test_failed_build_carries_the_log_tail(tmp_path):
    env = env_with(tmp_path, "FROM debian:bookworm-slim\nRUN echo about-to-fail && exit 3\n")
    box = get_backend("docker").create(spec(env, "fail"))
    with pytest.raises(BuildError) as caught:
        await box.build()
    assert "about-to-fail" in caught.value.log_tail


async def test_build_timeout_is_honoured(tmp_path):
    env = env_with(tmp_path, f"FROM debian:bookworm-slim\nRUN sleep 60 && echo {time.time_ns()}\n")
    box = get_backend("docker").create(spec(env, "slow", build_timeout_sec=3))
    started = time.monotonic()
    with pytest.raises(BuildError, match="timed out"):
        await box.build()
    assert time.monotonic() - started < 30


async def test_a_compose_file_a_pod_cannot_run_is_refused_at_build(tmp_path):
    compose = "services:\n  db: {image: debian:bookworm-slim, volumes: ['./data:/data']}\n"
    env = env_with(tmp_path, "FROM debian:bookworm-slim\n", **{"docker-compose.yaml": compose})
    box = get_backend("docker").create(spec(env, "compose", compose_file=env / "docker-compose.yaml"))
    with pytest.raises(TaskError, match=r"docker-compose.yaml: services.db.volumes\[0\]: './data' is a host bind mount"):
        await box.build()


async def test_an_image_user_does_not_stop_setup_or_root_exec(tmp_path):
    env = env_with(tmp_path, "FROM debian:bookworm-slim\nUSER nobody\n")
    box = get_backend("docker").create(spec(env, "user"))
    await box.start()
    try:
        assert (await box.exec(["id", "-u"])).stdout.strip() == "0"
        assert (await box.exec(["id", "-un"], user="agent")).stdout.strip() == "agent"
    finally:
        await box.stop()
