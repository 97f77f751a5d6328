"""Output that the engine sends together with the response headers reaches the caller."""

from __future__ import annotations

import asyncio

from benchflow.sandbox import docker_exec
from benchflow.sandbox.docker_stream import open_process
from benchflow.sandbox.engine_api import EngineClient
from benchflow.sandbox.engine_stream import attach_stream
from tests.doubles.eager_engine_double import EagerEngine


def _api(engine: EagerEngine):
    return EngineClient(engine.url, version="1.41", timeout=5)


def test_exec_output_sent_with_the_headers_is_kept(tmp_path):
    with EagerEngine(str(tmp_path / "engine.sock"), stdout=b"eth0\nlo\n", stderr=b"warn\n") as engine:
        result = asyncio.run(docker_exec.run(_api(engine), "c1", ["ls", "/sys/class/net"], user=None,
                                             env=None, cwd=None, timeout=30, stdin=None,
                                             output_cap=1 << 20))
    assert (result.stdout, result.stderr, result.return_code) == ("eth0\nlo\n", "warn\n", 3)


def test_a_streamed_process_sees_its_first_line(tmp_path):
    async def first_line(api) -> bytes:
        process = await open_process(api, "c1", ["agent"], user=None, env=None, cwd=None)
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        await process.wait()
        return line

    with EagerEngine(str(tmp_path / "engine.sock"), stdout=b'{"jsonrpc": "2.0"}\n') as engine:
        assert asyncio.run(first_line(_api(engine))) == b'{"jsonrpc": "2.0"}\n'


def test_an_attach_keeps_the_output_sent_with_the_headers(tmp_path):
    with EagerEngine(str(tmp_path / "engine.sock"), attach_output=b"BENCHFLOW_READY 0\n") as engine:
        stream = attach_stream(_api(engine), "c1")
        try:
            assert list(stream.frames()) == [(1, b"BENCHFLOW_READY 0\n")]
        finally:
            stream.close()
