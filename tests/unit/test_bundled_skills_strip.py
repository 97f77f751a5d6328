"""A no-skill run's Dockerfile without its copies of the task's ``skills/`` (it must still build)."""

from __future__ import annotations

import tarfile
from pathlib import Path

from benchflow.sandbox.base import SandboxSpec
from benchflow.sandbox.bundled_skills import without_skill_copies
from benchflow.sandbox.docker_build import context_tar, image_tag


def test_copies_of_skills_are_dropped_and_the_rest_kept() -> None:
    dockerfile = ("FROM debian:bookworm-slim\n"
                  "COPY skills /root/.claude/skills\n"
                  "copy --chown=1000 ./skills/ /root/.agents/skills\n"
                  'COPY ["skills/x", "/opt/x"]\n'
                  "COPY data/ skills/marker /opt/copied/\n"
                  "COPY --from=builder /skills /opt/built\n"
                  "ADD skills \\\n    /opt/continued\n"
                  "COPY . /app/environment\n"
                  "RUN echo skills\n")
    out = without_skill_copies(dockerfile).splitlines()
    assert out[0] == "FROM debian:bookworm-slim"
    assert [line.startswith("# benchflow: no-skill run") for line in out[1:4]] == [True, True, True]
    assert out[4] == "COPY data/ /opt/copied/"
    assert out[5] == "COPY --from=builder /skills /opt/built"  # another stage, not the context
    assert out[6].startswith("# benchflow: no-skill run") and "/opt/continued" in out[6]
    assert out[7:] == ["COPY . /app/environment", "RUN echo skills"]


def _spec(env: Path, bundled: bool) -> SandboxSpec:
    return SandboxSpec(name="t", environment_dir=env, cache_key="k", bundled_skills=bundled)


def test_context_leaves_out_skills_only_for_a_no_skill_build(tmp_path: Path) -> None:
    (tmp_path / "skills" / "s").mkdir(parents=True)
    (tmp_path / "skills" / "s" / "SKILL.md").write_text("x")
    (tmp_path / "skillset.txt").write_text("not the folder")
    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm-slim\nCOPY skills /root/.claude/skills\n")

    def names(bundled: bool) -> tuple[set[str], str]:
        with tarfile.open(fileobj=context_tar(_spec(tmp_path, bundled))) as tar:
            dockerfile = tar.extractfile("Dockerfile").read().decode()
            return set(tar.getnames()), dockerfile

    kept, _ = names(True)
    assert "skills/s/SKILL.md" in kept
    left, dockerfile = names(False)
    assert not any(n == "skills" or n.startswith("skills/") for n in left) and "skillset.txt" in left
    assert "COPY skills" not in dockerfile.replace("left out: COPY skills", "")
    assert image_tag(_spec(tmp_path, True)) != image_tag(_spec(tmp_path, False))


def test_a_task_without_skills_keeps_one_image_for_both(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    assert image_tag(_spec(tmp_path, True)) == image_tag(_spec(tmp_path, False))
