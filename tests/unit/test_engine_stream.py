"""Output that the engine sends together with the response headers reaches the caller; frames that
arrive split at any byte (or a byte at a time) come back whole."""

from __future__ import annotations

import asyncio
import io
from types import SimpleNamespace

from benchflow.sandbox import docker_exec
from benchflow.sandbox.docker.stream import open_process
from benchflow.sandbox.engine_api import EngineClient
from benchflow.sandbox.engine_stream import EngineStream, attach_stream
from tests.doubles.eager_engine_double import EagerEngine, frame


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


class _Pieces(io.RawIOBase):
    """A connection that delivers its bytes in the given pieces, one per read."""

    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = [p for p in pieces if p]

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if not self._pieces:
            return 0
        piece = self._pieces[0][:len(buffer)]
        self._pieces[0] = self._pieces[0][len(piece):]
        if not self._pieces[0]:
            self._pieces.pop(0)
        buffer[:len(piece)] = piece
        return len(piece)


PARTS = [(1, b'{"method": "session/update"}\n'), (2, b"log\n"), (1, b""), (1, b'{"id": 2, "result": {}}\n')]
WIRE = b"".join(frame(stream, data) for stream, data in PARTS)
FRAMES = [(stream, data) for stream, data in PARTS if data]


def _frames(pieces: list[bytes]) -> list[tuple[int, bytes]]:
    return list(EngineStream(SimpleNamespace(reader=io.BufferedReader(_Pieces(pieces), 8), sock=None)).frames())


def test_frames_split_at_any_byte_come_back_whole():
    for cut in range(len(WIRE) + 1):
        assert _frames([WIRE[:cut], WIRE[cut:]]) == FRAMES, cut


def test_frames_arriving_a_byte_at_a_time_come_back_whole():
    assert _frames([WIRE[i:i + 1] for i in range(len(WIRE))]) == FRAMES


def test_a_stream_cut_inside_a_frame_ends_without_the_partial_frame():
    ends = [sum(8 + len(data) for _, data in PARTS[:i + 1]) for i in range(len(PARTS))]
    for cut in range(len(WIRE)):
        whole = [(stream, data) for (stream, data), end in zip(PARTS, ends) if end <= cut and data]
        assert _frames([WIRE[:cut]]) == whole, cut
