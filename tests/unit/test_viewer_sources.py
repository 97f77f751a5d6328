"""What ``bench view`` makes of ROLLOUT_DIR, and the server helpers around it (port, browser)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from fixtures.viewer_jobs import Jobs, make_jobs

from benchflow.errors import UserError
from benchflow.viewer.server import bind_port, display_available
from benchflow.viewer.sources import resolve_source


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Jobs:
    made = make_jobs(tmp_path_factory.mktemp("viewer"))
    # A jobs folder keeps a copy of its latest job's summary.json; it must still read as a folder of jobs.
    (made.root / "summary.json").write_text(json.dumps({"job_name": "job-b", "total": 3}))
    return made


def test_kinds(jobs: Jobs, tmp_path: Path) -> None:
    hello = jobs.trial(jobs.a, "hello-world")
    session = tmp_path / "session"
    (session / "trajectory").mkdir(parents=True)
    nested = tmp_path / "runs"
    nested.mkdir()
    (nested / "claude").symlink_to(jobs.root, target_is_directory=True)
    expected = {jobs.root: "jobs", jobs.a: "job", hello: "trial", session: "trial",
                hello / "trajectory" / "llm_trajectory.jsonl": "trajectory", nested: "jobs"}
    for target, kind in expected.items():
        assert resolve_source(str(target)).kind == kind, target
    linked = resolve_source(str(nested))
    assert [linked.ident(job) for job in linked.jobs()] == ["claude/job-a", "claude/job-b"]
    hello_id = "claude/job-a/" + hello.name
    assert linked.resolve(hello_id).resolve() == hello.resolve()  # served: inside a listed job


def test_ids_round_trip_inside_the_folder(jobs: Jobs) -> None:
    source = resolve_source(str(jobs.root))
    hello = jobs.trial(jobs.a, "hello-world")
    ident = source.ident(hello)
    assert ident == "job-a/" + hello.name and source.resolve(ident).resolve() == hello.resolve()
    assert source.ident(jobs.root) == "." and source.resolve(".").resolve() == jobs.root.resolve()
    for bad in ("..", "../jobs", "/tmp", "job-a/../../x", "missing"):
        with pytest.raises(LookupError):
            source.resolve(bad)


@pytest.mark.parametrize("make", [
    lambda p: str(p / "missing"),
    lambda p: "hf://org/dataset/sub",
    lambda p: (p / "a.json").write_text("{}") and str(p / "a.json"),
    lambda p: str(p),
])
def test_bad_targets_are_user_errors(tmp_path: Path, make) -> None:
    with pytest.raises(UserError, match="ROLLOUT_DIR"):
        resolve_source(make(tmp_path))


def test_bind_port_takes_the_next_free_port_and_checks_range() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        busy = taken.getsockname()[1]
        sock = bind_port(busy)
        try:
            assert sock.getsockname()[1] not in (busy, 0)
        finally:
            sock.close()
    for bad in (-1, 70000):
        with pytest.raises(UserError, match="--port"):
            bind_port(bad)


def test_browser_opens_only_with_a_display_outside_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BENCHFLOW_NO_BROWSER", "CI", "PYTEST_CURRENT_TEST", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    assert display_available() is False
    monkeypatch.setenv("DISPLAY", ":0")
    assert display_available() is True
    for blocker in ("BENCHFLOW_NO_BROWSER", "CI", "PYTEST_CURRENT_TEST"):
        monkeypatch.setenv(blocker, "1")
        assert display_available() is False
        monkeypatch.delenv(blocker)
