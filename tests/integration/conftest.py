"""Fixtures shared by the integration tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A private BenchFlow cache (``BENCHFLOW_CACHE``): local sandboxes and layers stay in the test's tmp."""
    root = tmp_path / "cache"
    monkeypatch.setenv("BENCHFLOW_CACHE", str(root))
    return root


@pytest.fixture
async def local_sandboxes(cache):
    """A factory of started ``local`` sandboxes (spec fields as keywords), all stopped after the test."""
    from benchflow.sandbox import SandboxSpec, get_backend

    made = []

    async def factory(**fields):
        sandbox = get_backend("local").create(SandboxSpec(**{"environment_dir": None, "workdir": "/app", **fields}))
        made.append(sandbox)
        await sandbox.start()
        return sandbox

    yield factory
    for sandbox in made:
        await sandbox.stop()


@pytest.fixture(scope="session")
def daytona_double():
    """The Daytona API double (tests/doubles/daytona_api_double.py) on a loopback port for the session;
    ``.env()`` is what points the ``daytona`` sandbox at it."""
    from tests.doubles.daytona_api_double import serve

    served = serve()
    yield served
    served.stop()


@pytest.fixture(scope="session")
def apple_container_double(tmp_path_factory) -> dict[str, str]:
    """The environment that points the ``apple-container`` sandbox at the CLI double of
    tests/doubles/apple_container_cli_double.py (its ``container`` first on PATH, and the backend's
    test hook that allows it on a host that is not macOS)."""
    from tests.doubles.apple_container_cli_double import install

    return install(tmp_path_factory.mktemp("apple-container-cli"))


@pytest.fixture(scope="session")
def modal_double():
    """The Modal gRPC API double (tests/doubles/modal_api_double.py) on a loopback port for the session;
    ``.env()`` is what points the ``modal`` sandbox at it."""
    from tests.doubles.modal_api_double import serve

    served = serve()
    yield served
    served.stop()


@pytest.fixture(scope="session")
def agentcore_double():
    """The AgentCore, ECR and registry double (tests/doubles/agentcore_api_double.py) on a loopback port for
    the session; ``.env()`` is what points the ``agentcore`` sandbox at it (with dummy AWS credentials)."""
    from tests.doubles.agentcore_api_double import serve

    served = serve()
    yield served
    served.stop()
