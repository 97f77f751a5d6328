"""``bench traj setup`` as a user types it, with HOME pointed at a temporary folder."""

from __future__ import annotations

from pathlib import Path

from benchflow.traj.setup import SKILL_NAME


def test_setup_installs_asks_and_lists(bench, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    nothing = bench("traj", "setup", "--yes", env=env)
    assert nothing.returncode == 1 and "--prompt" in nothing.stderr
    (tmp_path / ".claude").mkdir()
    declined = bench("traj", "setup", env=env, input="n\n")
    assert declined.returncode == 1 and not (tmp_path / ".claude" / "skills").exists()
    done = bench("traj", "setup", "--yes", env=env)
    assert done.returncode == 0, done.stderr
    skill = tmp_path / ".claude" / "skills" / SKILL_NAME / "SKILL.md"
    assert skill.is_file() and "bench traj upload" in skill.read_text()
    again = bench("traj", "setup", "--yes", env=env)
    assert "up to date" in again.stdout and "in 0 folder(s)" in again.stdout
    session = tmp_path / ".claude" / "projects" / "-home-u-p" / "abc.jsonl"
    session.parent.mkdir(parents=True)
    session.write_text("{}\n")
    listed = bench("traj", "setup", "--list", env=env)
    assert listed.returncode == 0 and f"claude-code\t3\t{session}" in listed.stdout


def test_prompt_is_printed_and_nothing_installed(bench, tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    done = bench("traj", "setup", "--prompt", env={"HOME": str(tmp_path)})
    assert done.returncode == 0 and "bench traj upload" in done.stdout and "--dry-run" in done.stdout
    assert not (tmp_path / ".claude" / "skills").exists()
