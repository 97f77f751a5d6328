"""The Docker-family backends on another engine or OCI runtime: how they say they cannot run
here, what they declare, and where they connect. (Their containers are proven by the
conformance suite against the real Podman service and gVisor runtime.)"""

from __future__ import annotations

import pytest

from benchflow.errors import ConfigError
from benchflow.sandbox.docker import backend as db
from benchflow.sandbox import docker_engine as eng
from benchflow.sandbox import get_backend


class FakeEngine:
    def __init__(self, runtimes: dict | None = None, fails: bool = False) -> None:
        self.runtimes, self.fails = runtimes or {}, fails

    def info(self) -> dict:
        if self.fails:
            raise ConnectionError("engine went away")
        return {"Runtimes": self.runtimes}


@pytest.fixture
def engine(monkeypatch):
    def use(fake: FakeEngine) -> None:
        monkeypatch.setattr(eng, "ping", lambda url=None, timeout=5.0: (True, "Docker engine 99 (API 1.41)"))
        monkeypatch.setattr(eng, "client", lambda url=None: fake)
    return use


def test_a_runtime_the_engine_lacks_is_refused_with_the_fix(engine):
    engine(FakeEngine({"runc": {"path": "runc"}}))
    ok, reason = db.GVISOR_BACKEND.available()
    assert not ok
    assert "has no 'runsc' runtime (it has runc)" in reason and "scripts/setup.d/gvisor.sh" in reason


def test_a_registered_runtime_is_available_and_named(engine):
    engine(FakeEngine({"runc": {}, "runsc": {"path": "/usr/bin/runsc"}}))
    assert db.GVISOR_BACKEND.available() == (True, "Docker engine 99 (API 1.41), runtime runsc")


def test_an_engine_that_cannot_list_runtimes_is_not_available(engine):
    engine(FakeEngine(fails=True))
    ok, reason = db.GVISOR_BACKEND.available()
    assert not ok and "ConnectionError" in reason


def test_gvisor_declares_loopback_only_and_no_pods(monkeypatch):
    monkeypatch.setattr(eng, "facts", lambda url=None: eng.EngineFacts(has_bridge=True))
    caps = db.GVISOR_BACKEND.capabilities
    assert caps.network_for("public") == "no-network"
    assert caps.network_for("allowlist") == "allowlist"
    assert not caps.multi_service and caps.host_mounts and caps.snapshots
    assert db.BACKEND.capabilities.network_for("public") == "public"


def test_podman_uses_its_socket_and_mounts_this_hosts_folders(monkeypatch):
    monkeypatch.delenv(db.PODMAN_ENV, raising=False)
    assert db.PODMAN_BACKEND.url() == "unix:///run/podman/podman.sock"
    assert not db.PODMAN_BACKEND.configured()
    monkeypatch.setenv(db.PODMAN_ENV, "unix:///tmp/elsewhere.sock")
    assert db.PODMAN_BACKEND.url() == "unix:///tmp/elsewhere.sock" and db.PODMAN_BACKEND.configured()
    monkeypatch.setattr(eng, "facts", lambda url=None: eng.EngineFacts(has_bridge=False))
    assert db.PODMAN_BACKEND.capabilities.host_mounts


def test_reference_names_without_a_backend_are_refused_with_why(monkeypatch):
    """Every name of the reference has a backend now; the table of refused ones still says why for a name in it."""
    import benchflow.sandbox as registry

    monkeypatch.setitem(registry.UNSUPPORTED, "moon-cloud", "Moon has no API")
    with pytest.raises(ConfigError) as caught:
        get_backend("moon-cloud")
    assert "Moon has no API" in str(caught.value) and "use one of: docker" in str(caught.value)
