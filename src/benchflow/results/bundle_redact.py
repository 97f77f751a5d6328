"""Redacting one file for ``bench bundle``: streamed, looking inside compression and UTF-16, bounded.

A file is read in layers: gzip or zlib compression is undone (and redone on
the way out), a tar (plain or compressed) is repacked member by member, and
the content is decoded as UTF-8 or UTF-16 text (re-encoded the same way) and
redacted — JSON records field by field, JSONL line by line, other text in
blocks of lines. Content that is not text is kept as it is unless a secret
shape shows up in its bytes (read as Latin-1 or UTF-16), in which case it is
left out.

Nothing is read whole: every stage streams, and everything decompressed or
decoded from one file counts against :data:`MAX_EXPANDED_BYTES`; a file that
would expand past it (a compression bomb) is left out and recorded, never
expanded further. Output goes to a caller's spooled temporary file.
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
import re
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO

from benchflow.util.redact import MASK, redact_obj, redact_text

MAX_EXPANDED_BYTES = 256 << 20
"""What one bundled file may expand to once decompressed (a tar counts as a whole)."""
JSON_PARSE_BYTES = 64 << 20
"""Largest ``.json`` parsed as one document (field-by-field redaction); larger ones are redacted as text."""
BLOCK_CHARS = 1 << 20
CHUNK = 1 << 20
SPOOL_BYTES = 8 << 20
_UTF16_RUN = re.compile(rb"(?:[\x20-\x7e]\x00){8}")

Opener = Callable[[], IO[bytes]]


class TooBig(Exception):
    """The file expands past :data:`MAX_EXPANDED_BYTES`. Not a BenchError: a signal to leave the file out."""


class LeftOut(Exception):
    """The file (or tar member) must not be bundled; the message is the reason. Not a BenchError: a signal
    to leave the file out, noted in the bundle."""


def spool() -> IO[bytes]:
    return tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - caller closes


class _Budget:
    """Bytes decompressed so far for one bundled file, over every layer, member and pass."""

    def __init__(self) -> None:
        self.limit, self.used = MAX_EXPANDED_BYTES, 0

    def charge(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            raise TooBig(f"expands past {self.limit // 2**20} MiB")


class _Bounded(io.RawIOBase):
    """A decompressed stream that charges what comes through to a :class:`_Budget`.

    Closing it closes ``inner`` and every stream in ``also`` (the layers below).
    """

    def __init__(self, inner: IO[bytes], budget: _Budget, also: tuple[IO[bytes], ...] = ()) -> None:
        self.inner, self.budget, self.also = inner, budget, also

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        if not self.closed:
            for stream in (self.inner, *self.also):
                stream.close()
        super().close()

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.inner.read(min(len(buffer), CHUNK))
        self.budget.charge(len(data))
        buffer[:len(data)] = data
        return len(data)


class _ZlibReader(io.RawIOBase):
    def __init__(self, inner: IO[bytes]) -> None:
        self.inner, self.engine, self.pending = inner, zlib.decompressobj(), b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        # max_length keeps one step's output small however well the input compresses
        while not self.pending:
            if self.engine.unconsumed_tail:
                self.pending = self.engine.decompress(self.engine.unconsumed_tail, CHUNK)
                continue
            raw = b"" if self.engine.eof else self.inner.read(64 * 1024)
            if not raw:
                return 0
            self.pending = self.engine.decompress(raw, CHUNK)
        size = min(len(buffer), len(self.pending))
        buffer[:size], self.pending = self.pending[:size], self.pending[size:]
        return size


class _ZlibWriter:
    def __init__(self, out: IO[bytes]) -> None:
        self.out, self.engine = out, zlib.compressobj()

    def write(self, data: bytes) -> int:
        self.out.write(self.engine.compress(data))
        return len(data)

    def close(self) -> None:
        self.out.write(self.engine.flush())


def _layer(head: bytes) -> str:
    """``gzip``, ``zlib`` or ``raw``: how the file's bytes are compressed."""
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0:
        try:
            zlib.decompressobj().decompress(head, 64)
            return "zlib"
        except zlib.error:
            return "raw"
    return "raw"


def _unwrap(raw: IO[bytes], layer: str, budget: _Budget) -> IO[bytes]:
    if layer == "raw":
        return raw
    stream = gzip.GzipFile(fileobj=raw, mode="rb") if layer == "gzip" else io.BufferedReader(_ZlibReader(raw))
    return io.BufferedReader(_Bounded(stream, budget, also=(raw,)), CHUNK)  # type: ignore[arg-type]


def _wrap(out: IO[bytes], layer: str) -> IO[bytes] | _ZlibWriter:
    if layer == "gzip":
        return gzip.GzipFile(fileobj=out, mode="wb", mtime=0)
    if layer == "zlib":
        return _ZlibWriter(out)
    return out


def redact_file(name: str, open_raw: Opener, out: IO[bytes], left_out: list[dict[str, str]],
                rel: str) -> tuple[bool, int]:
    """Write what is bundled of ``open_raw()`` to ``out``; returns (passed through the redactor, values masked).

    Tar members that must not be bundled are dropped and listed in ``left_out``
    as ``<rel>:<member>``.

    Raises:
        TooBig: it expands past :data:`MAX_EXPANDED_BYTES`.
        LeftOut: it is not text and holds a secret-looking value.
    """
    return _redact_any(name, open_raw, out, _Context(left_out, rel, _Budget()), tar=True)


@dataclass
class _Context:
    left_out: list[dict[str, str]]
    rel: str
    budget: _Budget


def _redact_any(name: str, open_raw: Opener, out: IO[bytes], ctx: _Context, *, tar: bool) -> tuple[bool, int]:
    with open_raw() as raw:
        layer = _layer(raw.read(4096))
    try:
        return _redact_layer(name, open_raw, layer, out, ctx, tar=tar)
    except (EOFError, zlib.error, gzip.BadGzipFile):  # looked compressed but is not (or is cut): plain bytes
        if layer == "raw":
            raise
        out.seek(0)
        out.truncate()
        return _redact_layer(name, open_raw, "raw", out, ctx, tar=tar)


def _redact_layer(name: str, open_raw: Opener, layer: str, out: IO[bytes], ctx: _Context, *,
                  tar: bool) -> tuple[bool, int]:
    inner_name = name[:-3] if layer == "gzip" and name.endswith(".gz") else name

    def open_inner() -> IO[bytes]:
        return _unwrap(open_raw(), layer, ctx.budget)

    with open_inner() as inner:
        head = inner.read(512)
    if tar and (_is_tar(head) or inner_name.endswith(".tar") or name.endswith(".tgz")):
        try:
            return True, _repack_tar(open_inner, layer, out, ctx)
        except tarfile.TarError:
            out.seek(0)
            out.truncate()
    result = _redact_content(inner_name, open_inner, layer, out)
    if result is None:  # not text, no secret shape: the original bytes
        out.seek(0)
        out.truncate()
        with open_raw() as raw:
            while chunk := raw.read(CHUNK):
                out.write(chunk)
        return False, 0
    return True, result


def _is_tar(head: bytes) -> bool:
    return len(head) >= 262 and head[257:262] == b"ustar"


def _repack_tar(open_inner: Opener, layer: str, out: IO[bytes], ctx: _Context) -> int:
    sink = _wrap(out, layer)
    try:
        return _repack_members(open_inner, sink, ctx)
    finally:
        if sink is not out:
            sink.close()


def _repack_members(open_inner: Opener, sink: IO[bytes] | _ZlibWriter, ctx: _Context) -> int:
    """Each regular member through the redactor (no tar inside a tar); links and folders as they are."""
    masked = 0
    with open_inner() as inner, tarfile.open(fileobj=inner, mode="r|") as src, \
            tarfile.open(fileobj=sink, mode="w|") as dst:  # type: ignore[arg-type]
        while (member := src.next()) is not None:
            src.members.clear()  # a stream never looks back
            if not member.isfile():
                if member.isdir() or member.issym() or member.islnk():
                    dst.addfile(member)
                continue
            if ctx.budget.used + member.size > ctx.budget.limit:
                ctx.budget.charge(member.size)  # raises before the member is read
            with spool() as raw_member, spool() as redacted:
                handle = src.extractfile(member)
                while handle is not None and (chunk := handle.read(CHUNK)):
                    raw_member.write(chunk)
                try:
                    _, count = _redact_any(member.name, lambda f=raw_member: _rewound(f), redacted, ctx, tar=False)
                except LeftOut as exc:
                    ctx.left_out.append({"path": f"{ctx.rel}:{member.name}", "reason": str(exc)})
                    continue
                masked += count
                member.size = redacted.seek(0, io.SEEK_END)
                redacted.seek(0)
                dst.addfile(member, redacted)
    return masked


def _rewound(handle: IO[bytes]) -> IO[bytes]:
    handle.seek(0)
    return _Borrowed(handle)


class _Borrowed(io.RawIOBase):
    """A view of a spooled file that does not close it."""

    def __init__(self, inner: IO[bytes]) -> None:
        self.inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.inner.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def _encoding(head: bytes) -> str | None:
    """``utf-8``, a UTF-16 codec, or None for content that is not text."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    sample = head[:8192]
    if len(sample) >= 16:
        even, odd = sample[0::2], sample[1::2]
        if odd.count(0) > 0.4 * len(odd) and even.count(0) < 0.1 * len(even):
            return "utf-16-le"
        if even.count(0) > 0.4 * len(even) and odd.count(0) < 0.1 * len(odd):
            return "utf-16-be"
    return None if b"\0" in sample else "utf-8"


def _redact_content(name: str, open_inner: Opener, layer: str, out: IO[bytes]) -> int | None:
    """Redacted text to ``out`` (through ``layer``) and the masks added; None for clean non-text content.

    Raises:
        LeftOut: non-text content holding a secret shape.
    """
    with open_inner() as inner:
        encoding = _encoding(inner.read(8192))
    if encoding is not None:
        sink = _wrap(out, layer)
        try:
            with open_inner() as inner:
                text = io.TextIOWrapper(inner, encoding=encoding, errors="strict", newline="")
                encoder = codecs.getincrementalencoder(encoding)()
                masked = 0
                for before, after in _redacted_pieces(name, text):
                    masked += max(0, after.count(MASK) - before.count(MASK))
                    sink.write(encoder.encode(after))
            return masked
        except UnicodeError:  # not text after all: start again as bytes
            if sink is not out:
                sink.close()
                sink = out
            out.seek(0)
            out.truncate()
        finally:
            if sink is not out:
                sink.close()
    with open_inner() as inner:
        if _binary_holds_secret(inner):
            raise LeftOut("binary file holding a secret-looking value")
    return None


def _redacted_pieces(name: str, text: IO[str]) -> Iterator[tuple[str, str]]:
    """(original, redacted) pieces of ``text`` in order."""
    pending = ""
    if name.endswith(".json"):
        pending = text.read(JSON_PARSE_BYTES + 1)
        if len(pending) <= JSON_PARSE_BYTES:
            try:
                yield pending, json.dumps(redact_obj(json.loads(pending)), indent=2, ensure_ascii=False) + "\n"
                return
            except ValueError:
                pass
    elif name.endswith(".jsonl"):
        for line in text:
            yield line, _redact_line(line)
        return
    for line in text:
        pending += line
        if len(pending) >= BLOCK_CHARS:
            cut = _safe_cut(pending)
            yield pending[:cut], redact_text(pending[:cut])
            pending = pending[cut:]
    if pending:
        yield pending, redact_text(pending)


def _safe_cut(block: str) -> int:
    """Where a block may end: before a PEM key whose end is not in it yet."""
    begin = block.rfind("-----BEGIN ")
    return begin if begin > 0 and block.find("-----END ", begin) < 0 else len(block)


def _redact_line(line: str) -> str:
    if not line.strip():
        return line
    try:
        return json.dumps(redact_obj(json.loads(line)), ensure_ascii=False) + "\n"
    except ValueError:
        return redact_text(line)


def _binary_holds_secret(inner: IO[bytes], overlap: int = 4096) -> bool:
    """Whether a secret shape appears in the bytes read as Latin-1 or as UTF-16 (either alignment)."""
    tail = b""
    while chunk := inner.read(CHUNK):
        window = tail + chunk
        views = [window.decode("latin-1")]
        if _UTF16_RUN.search(window):
            views += [window.decode("utf-16-le", "ignore"), window[1:].decode("utf-16-le", "ignore")]
        if any(redact_text(view) != view for view in views):
            return True
        tail = window[-overlap:]
    return False
