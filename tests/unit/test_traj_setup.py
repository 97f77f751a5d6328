"""``bench traj setup``'s library: where the submit skill goes, that it is a valid skill, recent sessions."""

from __future__ import annotations

import os
from pathlib import Path

from benchflow.traj.setup import SKILL_MD, SKILL_NAME, install, recent_sessions, skill_targets


def test_skill_goes_only_to_agents_used_here_and_is_idempotent(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".codex").mkdir()
    targets = skill_targets(tmp_path)
    assert {t.folder for t in targets} == {tmp_path / ".claude" / "skills" / SKILL_NAME,
                                           tmp_path / ".codex" / "skills" / SKILL_NAME}
    assert not (tmp_path / ".gemini").exists()
    assert len(install(targets)) == 2
    assert (tmp_path / ".claude" / "skills" / SKILL_NAME / "SKILL.md").read_text() == SKILL_MD
    assert install(skill_targets(tmp_path)) == []  # already up to date
    (tmp_path / ".codex" / "skills" / SKILL_NAME / "SKILL.md").write_text("old")
    assert [t.agent for t in install(skill_targets(tmp_path))] == ["codex-acp"]


def test_the_skill_passes_the_skill_validator(tmp_path: Path) -> None:
    from skills_ref import validate

    folder = tmp_path / SKILL_NAME
    folder.mkdir()
    (folder / "SKILL.md").write_text(SKILL_MD)
    assert validate(folder) == []


def test_recent_sessions_newest_first(tmp_path: Path) -> None:
    old = tmp_path / ".claude" / "projects" / "-home-u-proj" / "a.jsonl"
    new = tmp_path / ".codex" / "sessions" / "2026" / "11" / "b.jsonl"
    for path, mtime in ((old, 1_000_000), (new, 2_000_000)):
        path.parent.mkdir(parents=True)
        path.write_text("{}\n")
        os.utime(path, (mtime, mtime))
    (tmp_path / ".claude" / "projects" / "-home-u-proj" / "notes.txt").write_text("x")
    sessions = recent_sessions(tmp_path)
    assert [(s.agent, s.path) for s in sessions] == [("codex", new), ("claude-code", old)]
