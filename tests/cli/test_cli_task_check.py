"""`bench tasks check`, `bench check`, `bench tasks digest`, `bench tasks overlap` run as a user would."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tasks" / "hello-world"
FIXTURES = ROOT / "tests" / "fixtures" / "tasks"

GOOD_FRONTMATTER = "agent: {timeout_sec: 120.0}"


def make_task(tmp_path: Path, name: str = "hello") -> Path:
    dst = tmp_path / "tasks" / name
    shutil.copytree(EXAMPLE, dst)
    return dst


def edit(task: Path, old: str, new: str) -> None:
    text = (task / "task.md").read_text()
    assert old in text
    (task / "task.md").write_text(text.replace(old, new))


def assert_no_traceback(result) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout


def test_good_task(bench):
    result = bench("tasks", "check", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["ok    hello-world",
                                          "1 task checked at level structural: 1 ok, 0 with issues"]


def test_bench_check_alias_and_legacy_task(bench):
    result = bench("check", str(FIXTURES / "legacy-hello"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok    legacy-hello\n")


@pytest.mark.parametrize("case, expected", [
    ("broken-yaml", "task.md line 9: YAML error:"),
    ("unknown-key", "task.md: unknown key 'agnet' (did you mean 'agent'?)"),
    ("negative-timeout", "task.md: 'agent.timeout_sec' input should be greater than 0 (got -5); "
                         "use a positive number of seconds"),
    ("no-frontmatter", "task.md: must start with YAML frontmatter"),
    ("environment-key", "task.md: 'environment:' is the task.toml spelling; in task.md rename it to 'sandbox:'"),
    ("missing-verifier", "verifier/: missing or empty"),
    ("no-environment", "environment/: missing; add environment/Dockerfile"),
])
def test_bad_tasks(bench, tmp_path, case, expected):
    task = make_task(tmp_path, case)
    if case == "broken-yaml":
        edit(task, "sandbox: {network_mode", "sandbox: [network_mode")
    elif case == "unknown-key":
        edit(task, "agent:", "agnet:")
    elif case == "negative-timeout":
        edit(task, GOOD_FRONTMATTER, "agent: {timeout_sec: -5}")
    elif case == "no-frontmatter":
        (task / "task.md").write_text("# Hello\n\nCreate hello.txt.\n")
    elif case == "environment-key":
        edit(task, "sandbox:", "environment:")
    elif case == "missing-verifier":
        shutil.rmtree(task / "verifier")
    elif case == "no-environment":
        shutil.rmtree(task / "environment")
    result = bench("tasks", "check", str(task))
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert_no_traceback(result)
    lines = result.stdout.splitlines()
    assert lines[0] == f"FAIL  {case}"
    assert lines[1].startswith(f"  - {expected}"), lines
    assert lines[-1] == "1 task checked at level structural: 0 ok, 1 with issues"


def test_folder_one_line_per_task_and_summary(bench, tmp_path):
    make_task(tmp_path, "a-good")
    bad = make_task(tmp_path, "b-bad")
    edit(bad, GOOD_FRONTMATTER, "agent: {timeout_sec: 0}")
    broken = make_task(tmp_path, "c-broken")
    shutil.rmtree(broken / "environment")
    result = bench("tasks", "check", str(tmp_path))  # resolves <dir>/tasks/
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "ok    a-good"
    assert lines[1].startswith("FAIL  b-bad: task.md: 'agent.timeout_sec'")
    assert lines[2].startswith("FAIL  c-broken: environment/: missing")
    assert lines[3] == "3 tasks checked at level structural: 1 ok, 2 with issues"
    assert len(lines) == 4


def test_warnings_print_but_do_not_fail(bench, tmp_path):
    task = tmp_path / "legacy"
    shutil.copytree(FIXTURES / "legacy-hello", task)
    with open(task / "task.toml", "a") as handle:
        handle.write("\n[environment.modal]\nimage = 'x'\n")
    result = bench("tasks", "check", str(task))
    assert result.returncode == 0, result.stdout
    assert "warning: legacy: task.toml: unknown key 'sandbox.modal'" in result.stderr
    assert result.stdout.startswith("ok    legacy")


def test_levels(bench):
    result = bench("tasks", "check", "--level", "schema", str(EXAMPLE))
    assert result.returncode == 0 and "at level schema" in result.stdout
    result = bench("tasks", "check", "--level", "publication-grade", str(EXAMPLE))
    assert result.returncode == 1 and "verifier/verifier.md: missing" in result.stdout
    result = bench("tasks", "check", "--level", "acceptance", str(EXAMPLE))
    assert result.returncode == 1 and "benchflow.evidence: missing" in result.stdout
    # acceptance-live and equivalence run the task: tests/integration/test_check_levels.py
    # runtime-capability without --sandbox picks one that can run the task: tests/cli/test_cli_check_plan.py
    result = bench("check", "--sandbox", "nonesuch", str(EXAMPLE))
    assert result.returncode == 2 and "unknown sandbox" in result.stderr
    assert_no_traceback(result)


def test_runtime_capability_on_the_docker_backend(bench, tmp_path):
    result = bench("check", "--level", "runtime-capability", "--sandbox", "docker", str(EXAMPLE))
    assert result.returncode == 0, (result.stdout, result.stderr)
    task = make_task(tmp_path)
    edit(task, "network_mode: no-network", "network_mode: allowlist, allowed_hosts: [pypi.org]")
    result = bench("check", "--sandbox", "docker", str(task))
    assert result.returncode == 0, result.stdout  # docker enforces allowlist (an egress proxy per trial)
    edit(task, "network_mode: allowlist, allowed_hosts: [pypi.org]", "network_mode: no-network, gpus: 1")
    result = bench("check", "--sandbox", "docker", str(task))
    assert result.returncode == 1
    assert "  - sandbox.gpus: the task asks for GPUs, which docker cannot provide" in result.stdout


def test_check_without_tasks(bench, tmp_path):
    result = bench("tasks", "check", str(tmp_path))
    assert result.returncode == 2 and "No tasks under" in result.stderr
    result = bench("check", str(tmp_path / "missing"))
    assert result.returncode == 2 and "no such file or folder" in result.stderr


def hand_digest(root: Path) -> str:
    outer = hashlib.sha256()
    for rel in ["environment/Dockerfile", "instruction.md", "task.toml"]:
        outer.update(rel.encode() + b"\x00" + hashlib.sha256((root / rel).read_bytes()).digest())
    return "sha256:" + outer.hexdigest()


def test_digest_single_and_folder(bench):
    alpha = FIXTURES / "digest" / "alpha-task"
    result = bench("tasks", "digest", str(alpha))
    assert result.returncode == 0
    assert result.stdout == hand_digest(alpha) + "\n"
    result = bench("tasks", "digest", str(FIXTURES / "digest"))
    assert result.returncode == 0
    names = [line.split(" ")[0] for line in result.stdout.splitlines()]
    assert names == ["alpha-task", "beta-task"]  # not-a-task/ is skipped
    assert result.stdout.splitlines()[0] == f"alpha-task {hand_digest(alpha)}"


def test_digest_without_tasks_exits_1(bench, tmp_path):
    result = bench("tasks", "digest", str(FIXTURES / "digest" / "not-a-task"))
    assert result.returncode == 1 and "No tasks under" in result.stderr
    result = bench("tasks", "digest", str(tmp_path / "missing"))
    assert result.returncode == 1 and "no such file or folder" in result.stderr


def test_overlap(bench, tmp_path):
    left, right = tmp_path / "left.json", tmp_path / "right.json"
    left.write_text(json.dumps({"schema_version": 1, "tasks": [{"task_id": "x", "digest": "sha256:aa"}]}))
    right.write_text(json.dumps({"schema_version": 1, "tasks": [{"task_id": "y", "digest": "sha256:aa"},
                                                                  {"task_id": "x", "digest": "sha256:bb"}]}))
    result = bench("tasks", "overlap", str(left), str(right))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["task_id_overlap"] == ["x"]
    assert report["digest_overlap"] == [{"digest": "sha256:aa", "left_task_id": "x", "right_task_id": "y"}]
    out = tmp_path / "report.json"
    result = bench("tasks", "overlap", str(left), str(right), "-o", str(out))
    assert result.returncode == 0 and "task-id overlap: 1, digest overlap: 1" in result.stdout
    assert json.loads(out.read_text()) == report
    result = bench("tasks", "overlap", str(left), str(tmp_path / "nope.json"))
    assert result.returncode == 2 and "no such file" in result.stderr
