"""A build whose cached layer was removed while it ran is built again, once; any other failure is not."""

from __future__ import annotations

import asyncio

import pytest

from benchflow.errors import BuildError
from benchflow.sandbox import docker_build
from benchflow.sandbox.base import SandboxSpec
from benchflow.sandbox.engine_api import ImageNotFound

# the engine's words when a reused layer was removed (Docker 20.10's classic builder)
LOST = ("review-lost: image build failed: failed to export image: failed to set parent sha256:1c8b: "
        "unknown parent image ID sha256:1c8b")


class NoImages:
    def inspect_image(self, tag: str) -> dict:
        raise ImageNotFound(404, f"No such image: {tag}")


def build_with(monkeypatch, failures: list[str]) -> tuple[list[str], object]:
    """``build_image`` where each engine build fails with the next of ``failures``, then succeeds."""
    attempts: list[str] = []

    async def fake_build(api, spec, tag, labels):
        attempts.append(tag)
        if len(attempts) <= len(failures):
            raise BuildError(failures[len(attempts) - 1])
        return docker_build.BuildOutcome(tag=tag, cached=False)

    monkeypatch.setattr(docker_build, "_build", fake_build)
    spec = SandboxSpec(name="t", environment_dir=None, cache_key="k", image=None)
    try:
        outcome = asyncio.run(docker_build.build_image(NoImages(), spec, {}))
    except BuildError as exc:
        outcome = exc
    return attempts, outcome


def test_a_removed_cached_layer_builds_again(monkeypatch):
    attempts, outcome = build_with(monkeypatch, [LOST])
    assert len(attempts) == 2
    assert isinstance(outcome, docker_build.BuildOutcome) and not outcome.cached


def test_it_is_built_again_once_only(monkeypatch):
    attempts, outcome = build_with(monkeypatch, [LOST, LOST])
    assert len(attempts) == 2 and isinstance(outcome, BuildError)


@pytest.mark.parametrize("error", ["t: image build failed: The command '/bin/sh -c make' returned a non-zero code: 2",
                                   "t: image build timed out after 600s (sandbox.build_timeout_sec)"])
def test_other_failures_are_not_built_again(monkeypatch, error):
    attempts, outcome = build_with(monkeypatch, [error])
    assert len(attempts) == 1 and isinstance(outcome, BuildError) and str(outcome) == error
