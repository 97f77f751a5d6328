"""The engine client's plain calls: answers, kept-alive connections, errors as the callers catch them."""

from __future__ import annotations

import pytest

from benchflow.sandbox.engine_api import EngineClient, EngineError, EngineUnreachable, NotFound
from tests.doubles.eager_engine_double import EagerEngine


def test_calls_share_a_kept_alive_connection(tmp_path):
    with EagerEngine(str(tmp_path / "engine.sock")) as engine:
        api = EngineClient(engine.url, version="1.41", timeout=5)
        assert api.inspect_container("c1")["State"]["Status"] == "running"
        assert api.exec_inspect("exec1")["ExitCode"] == 3
        assert len(api._idle) == 1
        api.close()


def test_an_error_status_carries_the_engines_message(tmp_path):
    with EagerEngine(str(tmp_path / "engine.sock")) as engine:
        api = EngineClient(engine.url, version="1.41", timeout=5)
        with pytest.raises(NotFound) as found:
            api.networks()
        assert found.value.status_code == 404
        assert "no such endpoint" in found.value.explanation
        assert isinstance(found.value, EngineError)


def test_an_engine_that_is_not_there_is_a_connection_error(tmp_path):
    api = EngineClient(f"unix://{tmp_path / 'absent.sock'}", version="1.41", timeout=5)
    with pytest.raises(EngineUnreachable) as failed:
        api.inspect_container("c1")
    assert isinstance(failed.value, ConnectionError)  # a trial meeting it is an infrastructure failure


def test_an_unknown_address_scheme_is_refused():
    with pytest.raises(ValueError, match="unsupported Docker engine address"):
        EngineClient("npipe:////./pipe/docker_engine")
