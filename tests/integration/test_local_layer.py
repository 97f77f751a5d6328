"""The local sandbox's image: Dockerfile subset on a cached copy-on-write layer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchflow.errors import BuildError, CapabilityError
from benchflow.sandbox import SandboxSpec, get_backend
from benchflow.sandbox.local.layer import images_dir

pytestmark = pytest.mark.local_sandbox

DOCKERFILE = """\
FROM debian:bookworm-slim
ARG GREETING=hello
ENV APP_HOME=/app \\
    MSG="$GREETING world"
WORKDIR $APP_HOME
COPY data.txt ./
COPY tool.sh /usr/local/bin/bf-layer-test-tool
RUN head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n' > /app/stamp \\
 && mkdir -p /srv/bf-layer-test && cp /app/stamp /srv/bf-layer-test/stamp
RUN useradd -m builder && rm /usr/bin/pr
USER builder
RUN id -un > "$HOME/who"
"""


@pytest.fixture
def task_env(tmp_path) -> Path:
    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text(DOCKERFILE)
    (env / "data.txt").write_text("data\n")
    (env / "tool.sh").write_text("#!/bin/sh\necho tool says $MSG\n")
    (env / "tool.sh").chmod(0o755)
    return env


def _spec(env: Path, key: str = "digest-1", **extra) -> SandboxSpec:
    return SandboxSpec(name="layer-test", environment_dir=env, cache_key=key, **extra)


async def _read(spec: SandboxSpec, script: str, user: str | None = None) -> str:
    sandbox = get_backend("local").create(spec)
    try:
        await sandbox.start()
        result = await sandbox.exec(["sh", "-c", script], user=user)
        assert result.success, result.stderr
        return result.stdout
    finally:
        await sandbox.stop()


async def test_dockerfile_subset_is_honoured(cache, task_env):
    out = await _read(_spec(task_env), "pwd; cat data.txt; bf-layer-test-tool; cat /home/builder/who; "
                                       "stat -c %U /app/stamp; test -w /app && echo writable; "
                                       "test -e /usr/bin/pr || echo pr-deleted")
    assert out.splitlines() == ["/app", "data", "tool says hello world", "builder", "agent", "writable",
                                "pr-deleted"]
    assert os.path.exists("/usr/bin/pr")  # deleted in the layer only
    assert not os.path.exists("/usr/local/bin/bf-layer-test-tool")  # the host root is untouched
    assert not os.path.exists("/srv/bf-layer-test")


async def test_run_layer_is_cached_per_digest(cache, task_env):
    first = await _read(_spec(task_env), "cat /srv/bf-layer-test/stamp")
    [image] = [p for p in images_dir(cache).iterdir() if p.is_dir()]
    manifest = image / "image.json"
    built_at = manifest.stat().st_mtime_ns
    second = await _read(_spec(task_env), "cat /srv/bf-layer-test/stamp")
    assert second == first  # the RUN step did not run again (it writes random bytes)
    assert manifest.stat().st_mtime_ns == built_at
    changed = await _read(_spec(task_env, key="digest-2"), "cat /srv/bf-layer-test/stamp")
    assert changed != first
    assert len([p for p in images_dir(cache).iterdir() if p.is_dir()]) == 2


async def test_get_reads_image_files_from_the_layer(cache, task_env, tmp_path):
    sandbox = get_backend("local").create(_spec(task_env))
    try:
        await sandbox.start()
        await sandbox.get("/usr/local/bin/bf-layer-test-tool", tmp_path / "tool")
        await sandbox.get("/app", tmp_path / "app")
    finally:
        await sandbox.stop()
    assert (tmp_path / "tool").read_text() == (task_env / "tool.sh").read_text()
    assert (tmp_path / "tool").stat().st_mode & 0o111
    assert (tmp_path / "app" / "data.txt").read_text() == "data\n"


async def test_workspace_copies_are_private_per_sandbox(cache, task_env):
    backend = get_backend("local")
    a, b = backend.create(_spec(task_env)), backend.create(_spec(task_env))
    try:
        await a.start()
        await b.start()
        await a.exec(["sh", "-c", "echo changed > /app/data.txt"])
        assert (await b.exec(["cat", "/app/data.txt"])).stdout == "data\n"
    finally:
        await a.stop()
        await b.stop()


async def test_failing_run_is_a_build_error_and_nothing_is_cached(cache, tmp_path):
    env = tmp_path / "bad"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM debian:bookworm-slim\nRUN echo about to fail && exit 3\n")
    sandbox = get_backend("local").create(_spec(env))
    with pytest.raises(BuildError) as info:
        await sandbox.build()
    assert "exit code 3" in str(info.value) and "about to fail" in info.value.log_tail
    assert not [p for p in images_dir(cache).iterdir() if p.is_dir()]


async def test_missing_copy_source_is_a_build_error(cache, tmp_path):
    env = tmp_path / "missing"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM x\nCOPY nothere.txt /app/\n")
    with pytest.raises(BuildError, match="nothere.txt"):
        await get_backend("local").create(_spec(env)).build()


@pytest.mark.parametrize(("extra", "fragment"), [
    ({"image": "python:3.11"}, "prebuilt image"),
    ({"network_mode": "allowlist"}, "allowlist"),
])
async def test_refused_specs(cache, task_env, extra, fragment):
    with pytest.raises(CapabilityError, match=fragment) as info:
        await get_backend("local").create(_spec(task_env, **extra)).build()
    assert "--sandbox docker" in str(info.value)


async def test_refused_step_stops_before_anything_runs(cache, tmp_path):
    env = tmp_path / "urlish"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM x\nRUN touch /should-not-run\nADD https://example.com/x /x\n")
    with pytest.raises(CapabilityError, match=r"Dockerfile:3: `ADD https://example.com/x /x`"):
        await get_backend("local").create(_spec(env)).start()
    assert not images_dir(cache).exists()


async def test_multi_service_is_refused(cache, task_env):
    (task_env / "docker-compose.yaml").write_text("services: {}\n")
    with pytest.raises(CapabilityError, match="multi-service"):
        await get_backend("local").create(_spec(task_env)).build()


async def test_ca_bundle_is_trusted_in_builds_and_sandboxes(cache, tmp_path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\nlocal-test\n-----END CERTIFICATE-----\n")
    env = tmp_path / "ca-env"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM x\nRUN cp \"$SSL_CERT_FILE\" /opt/bf-ca-seen-at-build\n")
    out = await _read(_spec(env, ca_bundle=bundle), 'cat /opt/bf-ca-seen-at-build "$REQUESTS_CA_BUNDLE"')
    assert out.count("local-test") == 2
    plain = SandboxSpec(name="no-layer", environment_dir=None, cache_key="no-ca-layer", ca_bundle=bundle)
    assert "local-test" in await _read(plain, 'cat "$SSL_CERT_FILE"')
