"""The engine client's plain calls: answers, kept-alive connections, errors as the callers catch them."""

from __future__ import annotations

import pytest

from benchflow.sandbox.engine_api import EngineClient, EngineError, EngineUnreachable, NotFound
from benchflow.sandbox.docker.leftovers import removal_in_progress
from tests.doubles.eager_engine_double import EagerEngine
from tests.waiting import wait_until


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


def test_an_unawaited_removal_is_sent_before_it_is_answered(tmp_path):
    with EagerEngine(str(tmp_path / "engine.sock")) as engine:
        api = EngineClient(engine.url, version="1.41", timeout=5)
        answers = [api.remove_container_unawaited(name) for name in ("c1", "gone", "busy")]
        wait_until(lambda: len(engine.removals) == 3, what="the double to receive the three removals")
        assert all("force=true" in path and "v=true" in path for path in engine.removals)
        engine.answer_removals.set()
        answers[0]()
        answers[1]()  # a container already gone is no error
        with pytest.raises(EngineError) as busy:
            answers[2]()
        assert busy.value.status_code == 409
        assert removal_in_progress(busy.value)  # cleanup takes a removal in progress as done


@pytest.mark.parametrize("libpod_only", [False, True])
def test_a_pids_limit_update_takes_the_route_the_engine_has(tmp_path, libpod_only):
    with EagerEngine(str(tmp_path / "engine.sock"), libpod_only=libpod_only) as engine:
        api = EngineClient(engine.url, version="1.41", timeout=5)
        api.update_pids_limit("c1", 300)
        if libpod_only:  # Podman's compatible API has no update route: its own takes OCI resources
            assert engine.updates == [("/v1.41/libpod/containers/c1/update", {"pids": {"limit": 300}})]
        else:
            assert engine.updates == [("/v1.41/containers/c1/update", {"PidsLimit": 300})]
