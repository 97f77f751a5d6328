"""The Docker sandbox takes several uploads in one archive and lays each out like ``put``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchflow.sandbox import SandboxSpec, get_backend
from benchflow.sandbox import docker_engine as eng
from benchflow.sandbox.uploads import put_all

pytestmark = pytest.mark.docker


async def test_put_many_uploads_a_file_and_a_folder_in_one_archive(tmp_path: Path) -> None:
    note = tmp_path / "instruction.md"
    note.write_text("Do the task.\n")
    folder = tmp_path / "oracle"
    (folder / "sub").mkdir(parents=True)
    (folder / "solve.sh").write_text("#!/bin/sh\necho solved\n")
    (folder / "solve.sh").chmod(0o755)
    (folder / "sub" / "data.txt").write_text("data\n")
    spec = SandboxSpec(name="uploads", environment_dir=None, cache_key="prebuilt", image="debian:bookworm-slim",
                       network_mode="no-network", cpus=0.5, memory_mb=256,
                       labels={eng.JOB: "job-uploads", eng.TRIAL: f"uploads-{os.getpid()}"})
    box = get_backend("docker").create(spec)
    await box.start()
    try:
        archives: list[str] = []
        put_archive = box.api.put_archive

        def counted(container, path, data):
            archives.append(path)
            return put_archive(container, path, data)

        box.api.put_archive = counted
        try:
            await put_all(box, [(note, "/instruction.md"), (folder, "/oracle")])
        finally:
            del box.api.put_archive
        assert len(archives) == 1
        got = await box.exec(["sh", "-c", "cat /instruction.md /oracle/sub/data.txt && /oracle/solve.sh "
                                          "&& stat -c '%u %a' /oracle/solve.sh"])
        assert got.success, got.stderr
        assert got.stdout.splitlines() == ["Do the task.", "data", "solved", "0 755"]
    finally:
        await box.stop()
