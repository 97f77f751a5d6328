"""What a sandbox may do beyond the protocol is declared (sandbox/optional.py) and asked for by type."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from benchflow.sandbox import optional
from benchflow.sandbox.base import discard
from benchflow.sandbox.uploads import put_all


class Plain:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def put(self, local: Path, remote: str) -> None:
        self.calls.append(f"put {remote}")

    async def stop(self) -> None:
        self.calls.append("stop")


class Batching(Plain):
    async def put_many(self, items: list[tuple[Path, str]]) -> None:
        self.calls.append(f"put_many {len(items)}")

    async def discard(self) -> None:
        self.calls.append("discard")


def test_a_sandbox_that_declares_a_member_gets_the_batched_path_and_one_that_does_not_the_plain_one():
    plain, batching = Plain(), Batching()
    items = [(Path("a"), "/a"), (Path("b"), "/b")]
    for box in (plain, batching):
        asyncio.run(put_all(box, items))
        asyncio.run(discard(box))
    assert plain.calls == ["put /a", "put /b", "stop"]
    assert batching.calls == ["put_many 2", "discard"]


@pytest.mark.parametrize("cls, declared", [
    ("benchflow.sandbox.docker.sandbox:DockerSandbox",
     {"PutsMany", "GetsMany", "Discards", "MakesRoom", "BlocksMetadata", "HasServices", "PreparesRestore"}),
    ("benchflow.sandbox.local.sandbox:LocalSandbox", {"BlocksMetadata"}),
])
def test_the_built_in_sandboxes_offer_what_they_declare(cls, declared):
    import importlib

    module, _, name = cls.partition(":")
    sandbox = getattr(importlib.import_module(module), name)
    protocols = {n for n in dir(optional) if isinstance(getattr(optional, n), type) and n[0].isupper()
                 and getattr(getattr(optional, n), "_is_protocol", False)}
    offered = {n for n in protocols if issubclass(sandbox, getattr(optional, n))}
    assert declared <= offered, declared - offered
