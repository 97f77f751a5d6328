"""The apple-container backend's mapping to Apple's ``container`` CLI, without running it: what it asks the CLI
for, how it reads the CLI's JSON (both encodings of its releases), and when it is unavailable."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from benchflow.errors import CapabilityError, ConfigError, SandboxError
from benchflow.sandbox import UNSUPPORTED, SandboxSpec, get_backend, names
from benchflow.sandbox.apple_container import cli as cli
from benchflow.sandbox.apple_container import exec as ex
from benchflow.sandbox.apple_container.sandbox import SELF_SETUP, create_args, network_flag, run_args
from benchflow.sandbox.docker_setup import MAIN

OLD_SHAPE = {  # `container list --all --format json` of a 0.x release: status a string, dates Swift's
    "status": "running",
    "configuration": {"id": "bf-hello-1", "image": {"reference": "benchflow/hello:abc"},
                      "labels": {"benchflow.owned": "true", "benchflow.backend": "apple-container",
                                 "benchflow.job": "j1", "benchflow.trial": "t1"},
                      "resources": {"cpus": 1, "memoryInBytes": 2 << 30}},
    "networks": [], "startedDate": 786_000_000.5,
}
NEW_SHAPE = {  # a later release: status an object with the state, dates ISO 8601
    "configuration": {"id": "bf-hello-2", "image": {"reference": "benchflow/hello:abc"}, "labels": {}},
    "status": {"state": "stopped", "networks": [], "startedDate": "2026-11-30T10:00:00Z"},
}


def test_it_is_a_registered_backend_and_no_longer_refused_by_name():
    assert "apple-container" in names() and "apple-container" not in UNSUPPORTED
    assert get_backend("apple-container").name == "apple-container"


def test_off_macos_without_the_test_hook_it_is_unavailable_with_one_line(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv(cli.ANY_OS_ENV, raising=False)
    ok, why = get_backend("apple-container").available()
    assert not ok and "needs macOS 26 with Apple's container CLI" in why and "\n" not in why
    assert get_backend("apple-container").leftovers() == [], "nothing to list where the CLI cannot run"


def test_without_the_cli_on_path_it_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv(cli.ANY_OS_ENV, "1")
    monkeypatch.setenv("PATH", str(tmp_path))
    ok, why = get_backend("apple-container").available()
    assert not ok and "no `container` on PATH" in why


def test_capabilities_are_what_the_cli_enforces():
    caps = get_backend("apple-container").capabilities
    assert caps.network_for("no-network") == "no-network" and caps.network_for("allowlist") == "allowlist"
    assert caps.network_for("public") == "public"
    assert not (caps.snapshots or caps.gpus or caps.multi_service or caps.host_mounts)
    assert caps.build_from_dockerfile and caps.resource_limits and caps.exec_writes_persist and caps.keep


def test_run_asks_for_no_network_whole_cpus_mib_and_labels_without_env_values():
    spec = SandboxSpec(name="t", environment_dir=None, cache_key="k", network_mode="no-network", cpus=1.5,
                       memory_mb=3000, env={"API_TOKEN": "s3cret"})
    args = run_args("bf-t-1", "benchflow/t:abc", spec, {"benchflow.job": "j", "benchflow.backend": "apple-container"})
    assert args[:3] == ["run", "--detach", "--name"] and "bf-t-1" in args
    assert args[args.index("--network") + 1] == "none"
    assert (args[args.index("--cpus") + 1], args[args.index("--memory") + 1]) == ("2", "3000M")
    assert ["--label", "benchflow.job=j"] == args[args.index("--label"):args.index("--label") + 2]
    assert ["--env", "API_TOKEN"] == args[args.index("--env"):args.index("--env") + 2]
    assert not any("s3cret" in word for word in args), "a value never goes on a command line"
    assert args[-5:-2] == ["--entrypoint", "/bin/sh", "benchflow/t:abc"]
    assert (network_flag("public"), network_flag("allowlist")) == ("default", "none")
    with pytest.raises(CapabilityError):
        network_flag("bridge")


def test_create_makes_it_unstarted_to_set_itself_up_in_the_tasks_workdir_or_the_images():
    spec = SandboxSpec(name="t", environment_dir=None, cache_key="k", network_mode="allowlist", sandbox_user="agent",
                       workdir="/srv", env={"API_TOKEN": "s3cret"})
    args = create_args("bf-t-1", "benchflow/t:abc", spec, {"benchflow.kept": "true"})
    assert args[:3] == ["create", "--name", "bf-t-1"] and "--detach" not in args
    assert args[args.index("--network") + 1] == "none"
    assert ["--label", "benchflow.kept=true"] == args[args.index("--label"):args.index("--label") + 2]
    assert not any("s3cret" in word for word in args), "a value never goes on a command line"
    assert args[-9:] == ["--entrypoint", "/bin/sh", "benchflow/t:abc", "-c", SELF_SETUP, "sh", "agent", "/srv", MAIN]
    root = create_args("bf-t-2", "img", SandboxSpec(name="t", environment_dir=None, cache_key="k", sandbox_user=None),
                       {})
    assert root[-3:] == ["", "", MAIN], "root only, and the workdir is the image's (where the process starts)"


def test_exec_goes_as_root_by_uid_or_as_a_named_user_with_env_by_name(monkeypatch, tmp_path):
    monkeypatch.setenv(cli.ANY_OS_ENV, "1")
    fake = tmp_path / "container"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    argv, env = ex.command("box", ["cat"], env={"K": "v"}, cwd="/app", interactive=True, marker="m1")
    assert argv == [str(fake), "exec", "--interactive", "--uid", "0", "--gid", "0", "--workdir", "/app",
                    "--env", "K", "--env", ex.MARKER, "box", "cat"]
    assert (env["K"], env[ex.MARKER]) == ("v", "m1")
    argv, _ = ex.command("box", ["id"], user="agent")
    assert argv[2:4] == ["--user", "agent"]
    argv, _ = ex.command("box", ["sh"], interactive=True, tty=True)
    assert argv[2:4] == ["--interactive", "--tty"]
    with pytest.raises(ValueError):
        ex.command("box", ["true"], env={"A=B": "x"})


@pytest.mark.parametrize("item, state, started", [
    (OLD_SHAPE, "running", 786_000_000.5 + cli.SWIFT_EPOCH),
    (NEW_SHAPE, "stopped", 1796032800.0),
], ids=["0.x", "later"])
def test_snapshots_are_read_in_either_release_shape(item, state, started):
    assert cli.container_id(item).startswith("bf-hello-")
    assert cli.state(item) == state and cli.started(item) == started
    assert cli.image(item) == "benchflow/hello:abc"


def test_leftovers_keep_only_its_own_labelled_containers_of_the_job(monkeypatch):
    from benchflow.sandbox.apple_container import backend as acb

    foreign = {"configuration": {"id": "other", "labels": {"benchflow.owned": "true", "benchflow.backend": "docker"}},
               "status": "running"}
    monkeypatch.setattr(cli, "executable", lambda: "container")
    monkeypatch.setattr(cli, "snapshots", lambda ids=None: [OLD_SHAPE, NEW_SHAPE, foreign])
    rows = acb.BACKEND.leftovers(owner="j1")
    assert [(row.id, row.job, row.trial, row.sandbox, row.state) for row in rows] == [
        ("bf-hello-1", "j1", "t1", "apple-container", "running")]
    assert acb.BACKEND.leftovers(owner="j2") == []


def test_a_container_is_kept_when_made_kept_or_marked_kept_here(monkeypatch, tmp_path):
    """Labels cannot change after a run, so ``--keep-sandbox`` marks the container in BenchFlow's cache;
    ``remove`` forgets the mark with the container."""
    from benchflow.sandbox.apple_container import backend as acb
    from benchflow.sandbox.apple_container import kept

    monkeypatch.setenv("BENCHFLOW_CACHE", str(tmp_path))
    made_kept = {"configuration": {"id": "bf-made-1", "labels": {**OLD_SHAPE["configuration"]["labels"],
                                                                 "benchflow.kept": "true"}}, "status": "stopped"}
    monkeypatch.setattr(cli, "executable", lambda: "container")
    monkeypatch.setattr(cli, "snapshots", lambda ids=None: [OLD_SHAPE, made_kept])
    assert [(row.id, row.kept) for row in acb.BACKEND.leftovers()] == [("bf-hello-1", False), ("bf-made-1", True)]
    kept.mark("bf-hello-1", {"benchflow.job": "j1"})
    assert [(row.id, row.kept) for row in acb.BACKEND.leftovers()] == [("bf-hello-1", True), ("bf-made-1", True)]
    monkeypatch.setattr(cli, "run", lambda args, **kw: __import__("subprocess").CompletedProcess(args, 0, b"", b""))
    assert acb.BACKEND.remove(["bf-hello-1"]) == {}
    assert kept.marked() == set()
    kept.forget("../../etc/passwd")  # an id from a user's file names no path outside the marks
    with pytest.raises(SandboxError):
        kept.mark("../x", {})


def test_owner_liveness_without_proc_uses_the_start_time_ps_prints(monkeypatch):
    """macOS has no /proc: the owner's start time comes from ``ps``, and a recycled pid is told apart."""
    import subprocess

    monkeypatch.setattr(cli.eng, "process_start_ticks", lambda pid: None)
    monkeypatch.setattr(cli.os.path, "isdir", lambda path: False if path == "/proc" else os.path.isdir(path))
    stamps = {os.getpid(): "Tue Dec  1 02:00:00 2026"}
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: subprocess.CompletedProcess(
        argv, 0, stdout=(stamps.get(int(argv[-1]), "") + "\n") if int(argv[-1]) in stamps else ""))
    marks = cli.owner_labels({"benchflow.job": "j"})
    assert marks["benchflow.pid_start"] == "Tue Dec  1 02:00:00 2026"
    assert cli.owner_alive(marks) is True
    assert cli.owner_alive(marks | {"benchflow.pid_start": "Mon Nov 30 01:00:00 2026"}) is False, "pid recycled"
    assert cli.owner_alive(marks | {"benchflow.pid": "999999999"}) is False
    assert cli.owner_alive(marks | {"benchflow.host": socket.gethostname() + "-elsewhere"}) is None


def test_a_spec_with_host_mounts_or_compose_services_is_refused(tmp_path: Path):
    backend = get_backend("apple-container")
    for extra in ({"mounts": {"/mnt/x": tmp_path}}, {"compose_file": tmp_path / "docker-compose.yaml"}):
        box = backend.create(SandboxSpec(name="t", environment_dir=None, cache_key="k", image="x", **extra))
        with pytest.raises(CapabilityError):
            box._refuse_what_it_cannot_do()


def test_an_unknown_name_still_lists_it_as_a_choice():
    with pytest.raises(ConfigError) as caught:
        get_backend("apple-containers")
    assert "apple-container" in str(caught.value)


async def test_a_non_root_exec_gets_its_users_home_looked_up_once(monkeypatch):
    from benchflow.sandbox.base import ExecResult

    calls = []

    async def fake_run(sandbox_id, cmd, *, user, env, cwd, timeout, stdin, output_cap):
        calls.append((cmd[:2], user, dict(env or {})))
        return ExecResult(0, "/home/agent\n" if cmd[:2] == ["sh", "-c"] and user is None else "")

    monkeypatch.setattr(ex, "run", fake_run)
    box = get_backend("apple-container").create(SandboxSpec(name="t", environment_dir=None, cache_key="k", image="x"))
    box._id, box._running = "box", True
    await box.exec(["true"], user="agent", env={"A": "1"})
    await box.exec(["true"], user="agent")
    await box.exec(["true"])
    await box.exec(["true"], user="agent", env={"HOME": "/elsewhere"})
    assert [(user, env) for cmd, user, env in calls if cmd == ["true"]] == [
        ("agent", {"A": "1", "HOME": "/home/agent"}), ("agent", {"HOME": "/home/agent"}), (None, {}),
        ("agent", {"HOME": "/elsewhere"})]
    assert sum(cmd == ["sh", "-c"] for cmd, _, _ in calls) == 1, "looked up once"
