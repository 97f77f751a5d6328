"""Output that is not a terminal keeps every identifier whole, however narrow COLUMNS says the screen is."""

from __future__ import annotations

import sys

from benchflow.cli import cache as cache_cli

LONG_REF = "benchflow-agent-layer/claude-agent-acp-on-a-task-with-a-very-long-name:0123456789abcdef"


def test_doctor_piped_keeps_each_check_on_one_line(bench):
    result = bench("doctor", "--offline", env={"COLUMNS": "40"})
    assert result.returncode in (0, 1), result.stderr  # 1: a required check failed on this machine
    row = next(line for line in result.stdout.splitlines() if "python (required)" in line)
    assert f"at {sys.executable}" in row


def test_cache_table_piped_keeps_image_names_whole(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    cache_cli._table([{"kind": "images", "engine": "docker", "ref": LONG_REF, "id": "sha256:" + "a" * 64,
                       "size_bytes": 123456789, "created": "2026-01-02T03:04:05Z"}])
    out = capsys.readouterr().out
    assert any(LONG_REF in line and "docker" in line for line in out.splitlines())
