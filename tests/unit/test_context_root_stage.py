"""``--context-root`` staging: which ``COPY`` sources come from the repository root, and how the copy's
Dockerfile points at them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchflow.context_root.stage import plan, stage
from benchflow.errors import ConfigError


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "packages" / "claw-gmail").mkdir(parents=True)
    (root / "packages" / "claw-gmail" / "app.py").write_text("print('gmail')\n")
    (root / "tasks" / "t" / "environment").mkdir(parents=True)
    (root / "tasks" / "t" / "data").mkdir()
    (root / "tasks" / "t" / "data" / "seed.json").write_text("{}\n")
    (root / "VERSION").write_text("v1\n")
    (tmp_path / "secret.txt").write_text("not for the image\n")
    os.symlink(tmp_path / "secret.txt", root / "linked.txt")
    (root / "tasks" / "t" / "environment" / "local.txt").write_text("beside the Dockerfile\n")
    return root


def _dockerfile(repo: Path, text: str) -> Path:
    env = repo / "tasks" / "t" / "environment"
    (env / "Dockerfile").write_text(text)
    return env


def test_sources_under_the_root_are_pointed_into_deps_and_everything_else_is_left_as_written(repo):
    env = _dockerfile(repo, "FROM debian:bookworm-slim AS base\n"
                            "COPY packages/claw-gmail /opt/claw-gmail\n"
                            "COPY --chown=1000 tasks/t/data VERSION /seed/\n"
                            'COPY ["VERSION", "/opt/VERSION"]\n'
                            "COPY local.txt /opt/local.txt\n"
                            "COPY ../secret.txt linked.txt /opt/\n"
                            "COPY packages/*/app.py $HOME/ /opt/glob/\n"
                            "COPY --from=base /etc/hostname /opt/hostname\n"
                            "RUN echo packages/claw-gmail\n")
    text, staged = plan(env, "Dockerfile", repo)
    assert text.splitlines() == [
        "FROM debian:bookworm-slim AS base",
        "COPY _deps/claw-gmail /opt/claw-gmail",
        "COPY --chown=1000 _deps/t__data _deps/VERSION /seed/",
        'COPY ["_deps/VERSION", "/opt/VERSION"]',
        "COPY local.txt /opt/local.txt",  # not under the root: environment/'s own file
        "COPY ../secret.txt linked.txt /opt/",  # outside the root, and a link out of it: never staged
        "COPY packages/*/app.py $HOME/ /opt/glob/",
        "COPY --from=base /etc/hostname /opt/hostname",
        "RUN echo packages/claw-gmail",
    ]
    assert staged == {"claw-gmail": repo / "packages" / "claw-gmail", "t__data": repo / "tasks" / "t" / "data",
                      "VERSION": repo / "VERSION"}


def test_the_staged_copy_is_content_addressed_and_the_task_folder_is_untouched(repo, tmp_path):
    env = _dockerfile(repo, "FROM debian:bookworm-slim\nCOPY VERSION /opt/VERSION\nCOPY local.txt /opt/\n")
    before = (env / "Dockerfile").read_text()
    first = stage(env, "Dockerfile", repo, tmp_path / "contexts", "t")
    again = stage(env, "Dockerfile", repo, tmp_path / "contexts", "t")
    assert again == first and sorted(p.name for p in (tmp_path / "contexts").iterdir()) == [first.folder.name]
    assert (first.folder / "_deps" / "VERSION").read_text() == "v1\n"
    assert (first.folder / "local.txt").is_file() and first.sources == ("VERSION",)
    assert (env / "Dockerfile").read_text() == before and not (env / "_deps").exists()
    (repo / "VERSION").write_text("v2\n")
    changed = stage(env, "Dockerfile", repo, tmp_path / "contexts", "t")
    assert changed.digest != first.digest and (changed.folder / "_deps" / "VERSION").read_text() == "v2\n"


def test_two_sources_that_would_share_a_name_are_refused(repo, tmp_path):
    (repo / "other" / "claw-gmail").mkdir(parents=True)
    env = _dockerfile(repo, "FROM x\nCOPY packages/claw-gmail /a\nCOPY other/claw-gmail /b\n")
    with pytest.raises(ConfigError, match="copies two sources named claw-gmail"):
        plan(env, "Dockerfile", repo)
