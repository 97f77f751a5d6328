"""The executor layer without a cluster: the --executor spelling, a missing Ray, the task's resources
as Ray's, the trial bundle's one-rename install (and what it refuses), the gateway link's token,
and the run slot a finishing attempt hands to the one prepared ahead."""

from __future__ import annotations

import asyncio
import io
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchflow.errors import ConfigError, InfraError
from benchflow.executors import preflight
from benchflow.executors.gateway_link import GatewayLink, LinkAddress, RemoteModelAccess
from benchflow.executors.ray_executor import bundle, resources
from benchflow.executors.trial_bundle import install, pack
from benchflow.jobs.config_file import build_run_spec

UPSTREAM_KEY = "sk-proj-UPSTREAMSECRET" + "z" * 30


@pytest.mark.parametrize("value", ["in-process", "ray", "ray://head.example:10001"])
def test_the_executor_spellings_are_accepted(value: str) -> None:
    assert build_run_spec(None, fields={"executor": value}, source="bench run").executor == value


@pytest.mark.parametrize("value", ["rayy", "ray://", "ray://head", "kubernetes"])
def test_another_spelling_is_one_line_naming_the_choices(value: str) -> None:
    with pytest.raises(ConfigError) as err:
        build_run_spec(None, fields={"executor": value}, source="bench run")
    assert str(err.value).startswith("bench run: executor: --executor") and "ray://HOST:PORT" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_run_config_names_the_executor(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("executor: ray\nconcurrency: 8\n")
    assert build_run_spec(config).executor == "ray"


def test_without_ray_installed_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'benchflow\[ray\]'"):
        preflight(build_run_spec(None, fields={"executor": "ray"}))
    preflight(build_run_spec(None))  # in-process never needs it


@pytest.mark.parametrize("fields", [{"keep_sandbox": "always"}, {"checkpoints.after": "every-prompt"},
                                    {"workers.concurrency": 2}])
def test_what_a_cluster_node_cannot_keep_is_refused_up_front(fields: dict) -> None:
    with pytest.raises(ConfigError, match="--executor ray: cannot be combined with"):
        preflight(build_run_spec(None, fields={"executor": "ray", **fields}))


def test_ray_resources_are_the_granted_sandbox() -> None:
    task = SimpleNamespace(config=SimpleNamespace(sandbox=SimpleNamespace(cpus=4, memory_mb=8192, gpus=1)))
    assert resources(task, None) == {"num_cpus": 4.0, "memory": 8192 * 2**20, "num_gpus": 1.0}
    assert bundle(resources(task, None)) == {"CPU": 4.0, "memory": 8192 * 2**20, "GPU": 1.0}
    no_gpu = SimpleNamespace(config=SimpleNamespace(sandbox=SimpleNamespace(cpus=1, memory_mb=512, gpus=0)))
    assert bundle(resources(no_gpu, None)) == {"CPU": 1.0, "memory": 512 * 2**20}  # Ray refuses a zero entry
    fit = SimpleNamespace(cpus=(4.0, 2.0), memory_mb=(8192, 4096))  # clamped to the host by the plan
    assert resources(task, fit) == {"num_cpus": 2.0, "memory": 4096 * 2**20, "num_gpus": 1.0}


def test_a_trial_folder_arrives_whole_in_one_rename(tmp_path: Path) -> None:
    made = tmp_path / "node" / "t__1"
    (made / "verifier").mkdir(parents=True)
    (made / "result.json").write_text("{}")
    (made / "verifier" / "reward.txt").write_text("1\n")
    job = tmp_path / "job"
    job.mkdir()
    install(pack(made), job / "t__1")
    assert (job / "t__1" / "verifier" / "reward.txt").read_text() == "1\n"
    assert sorted(p.name for p in job.iterdir()) == ["t__1"]  # no staging folder left
    with pytest.raises(InfraError, match="cannot move"):
        install(pack(made), job / "t__1")  # never over an existing trial
    assert sorted(p.name for p in job.iterdir()) == ["t__1"]


def _tar(*members: tarfile.TarInfo) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for member in members:
            tar.addfile(member, io.BytesIO(b"x" * member.size) if member.isfile() else None)
    return buffer.getvalue()


def _member(name: str, **fields) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    for key, value in fields.items():
        setattr(info, key, value)
    return info


@pytest.mark.parametrize("member", [
    _member("other/x", size=1),  # not the trial's folder
    _member("t__1/../../escape", size=1),
    _member("t__1/link", type=tarfile.SYMTYPE, linkname="/etc/passwd"),
])
def test_a_bundle_with_anything_outside_its_folder_is_refused(tmp_path: Path, member: tarfile.TarInfo) -> None:
    blob = _tar(_member("t__1", type=tarfile.DIRTYPE), member)
    with pytest.raises(InfraError):
        install(blob, tmp_path / "t__1")
    assert list(tmp_path.iterdir()) == []
    assert not (tmp_path.parent / "escape").exists()


async def test_the_gateway_link_answers_only_its_token_and_hands_out_the_trial_key(tmp_path: Path) -> None:
    from benchflow.jobs.model_access import ModelAccess

    spec = build_run_spec(None, fields={"agent_env": {"OPENAI_API_KEY": UPSTREAM_KEY}})
    models = await ModelAccess.start(spec)
    link = GatewayLink(models, "127.0.0.1")
    try:
        address = await link.start()
        stranger = RemoteModelAccess(LinkAddress(address.host, address.port, "not-the-token"))
        with pytest.raises(InfraError, match="wrong token"):
            await asyncio.to_thread(stranger._call, {"op": "open", "trial": "t__1", "model": None, "url": "http://x"})
        node = RemoteModelAccess(address)
        opened = await asyncio.to_thread(node._call, {"op": "open", "trial": "t__1", "model": "gpt-4o-mini",
                                                      "url": "http://127.0.0.1:5555"})
        variables = opened["variables"]
        assert variables["OPENAI_API_KEY"] != UPSTREAM_KEY and variables["OPENAI_API_KEY"]
        assert variables["OPENAI_BASE_URL"].startswith("http://127.0.0.1:5555/")
        assert UPSTREAM_KEY not in str(opened)
        assert await asyncio.to_thread(node.stop_reason, "t__1") is None
        closed = await asyncio.to_thread(node._call, {"op": "close", "trial": "t__1", "n_tool_calls": 0})
        assert closed["llm_trajectory"] == "" and "usage" in closed["info"]
        with pytest.raises(InfraError, match="bad trial name"):
            await asyncio.to_thread(node._call, {"op": "open", "trial": "../x", "model": None, "url": "http://x"})
    finally:
        await link.stop()
        await models.stop()


def test_bench_run_says_which_extra_to_install_and_exits_2(tmp_path: Path) -> None:
    from tests.conftest import run_bench
    from tests.taskgen import PASS_IF_HELLO, make_task

    shadow = tmp_path / "shadow" / "ray"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no ray here')\n")  # ahead of site-packages
    task = make_task(tmp_path / "tasks", "t", test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(task), "-s", "local", "--executor", "ray", "--jobs-dir", str(jobs),
                     env={"PYTHONPATH": str(tmp_path / "shadow")})
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith("pip install 'benchflow[ray]'")
    assert not jobs.exists()  # refused before a job folder was made
    bad = run_bench("run", str(task), "--executor", "kubernetes", "--jobs-dir", str(jobs))
    assert bad.returncode == 2 and "--executor 'kubernetes': give in-process, ray" in bad.stderr


def test_a_lost_worker_is_an_infra_failure_and_a_node_side_bug_is_not() -> None:
    import ray

    from benchflow.executors.ray_executor import _failure

    error, category, lost = _failure(ray, ray.exceptions.WorkerCrashedError())
    assert (category, lost) == ("infra_failure", True) and error.startswith("ray: WorkerCrashedError")
    assert _failure(ray, ray.exceptions.RayActorError())[1:] == ("infra_failure", True)  # the node's agent died
    bug = ray.exceptions.RayTaskError("NodeAgent.run_attempt", "Traceback …", KeyError("oops"))
    assert _failure(ray, bug)[1:] == ("other", False)  # never retried as if the infrastructure failed
    assert _failure(ray, TypeError("cannot pickle '_thread.lock' object"))[1:] == ("other", False)


@pytest.mark.parametrize("how", ["env", "client"])
def test_a_cluster_address_nothing_answers_at_is_refused_at_once(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    executor = "ray" if how == "env" else f"ray://127.0.0.1:{port}"
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    with pytest.raises(ConfigError, match=f"cannot reach the Ray cluster at .*127.0.0.1:{port}"):
        preflight(build_run_spec(None, fields={"executor": executor}))


def test_a_task_bigger_than_every_node_is_refused_before_it_waits_forever() -> None:
    from benchflow.executors import _refuse_too_big

    def planned(name: str, cpus: float, gpus: int) -> SimpleNamespace:
        sandbox = SimpleNamespace(cpus=cpus, memory_mb=1024, gpus=gpus)
        return SimpleNamespace(name=name, fit=None, task=SimpleNamespace(config=SimpleNamespace(sandbox=sandbox)))

    largest = {"CPU": 4.0, "memory": 8.0 * 2**30, "GPU": 0.0}
    _refuse_too_big(largest, [planned("fits", 4, 0)], resources)
    with pytest.raises(ConfigError, match="task gpu-task: asks for 1 gpus, more than any node of the Ray cluster"):
        _refuse_too_big(largest, [planned("fits", 1, 0), planned("gpu-task", 1, 1)], resources)


def test_a_cluster_that_refuses_the_client_is_one_line_naming_the_servers_reason():
    from benchflow.executors.ray_cluster import connect

    def refuse(**kwargs):
        raise ConnectionError("Initialization failure from server:\nTraceback (most recent call last):\n"
                              "  File \"proxier.py\", line 1\nRuntimeError: the runtime env agent is gone\n")

    fake_ray = SimpleNamespace(is_initialized=lambda: False, init=refuse, shutdown=lambda: None)
    with pytest.raises(ConfigError) as caught:
        connect(fake_ray, "ray://127.0.0.1:10001")
    assert str(caught.value) == ("--executor ray://127.0.0.1:10001: cannot join the Ray cluster (Initialization "
                                 "failure from server: RuntimeError: the runtime env agent is gone)")


def test_a_session_whose_server_died_at_its_start_is_tried_again_with_a_new_one():
    """Ray's client proxier loses a session's server at its fork now and then (ray-project/ray#63202)."""
    from benchflow.executors.ray_cluster import CONNECT_TRIES, connect

    calls: list[str] = []

    def init(**kwargs):
        calls.append("init")
        if calls.count("init") < CONNECT_TRIES:
            raise ConnectionAbortedError("Initialization failure from server:\npsutil.ZombieProcess: PID still "
                                         "exists but it's a zombie (pid=29458)")
        return SimpleNamespace(address_info={"gcs_address": "10.0.0.1:6379"})

    fake_ray = SimpleNamespace(is_initialized=lambda: False, init=init, shutdown=lambda: calls.append("shutdown"))
    assert connect(fake_ray, "ray://127.0.0.1:10001") == ("10.0.0.1:6379", True)
    assert calls == ["init", "shutdown"] * (CONNECT_TRIES - 1) + ["init"]

    other: list[str] = []

    def refuse_otherwise(**kwargs):
        other.append("init")
        raise ConnectionError("Failed to connect to the Ray Client server")

    with pytest.raises(ConfigError, match="cannot join the Ray cluster"):
        connect(SimpleNamespace(is_initialized=lambda: False, init=refuse_otherwise, shutdown=lambda: None),
                "ray://127.0.0.1:10001")
    assert other == ["init"]  # any other failure is said at once


SHAPE = (("CPU", 1.0),)


async def test_the_attempt_finding_no_run_slot_takes_over_a_verifying_attempts_slot() -> None:
    from benchflow.executors.ray_handover import Handovers, Running

    handovers, slots = Handovers(), asyncio.Semaphore(1)
    assert await handovers.run_slot(slots, SHAPE) is None  # a free slot: taken
    donor = Running("node-a", SHAPE, placement="pg-1")
    waiting = asyncio.ensure_future(handovers.run_slot(slots, SHAPE))
    await handovers.offer_when_verifying(asyncio.sleep(0), donor)  # its verifier started
    assert await waiting is donor  # paired: sent held to node-a
    outcome: asyncio.Future = asyncio.get_running_loop().create_future()  # the held attempt still runs
    taking = asyncio.ensure_future(Handovers.take_over(donor, outcome, give_back=lambda: None))
    assert handovers.end(donor)  # the donor's run phases are over: its slot and group go on
    assert await taking and slots.locked()  # no slot went back to the semaphore on the way


async def test_an_attempt_of_another_shape_waits_for_a_free_slot_and_one_of_the_shape_pairs() -> None:
    from benchflow.executors.ray_handover import Handovers, Running

    handovers, slots = Handovers(), asyncio.Semaphore(1)
    await slots.acquire()
    donor = Running("node-a", SHAPE, placement="pg-1")
    await handovers.offer_when_verifying(asyncio.sleep(0), donor)  # nobody waits yet: a donor
    bigger = asyncio.ensure_future(handovers.run_slot(slots, (("CPU", 2.0),)))
    await asyncio.sleep(0)
    assert not bigger.done() and handovers.donors == [donor]  # its group would not fit the other shape
    slots.release()
    assert await bigger is None  # the freed slot
    assert await handovers.run_slot(slots, SHAPE) is donor and handovers.donors == []


async def test_a_held_attempt_that_ends_first_leaves_the_donor_its_slot() -> None:
    from benchflow.executors.ray_handover import Handovers, Running

    handovers, slots = Handovers(), asyncio.Semaphore(1)
    await slots.acquire()
    donor = Running("node-a", SHAPE, placement="pg-1")
    await handovers.offer_when_verifying(asyncio.sleep(0), donor)
    assert await handovers.run_slot(slots, SHAPE) is donor
    outcome: asyncio.Future = asyncio.get_running_loop().create_future()
    outcome.set_result("its sandbox could not be made")
    assert not await Handovers.take_over(donor, outcome, give_back=lambda: None)
    assert not handovers.end(donor)  # the donor releases its slot and group itself
