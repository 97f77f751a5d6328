"""A cancelled run (Ctrl-C, SIGTERM: the job's task is cancelled) leaves no sandbox, whenever it comes.

The real ``docker`` backend is wrapped so that the job is cancelled exactly while one step of a
trial's life is in flight: the image build, the container create (engine call in progress), the
start (engine call in progress), the uploads, an exec (agent install / agent run), or as soon as a
phase event fires. Afterwards no container carrying the job's label may exist, and the trial is
unfinished (no result.json), so a rerun runs it again.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import docker
import pytest

import benchflow.sandbox
from benchflow.jobs.api import run_async
from benchflow.jobs.public import make_spec
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

pytestmark = pytest.mark.docker

# (kind, where): "call" cancels while that sandbox call is in flight, "phase" when the phase event fires.
# "twice" cancels while the call is in flight and again while the trial cleans up (SIGTERM sent twice).
POINTS = [("call", "build"), ("call", "_create_blocking"), ("call", "_start_blocking"), ("call", "put_many"),
          ("call", "exec"), ("twice", "_create_blocking"), ("twice", "_start_blocking"), ("twice", "put_many"),
          ("phase", "build"), ("phase", "start"), ("phase", "install"), ("phase", "agent"), ("phase", "verifier")]


class CancellingBackend:
    """The real backend, with the sandboxes it makes cancelling the job at ``where`` (``again``: a second
    cancellation a few turns of the event loop later, while the first one is being handled)."""

    def __init__(self, inner, where: str | None, cancel, again) -> None:
        self.inner, self.where, self.cancel, self.again = inner, where, cancel, again

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def create(self, spec, **kwargs):
        box = self.inner.create(spec, **kwargs)
        if self.where is None:
            return box
        real = getattr(box, self.where)
        if asyncio.iscoroutinefunction(real):
            async def cancelling(*args, **kw):
                self.cancel()
                later(asyncio.get_running_loop(), self.again)
                return await real(*args, **kw)
        else:  # a blocking engine call run in a worker thread: cancel while it is in progress
            loop = asyncio.get_running_loop()

            def cancelling(*args, **kw):
                loop.call_soon_threadsafe(self.cancel)
                loop.call_soon_threadsafe(later, loop, self.again)
                return real(*args, **kw)
        setattr(box, self.where, cancelling)
        return box


def later(loop, fn, turns: int = 3) -> None:
    """Run ``fn`` after ``turns`` more turns of the event loop (once the cancelled trial is handling it)."""
    if turns == 0:
        fn()
    else:
        loop.call_soon(later, loop, fn, turns - 1)


def labelled_containers(job_dir: Path) -> list[str]:
    client = docker.from_env()
    found = client.containers.list(all=True, sparse=True, filters={"label": f"benchflow.job={job_dir.resolve()}"})
    return [c.id for c in found]


@pytest.mark.parametrize(("kind", "where"), POINTS, ids=[f"{k}-{w}" for k, w in POINTS])
async def test_cancelling_at_any_point_leaves_no_sandbox(tmp_path, monkeypatch, kind, where):
    # a RUN step unique to this test, so that the build really runs
    dockerfile = f"FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo {uuid.uuid4().hex} > /build-id\n"
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO, dockerfile=dockerfile)
    jobs = tmp_path / "jobs"
    job: asyncio.Task | None = None
    fired: list[str] = []
    started: dict[str, Path] = {}

    def cancel() -> None:
        if not fired:
            fired.append(where)
            job.cancel()

    def again() -> None:
        if kind == "twice" and not job.done():
            job.cancel()

    real_get = benchflow.sandbox.get_backend

    def get_backend(name):
        backend = real_get(name)
        return CancellingBackend(backend, None if kind == "phase" else where, cancel, again) if name == "docker" else backend

    monkeypatch.setattr(benchflow.sandbox, "get_backend", get_backend)

    def on_event(event: dict) -> None:
        if event["type"] == "job_started":
            started["job"] = Path(event["job_dir"])
        if kind == "phase" and event["type"] == "phase" and event["phase"] == where:
            cancel()

    spec = make_spec(str(tmp_path / "tasks"), agent="oracle", sandbox="docker", jobs_dir=str(jobs))
    job = asyncio.create_task(run_async(spec, on_event))
    with pytest.raises(asyncio.CancelledError):
        await job
    assert fired == [where], "the cancellation point was never reached"
    assert labelled_containers(started["job"]) == []
    assert not list(jobs.rglob("result.json"))  # unfinished: a rerun runs it again
