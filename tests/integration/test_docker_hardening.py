"""Docker sandboxes keep task code in, and the verifier fence keeps the agent out of the grading.

Each test plays the agent as the sandbox user (``exec(..., user="agent")``) in a real container,
then runs the task's real verifier through :func:`benchflow.verify.run_verifier`, as a trial does.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest

from benchflow.sandbox import SandboxSpec, get_backend
from benchflow.sandbox import docker_engine as eng
from benchflow.sandbox.base import room_to_start
from benchflow.sandbox.docker.room import headroom
from benchflow.sandbox.docker_setup import (
    DEFAULT_PIDS_LIMIT,
    KEPT_CAPABILITIES,
    PIDS_LIMIT_ENV,
)
from benchflow.tasks import load_task
from benchflow.verify import run_verifier
from tests.taskgen import make_task
from tests.waiting import wait_until

pytestmark = pytest.mark.docker

BASE = "benchflow/python:3.11-bookworm"
AGENT = "agent"
CAP_BITS = {"CHOWN": 0, "DAC_OVERRIDE": 1, "FOWNER": 3, "FSETID": 4, "KILL": 5, "SETGID": 6, "SETUID": 7,
            "SETPCAP": 8, "NET_BIND_SERVICE": 10, "NET_RAW": 13, "SYS_CHROOT": 18, "SYS_ADMIN": 21,
            "SYS_PTRACE": 19, "MKNOD": 27, "AUDIT_WRITE": 29, "SETFCAP": 31}
SCORE_ANSWER = ('if [ "$(cat /app/answer.txt 2>/dev/null)" = 42 ]; then echo 1; else echo 0; fi'
                " > /logs/verifier/reward.txt")
TEST_STATE = "def test_answer():\n    assert open('/app/answer.txt').read().strip() == '42'\n"


def spec(name: str, **overrides) -> SandboxSpec:
    fields = {"name": name, "environment_dir": None, "cache_key": "prebuilt", "image": BASE, "workdir": "/app",
              "network_mode": "no-network", "cpus": 0.5, "memory_mb": 512, "sandbox_user": AGENT,
              "labels": {eng.JOB: "hardening", eng.TRIAL: f"{name}-{os.getpid()}"}}
    fields.update(overrides)
    return SandboxSpec(**fields)


@pytest.fixture
async def box():
    sandbox = get_backend("docker").create(spec("hardening"))
    await sandbox.start()
    try:
        yield sandbox
    finally:
        await sandbox.stop()


def pytest_task(root: Path, *, cleanup_conftests: bool | None = None) -> Path:
    """A task whose verifier runs pytest on a test copied into the workspace, as repository tasks do."""
    test = ("cp /verifier/test_state.py /app/ && python3 -m pytest -q -p no:cacheprovider test_state.py "
            "&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt")
    task = make_task(root, "pytest-task", test=test)
    (task / "verifier" / "test_state.py").write_text(TEST_STATE)
    if cleanup_conftests is not None:
        doc = task / "task.md"
        hardening = f"hardening: {{cleanup_conftests: {str(cleanup_conftests).lower()}}}"
        doc.write_text(doc.read_text().replace("verifier: {", f"verifier: {{{hardening}, "))
    return task


async def as_agent(sandbox, script: str) -> None:
    result = await sandbox.exec(["sh", "-c", script], user=AGENT, timeout=60)
    assert result.success, result.stderr


async def verify(sandbox, task_dir: Path, out: Path):
    out.mkdir(parents=True, exist_ok=True)
    task = load_task(task_dir)
    return await run_verifier(sandbox, task, out, workdir=sandbox.workdir, agent_user=AGENT, task_name=task.name)


LIST_AGENT_PROCESSES = ("for d in /proc/[0-9]*; do grep -q '^Uid:[[:space:]]*1000[[:space:]]' $d/status 2>/dev/null"
                        " && grep '^State:[[:space:]]*[^Z]' $d/status >/dev/null && echo ${d#/proc/}; done; exit 0")


async def agent_processes(sandbox) -> str:
    """Pids of the agent's live (not zombie) processes, one a line."""
    return (await sandbox.exec(["sh", "-c", LIST_AGENT_PROCESSES])).stdout.strip()


def cap_eff(status: str) -> int:
    line = next(row for row in status.splitlines() if row.startswith("CapEff:"))
    return int(line.split()[1], 16)


async def test_capabilities_are_the_kept_set_and_no_new_privileges(box):
    root = (await box.exec(["cat", "/proc/self/status"])).stdout
    agent = (await box.exec(["cat", "/proc/self/status"], user=AGENT)).stdout
    kept = sum(1 << CAP_BITS[name] for name in KEPT_CAPABILITIES)
    assert cap_eff(root) == kept
    for dropped in ("NET_RAW", "MKNOD", "SETFCAP", "SETPCAP", "SYS_ADMIN", "SYS_PTRACE"):
        assert not cap_eff(root) & (1 << CAP_BITS[dropped]), dropped
    assert cap_eff(agent) == 0
    assert "NoNewPrivs:\t1" in root and "NoNewPrivs:\t1" in agent
    made = await box.exec(["mknod", "/tmp/null2", "c", "1", "3"])
    assert made.return_code != 0  # MKNOD is dropped, even for root
    # a set-uid root shell left by root gives the agent nothing
    planted = await box.exec(["sh", "-c", "cp /bin/bash /tmp/rootsh && chmod 4755 /tmp/rootsh"])
    assert planted.success, planted.stderr
    gained = await box.exec(["/tmp/rootsh", "-p", "-c", "id -u"], user=AGENT)
    assert gained.stdout.strip() == "1000"
    # what ordinary root task code does still works: chown, package-manager style user switch
    ordinary = await box.exec(["sh", "-c", "touch /tmp/f && chown agent /tmp/f && su agent -s /bin/sh -c 'id -un'"])
    assert ordinary.stdout.strip() == AGENT, ordinary.stderr


async def test_pids_limit_defaults_and_follows_the_setting(monkeypatch, box):
    assert box.api.inspect_container(box.sandbox_id)["HostConfig"]["PidsLimit"] == DEFAULT_PIDS_LIMIT
    monkeypatch.setenv(PIDS_LIMIT_ENV, "300")
    other = get_backend("docker").create(spec("pids"))
    await other.start()
    try:
        assert other.api.inspect_container(other.sandbox_id)["HostConfig"]["PidsLimit"] == 300
    finally:
        await other.stop()


@pytest.mark.serial
async def test_fork_bomb_is_bounded_and_fenced_before_the_verifier(monkeypatch, tmp_path):
    limit = 200
    monkeypatch.setenv(PIDS_LIMIT_ENV, str(limit))
    sandbox = get_backend("docker").create(spec("forkbomb"))
    await sandbox.start()
    try:
        # bash, not sh: dash exits on a failed fork, so a dash bomb at the limit can die out before it is seen
        # full; bash retries the fork, as a bomb that means it does
        await as_agent(sandbox, "echo 41 > /app/answer.txt; "
                                "(bash -c 'b() { while :; do b & done; }; b' </dev/null >/dev/null 2>&1 &) ; exit 0")

        def pids() -> int:
            return sandbox.api.stats(sandbox.sandbox_id, stream=False)["pids_stats"]["current"]

        wait_until(lambda: pids() >= limit - 5, timeout=120, what="the fork bomb to fill the sandbox")
        assert pids() <= limit
        host = await asyncio.create_subprocess_exec("true")
        assert await host.wait() == 0  # the host still starts processes
        task = make_task(tmp_path / "tasks", "answer", test=SCORE_ANSWER)
        outcome = await verify(sandbox, task, tmp_path / "verifier")
        assert outcome.error is None, outcome.error
        assert outcome.rewards == {"reward": 0.0}
        assert await agent_processes(sandbox) == ""
    finally:
        await sandbox.stop()


# Forks until the table is full, then every copy sleeps: nothing retries a fork, so the count stays at the
# limit and every exec the engine starts meets a full table (the engine's runtime then often cannot start one).
HOLDER = """
import os, time
while True:
    try:
        if os.fork() == 0:
            break
    except OSError:
        break
while True:
    time.sleep(1000)
"""


@pytest.mark.serial
async def test_a_process_table_held_full_is_fenced_in_room_the_engine_gives_and_takes_back(monkeypatch, tmp_path):
    limit = 100
    monkeypatch.setenv(PIDS_LIMIT_ENV, str(limit))
    sandbox = get_backend("docker").create(spec("pidsfull"))
    await sandbox.start()
    try:
        (tmp_path / "holder.py").write_text(HOLDER)
        await sandbox.put(tmp_path / "holder.py", "/tmp/holder.py")
        await as_agent(sandbox, "echo 41 > /app/answer.txt; (python3 /tmp/holder.py </dev/null >/dev/null 2>&1 &); exit 0")

        def pids() -> int:
            return sandbox.api.stats(sandbox.sandbox_id, stream=False)["pids_stats"]["current"]

        def pids_limit() -> int:
            return sandbox.api.inspect_container(sandbox.sandbox_id)["HostConfig"]["PidsLimit"]

        wait_until(lambda: pids() >= limit - 1, timeout=120, what="the agent to fill the process table")
        async with room_to_start(sandbox):
            assert pids_limit() == limit + headroom(limit)
            for _ in range(5):  # in the room, a root exec starts every time
                assert (await sandbox.exec(["true"])).success
        assert pids_limit() == limit
        task = make_task(tmp_path / "tasks", "answer", test=SCORE_ANSWER)
        outcome = await verify(sandbox, task, tmp_path / "verifier")
        assert outcome.error is None, outcome.error
        assert outcome.rewards == {"reward": 0.0}
        assert await agent_processes(sandbox) == ""
        assert pids_limit() == limit  # the room is given back once the fence is done
    finally:
        await sandbox.stop()


# Each copy checks once, starts its successor in the background and exits: its pid changes all the time,
# so one pass over /proc that kills what it sees misses the newest copy. Once the tests are uploaded,
# it "solves" the task and writes a reward.
WRITER = """
cat > /tmp/w.sh <<'EOF'
if [ -d /verifier ]; then
  echo 42 > /app/answer.txt
  echo 1 > /logs/verifier/reward.txt
fi
sh /tmp/w.sh &
EOF
echo 41 > /app/answer.txt
for i in 1 2 3; do (sh /tmp/w.sh </dev/null >/dev/null 2>&1 &) ; done
exit 0
"""


async def test_double_forking_background_writer_does_not_survive_the_fence(box, tmp_path):
    await as_agent(box, WRITER)
    wait_until(lambda: box.api.stats(box.sandbox_id, stream=False)["pids_stats"]["current"] > 3,
               what="the writers to run")
    task = make_task(tmp_path / "tasks", "answer", test=SCORE_ANSWER)
    outcome = await verify(box, task, tmp_path / "verifier")
    assert outcome.error is None, outcome.error
    assert outcome.rewards == {"reward": 0.0}  # the honest score: the agent left 41
    assert (await box.exec(["cat", "/app/answer.txt"])).stdout.strip() == "41"
    assert await agent_processes(box) == ""
    mode = (await box.exec(["stat", "-c", "%U %a", "/logs/verifier"])).stdout.split()
    assert mode == ["root", "755"]


CONFTEST = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    item.runtest = lambda: None
"""


@pytest.mark.parametrize("cleanup", [None, False], ids=["default", "cleanup_conftests-false"])
async def test_planted_conftest_is_removed_unless_the_task_keeps_them(box, tmp_path, cleanup):
    await as_agent(box, f"echo 41 > /app/answer.txt && cat > /app/conftest.py <<'EOF'{CONFTEST}EOF")
    outcome = await verify(box, pytest_task(tmp_path / "tasks", cleanup_conftests=cleanup), tmp_path / "verifier")
    assert outcome.error is None, outcome.error
    present = (await box.exec(["test", "-e", "/app/conftest.py"])).success
    if cleanup is False:
        assert outcome.rewards == {"reward": 1.0} and present  # the task chose to trust the workspace's conftests
    else:
        assert outcome.rewards == {"reward": 0.0} and not present
        assert any("/app/conftest.py" in w for w in outcome.warnings)


async def test_planted_pytest_module_in_the_workspace_is_removed_before_the_verifier(box, tmp_path):
    fake = "open('/logs/verifier/reward.txt', 'w').write('1')\nraise SystemExit(0)\n"
    await as_agent(box, f"echo 41 > /app/answer.txt && cat > /app/pytest.py <<'EOF'\n{fake}EOF")
    task = make_task(tmp_path / "tasks", "pytest-module",
                     test="python3 -m pytest -q -p no:cacheprovider /verifier/test_state.py "
                          "&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt")
    (task / "verifier" / "test_state.py").write_text(TEST_STATE)
    outcome = await verify(box, task, tmp_path / "verifier")
    assert outcome.error is None, outcome.error
    assert outcome.rewards == {"reward": 0.0}
    assert not (await box.exec(["test", "-e", "/app/pytest.py"])).success
    assert any("shadow a module" in w and "/app/pytest.py" in w for w in outcome.warnings), outcome.warnings


async def test_a_planted_stdlib_module_is_removed_and_the_agents_own_modules_stay_importable(box, tmp_path):
    """The working folder stays on ``sys.path`` as by hand (tests import the agent's ``eigen.py`` and
    run its ``run.py``); only the agent's file named like a module pytest imports goes."""
    fake_json = "import os; os.makedirs('/logs/verifier', exist_ok=True); open('/logs/verifier/reward.txt', 'w').write('1')\n"
    await as_agent(box, "echo 41 > /app/answer.txt && printf 'def value():\\n    return 7\\n' > /app/eigen.py"
                        " && printf 'import eigen\\nprint(eigen.value())\\n' > /app/run.py"
                        f" && mkdir /app/json && cat > /app/json/__init__.py <<'EOF'\n{fake_json}EOF")
    test = ("import subprocess, sys\nfrom eigen import value\n\n"
            "def test_module():\n    assert value() == 7\n\n"
            "def test_program():\n    out = subprocess.run([sys.executable, 'run.py'], capture_output=True, text=True)\n"
            "    assert out.stdout.strip() == '7', out.stderr\n\n"
            "def test_answer():\n    assert open('/app/answer.txt').read().strip() == '42'\n")
    task = make_task(tmp_path / "tasks", "cwd-modules",
                     test="cd /app && python3 -m pytest -q -rA /verifier/test_cwd.py > /logs/verifier/out.txt 2>&1; "
                          "echo 0 > /logs/verifier/reward.txt")
    (task / "verifier" / "test_cwd.py").write_text(test)
    outcome = await verify(box, task, tmp_path / "verifier")
    assert outcome.error is None, outcome.error
    assert outcome.rewards == {"reward": 0.0}  # the planted json package did not write a 1
    report = (tmp_path / "verifier" / "out.txt").read_text()
    assert {name: state for state, name in re.findall(r"^(PASSED|FAILED) \S*::(\w+)", report, re.M)} == {
        "test_module": "PASSED", "test_program": "PASSED", "test_answer": "FAILED"}, report
    assert not (await box.exec(["test", "-e", "/app/json"])).success
    assert (await box.exec(["test", "-e", "/app/eigen.py"])).success


async def test_a_program_the_agent_put_on_a_writable_path_folder_is_removed(box, tmp_path):
    loose = await box.exec(["sh", "-c", "mkdir -p /opt/tools/bin && chmod 0777 /opt/tools/bin"])  # a careless image
    assert loose.success, loose.stderr
    fake = "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n"
    await as_agent(box, f"echo 41 > /app/answer.txt && printf '{fake}' > /opt/tools/bin/grade && chmod +x /opt/tools/bin/grade")
    task = make_task(tmp_path / "tasks", "path-program",
                     test=SCORE_ANSWER + "; command -v grade >/dev/null && grade; exit 0")
    doc = task / "task.md"
    doc.write_text(doc.read_text().replace("verifier: {", "verifier: {env: {PATH: '/opt/tools/bin:/usr/bin:/bin'}, "))
    outcome = await verify(box, task, tmp_path / "verifier")
    assert outcome.error is None, outcome.error
    assert outcome.rewards == {"reward": 0.0}
    assert any("/opt/tools/bin/grade" in w for w in outcome.warnings), outcome.warnings


async def test_startup_files_in_a_writable_python_path_folder_are_removed(box, tmp_path):
    site = "/usr/local/lib/python3.11/dist-packages"
    loose = await box.exec(["sh", "-c", f"mkdir -p {site} && chmod 0777 {site}"])  # a careless image
    assert loose.success, loose.stderr
    hook = "import os; os.makedirs('/logs/verifier', exist_ok=True); open('/logs/verifier/reward.txt', 'w').write('1')"
    await as_agent(box, f"echo 41 > /app/answer.txt && echo \"{hook}\" > {site}/zz-evil.pth")
    task = make_task(tmp_path / "tasks", "pth",
                     test=SCORE_ANSWER + "; python3 -c 'print(1)'")  # a .pth still there would run now, as root
    outcome = await verify(box, task, tmp_path / "verifier")
    assert outcome.error is None, outcome.error
    assert outcome.rewards == {"reward": 0.0}
    assert not (await box.exec(["test", "-e", f"{site}/zz-evil.pth"])).success
    assert any("zz-evil.pth" in w for w in outcome.warnings)
    # the image's own start-up file (a root-owned link in a folder the agent cannot write) stays
    assert (await box.exec(["test", "-L", "/usr/lib/python3.11/sitecustomize.py"])).success
    assert not any("/usr/lib/python3.11" in w for w in outcome.warnings)


async def test_a_non_root_verifier_user_owns_the_verifier_folder(box, tmp_path):
    await as_agent(box, "echo 42 > /app/answer.txt")
    task = make_task(tmp_path / "tasks", "as-nobody", test="id -un > /logs/verifier/whoami; " + SCORE_ANSWER)
    doc = task / "task.md"
    doc.write_text(doc.read_text().replace("verifier: {", "verifier: {user: nobody, "))
    outcome = await verify(box, task, tmp_path / "verifier")
    assert outcome.error is None, outcome.error
    assert outcome.rewards == {"reward": 1.0}
    assert (tmp_path / "verifier" / "whoami").read_text().strip() == "nobody"
    assert (await box.exec(["stat", "-c", "%U %a", "/logs/verifier"])).stdout.split() == ["nobody", "755"]


async def test_a_verifier_run_in_the_fences_exec_keeps_its_own_exit_code_and_timeout(box, tmp_path):
    await as_agent(box, "echo 42 > /app/answer.txt; (sleep 300 </dev/null >/dev/null 2>&1 &); exit 0")
    task = make_task(tmp_path / "tasks", "rc3", test=SCORE_ANSWER + "; exit 3")  # 3: the fence's own failure code
    outcome = await verify(box, task, tmp_path / "rc3")
    assert outcome.error is None, outcome.error
    assert outcome.rewards == {"reward": 1.0} and outcome.return_code == 3 and outcome.attempts == 1
    assert any("rc=3" in w for w in outcome.warnings)
    assert await agent_processes(box) == ""  # fenced before the verifier ran
    hang = make_task(tmp_path / "tasks", "hang", test="echo started; sleep 60", verifier_timeout=1)
    outcome = await verify(box, hang, tmp_path / "hang")
    assert outcome.error_category == "verifier_timeout", outcome.error
    assert outcome.attempts == 1  # it wrote output: not wedged, not run again


LATE = "/tmp/written-after-the-timeout"


async def test_a_verifier_run_in_the_fences_exec_is_stopped_at_its_own_timeout(box, tmp_path):
    # 2 s of timeout; the marker comes 3 s after it (well inside the fence's own 300 s): only a
    # deadline armed when the fence is done, not one that covers the fence too, stops it first
    await as_agent(box, "echo 42 > /app/answer.txt")
    late = make_task(tmp_path / "tasks", "late", verifier_timeout=2,
                     test=f"echo started; sleep 5; touch {LATE} /logs/verifier/late; sleep 600")
    outcome = await verify(box, late, tmp_path / "late")
    assert outcome.error_category == "verifier_timeout", outcome.error
    assert outcome.error == "verifier timed out after 2s"  # as a verifier in an exec of its own says it
    assert outcome.timeout_info["timeout_budget_sec"] == 2.0 and outcome.attempts == 1
    assert not (tmp_path / "late" / "late").exists()
    # nothing of it is left to write the marker later: its whole process tree is gone
    left = await box.exec(["sh", "-c", f"test -e {LATE} && echo written; grep -lx sleep /proc/[0-9]*/comm; exit 0"])
    assert left.stdout.strip() == "", left.stdout
