"""The host's reading of a fence + verifier exec (:mod:`benchflow.verify.split_exec`): the fence's line
is found wherever the engine cuts the stream, and only output after it is the verifier's."""

from __future__ import annotations

import pytest

from benchflow.sandbox.base import CappedOutput
from benchflow.verify.split_exec import _Stdout

OUTPUT = b"conftest /app/conftest.py\nuploaded\nabc123 fenced\nverifier says hi\nabc123 fenced\n"


@pytest.mark.parametrize("size", [1, 2, 3, 7, 13, len(OUTPUT)])
async def test_the_line_parts_head_from_tail_wherever_the_chunks_are_cut(size):
    out = _Stdout(b"abc123 fenced", cap=1 << 20)
    for at in range(0, len(OUTPUT), size):
        out.feed(OUTPUT[at:at + size])
    out.end()
    assert out.reached.is_set()
    assert out.head.text() == "conftest /app/conftest.py\nuploaded\n"
    assert out.tail.text() == "verifier says hi\nabc123 fenced\n"  # the verifier's own copy stays its output


async def test_without_the_line_everything_is_head():
    out = _Stdout(b"abc123 fenced", cap=1 << 20)
    out.feed(b"uploaded\nabc123 fenced but not alone\nno newline at the end")
    out.end()
    assert not out.reached.is_set()
    assert out.head.text() == "uploaded\nabc123 fenced but not alone\nno newline at the end"


def test_output_over_the_cap_is_cut_with_a_note():
    kept = CappedOutput(4)
    kept.add(b"abcdef")
    kept.add(b"gh")
    assert kept.text() == "abcd\n[output truncated: 4 more bytes not shown (cap 4 bytes)]\n"


def test_what_follows_the_trailer_line_is_the_trailer_and_only_when_it_came_whole():
    from benchflow.verify.split_exec import cut_at

    kept = CappedOutput(1 << 10)
    kept.add(b"verifier output without a newline\nabc verified\n\x00binary\nabc verified\nrest")
    before, after = cut_at(kept, b"abc verified", 1 << 10)
    assert before.text() == "verifier output without a newline" and after == b"\x00binary\nabc verified\nrest"

    before, after = cut_at(kept, b"other", 8)  # no such line: all of it is output, kept to the cap
    assert after is None and before.text().startswith("verifier") and before.dropped == len(kept.data) - 8

    cut = CappedOutput(20)
    cut.add(b"out\nabc verified\n" + b"x" * 50)  # the part after the line was cut: it may be incomplete
    before, after = cut_at(cut, b"abc verified", 1 << 10)
    assert before.text() == "out" and after is None
