"""The task content digest, checked against a hand computation of contracts §1.9."""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from pathlib import Path

from benchflow.tasks import task_digest

DIGEST_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "digest"

# Frozen values of the fixture tasks below; each is also recomputed by hand in the tests,
# so a change of the fixtures or of the algorithm shows up as a mismatch here.
ALPHA = "sha256:1c6bc33eb3affc7474397089d4dc7535c4132cb28f2ba9097d25a45736e24642"
BETA = "sha256:71d8718c28381c1f129927a7dc5cf4f40b5176808e2798cb94e1c0a398c00102"


def by_hand(root: Path, relpaths: list[str]) -> str:
    """The §1.9 construction written out over an explicit, already ordered file list."""
    outer = hashlib.sha256()
    for rel in relpaths:
        outer.update(rel.encode("utf-8") + b"\x00" + hashlib.sha256((root / rel).read_bytes()).digest())
    return "sha256:" + outer.hexdigest()


def test_alpha_golden():
    root = DIGEST_FIXTURES / "alpha-task"
    expected = by_hand(root, ["environment/Dockerfile", "instruction.md", "task.toml"])
    assert task_digest(root) == expected == ALPHA


def test_beta_golden_skips_source_files_and_orders_by_string():
    root = DIGEST_FIXTURES / "beta-task"
    # '.hidden' is hashed, both .benchflow-source.json files are not, 'a.b/c' sorts before 'a/c'.
    expected = by_hand(root, [".hidden", "a.b/c", "a/c", "blob.bin", "données.txt",
                              "environment/Dockerfile", "task.md"])
    assert task_digest(root) == expected == BETA


def test_symlinks_modes_and_empty_dirs_do_not_count(tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    (task / "task.toml").write_bytes(b'version = "1.0"\n')
    before = task_digest(task)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not hashed")
    (task / "link.toml").symlink_to(task / "task.toml")
    (task / "dir-link").symlink_to(outside, target_is_directory=True)
    (task / "dangling").symlink_to(task / "missing")
    (task / "empty" / "deeper").mkdir(parents=True)
    (task / "task.toml").chmod(0o755)
    assert task_digest(task) == before == by_hand(task, ["task.toml"])


def test_content_and_path_both_matter(tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    (task / "a.txt").write_bytes(b"one")
    first = task_digest(task)
    (task / "a.txt").write_bytes(b"two")
    second = task_digest(task)
    (task / "a.txt").rename(task / "b.txt")
    assert len({first, second, task_digest(task)}) == 3


def test_large_file_is_streamed(tmp_path):
    """A file far bigger than the read chunk hashes correctly in bounded memory."""
    task = tmp_path / "task"
    task.mkdir()
    big = task / "big.bin"
    block = os.urandom(1 << 16)
    with open(big, "wb") as handle:
        for _ in range(192):  # 12 MiB
            handle.write(block)
    expected = by_hand(task, ["big.bin"])
    tracemalloc.start()
    try:
        got = task_digest(task)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == expected
    assert peak < 4 << 20, f"peak {peak} bytes: the file was not streamed"
