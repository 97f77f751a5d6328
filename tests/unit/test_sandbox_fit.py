"""How a task's sandbox request is met: pinned image or its Dockerfile, resources clamped to the host."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchflow.sandbox.base import Capabilities, SandboxSpec
from benchflow.sandbox.ca import proxy_hint
from benchflow.sandbox.fit import fit


class FakeBackend:
    name = "fake"
    capabilities = Capabilities(network_modes=frozenset({"no-network"}), network_fallbacks={"public": "no-network"})

    def __init__(self, images: dict[str, tuple[bool | None, str]], cpus=2.0, memory=4096) -> None:
        self.images, self.resources, self.asked = images, (cpus, memory), []

    def image_status(self, ref: str, *, pull: bool = True):
        self.asked.append((ref, pull))
        return self.images.get(ref, (False, "cannot be pulled (no such host)"))

    def host_resources(self):
        return self.resources


def _spec(tmp_path: Path, *, image: str | None, dockerfile: bool, cpus=4.0, memory_mb=2048) -> SandboxSpec:
    env = tmp_path / "environment"
    env.mkdir(exist_ok=True)
    if dockerfile:
        (env / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    return SandboxSpec(name="t", environment_dir=env, cache_key="k", image=image, cpus=cpus, memory_mb=memory_mb)


def test_unavailable_pinned_image_builds_the_dockerfile(tmp_path):
    spec = _spec(tmp_path, image="org/task:2025", dockerfile=True)
    got = fit(FakeBackend({}), spec)
    assert got.image_source == "dockerfile" and got.usable
    assert got.apply(spec).image is None
    assert "org/task:2025 cannot be pulled (no such host); building environment/Dockerfile" in got.notes()[0]


def test_available_pinned_image_is_used(tmp_path):
    spec = _spec(tmp_path, image="org/task:2025", dockerfile=True, cpus=1)
    got = fit(FakeBackend({"org/task:2025": (True, "is on the engine")}), spec)
    assert got.apply(spec).image == "org/task:2025"
    assert got.notes() == []
    assert got.record()["image"] == {"source": "prebuilt", "prebuilt": "org/task:2025"}


def test_no_image_and_no_dockerfile_is_unusable(tmp_path):
    got = fit(FakeBackend({}), _spec(tmp_path, image="org/gone:1", dockerfile=False))
    assert not got.usable


def test_dry_run_pulls_nothing_and_says_a_run_would(tmp_path):
    backend = FakeBackend({"org/task:2025": (None, "is not on the engine: a run pulls it")})
    spec = _spec(tmp_path, image="org/task:2025", dockerfile=True)
    got = fit(backend, spec, pull=False)
    assert backend.asked == [("org/task:2025", False)]
    assert got.image_source == "pull" and got.apply(spec).image == "org/task:2025"
    assert "pull org/task:2025" in got.summary()


@pytest.mark.parametrize(("asked", "host", "granted"), [(4.0, 2.0, 2.0), (1.0, 2.0, 1.0), (3.0, None, 3.0)])
def test_cpus_are_clamped_to_the_host(tmp_path, asked, host, granted):
    spec = _spec(tmp_path, image=None, dockerfile=True, cpus=asked)
    got = fit(FakeBackend({}, cpus=host), spec)
    assert got.record()["cpus"] == {"asked": asked, "granted": granted}
    assert got.apply(spec).cpus == granted
    assert any("clamped" in n for n in got.notes()) == (granted < asked)


def test_memory_clamped_and_network_fallback_recorded(tmp_path):
    got = fit(FakeBackend({}, memory=1024), _spec(tmp_path, image=None, dockerfile=True, memory_mb=4096))
    record = got.record()
    assert record["memory_mb"] == {"asked": 4096, "granted": 1024}
    assert record["network"] == {"asked": "public", "granted": "no-network"}


def test_tls_failure_hint_only_without_a_ca_bundle(tmp_path):
    log = "SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"
    assert "--ca-bundle host" in proxy_hint(log, None)
    assert proxy_hint(log, tmp_path / "ca.pem") == ""
    assert proxy_hint("E: Unable to locate package foo", None) == ""
