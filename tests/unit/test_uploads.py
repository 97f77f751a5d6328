"""Batched uploads: one archive for several (local, remote) pairs, and the per-item fallback."""

from __future__ import annotations

import asyncio
import tarfile
from pathlib import Path

import pytest

from benchflow.sandbox.tarstream import pack_many
from benchflow.sandbox.uploads import put_all


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    note = tmp_path / "instruction.md"
    note.write_text("Do the task.\n")
    folder = tmp_path / "oracle"
    folder.mkdir()
    (folder / "solve.sh").write_text("#!/bin/sh\necho hi\n")
    (folder / "solve.sh").chmod(0o755)
    return note, folder


def test_pack_many_holds_every_pair_at_its_remote_path_root_owned(tmp_path: Path) -> None:
    note, folder = _tree(tmp_path)
    buffer = pack_many([(note, "/instruction.md"), (folder, "/oracle")])
    with tarfile.open(fileobj=buffer) as archive:
        members = {m.name: m for m in archive.getmembers()}
        assert set(members) == {"instruction.md", "oracle", "oracle/solve.sh"}
        assert all(m.uid == 0 and m.gid == 0 for m in members.values())
        assert members["oracle/solve.sh"].mode & 0o111
        assert archive.extractfile("instruction.md").read() == b"Do the task.\n"


@pytest.mark.parametrize("remote", ["/", "relative/path", "/a/../etc"])
def test_pack_many_refuses_a_remote_path_outside_the_rules(tmp_path: Path, remote: str) -> None:
    note, _ = _tree(tmp_path)
    with pytest.raises(ValueError, match="remote path"):
        pack_many([(note, "/instruction.md"), (note, remote)])


class _OneAtATime:
    def __init__(self) -> None:
        self.calls: list[tuple[Path, str]] = []

    async def put(self, local: Path, remote: str) -> None:
        self.calls.append((local, remote))


class _Batching(_OneAtATime):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[tuple[Path, str]]] = []

    async def put_many(self, items: list[tuple[Path, str]]) -> None:
        self.batches.append(items)


def test_put_all_sends_one_batch_when_the_sandbox_can(tmp_path: Path) -> None:
    note, folder = _tree(tmp_path)
    box = _Batching()
    asyncio.run(put_all(box, [(note, "/instruction.md"), (folder, "/oracle")]))
    assert box.batches == [[(note, "/instruction.md"), (folder, "/oracle")]] and box.calls == []


def test_put_all_puts_each_item_in_order_otherwise(tmp_path: Path) -> None:
    note, folder = _tree(tmp_path)
    box = _OneAtATime()
    asyncio.run(put_all(box, [(note, "/instruction.md"), (folder, "/oracle")]))
    assert box.calls == [(note, "/instruction.md"), (folder, "/oracle")]
