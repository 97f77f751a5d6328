"""Older spellings old scripts still call (``bench eval create``, ``bench hub env …``,
``bench environment …``, ``bench continue``/``continue-batch``): hidden from ``--help``, one deprecation line on stderr, and otherwise
exactly what the command they alias prints and exits with on the same input."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.registry_repos import entry, task_repo, write_registry
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task


def _without_docker(tmp_path: Path) -> dict[str, str]:
    """No Docker-API engine answers, and the local backend's state folder holds one stray sandbox."""
    (tmp_path / "cache" / "local" / "sandboxes" / "stray-0000abcd").mkdir(parents=True)
    return {"BENCHFLOW_CACHE": str(tmp_path / "cache"), "DOCKER_HOST": "unix:///nonexistent/bf-alias.sock",
            "BENCHFLOW_REMOTE_DOCKER_HOST": "", "BENCHFLOW_PODMAN_HOST": ""}


def _registry(tmp_path: Path) -> Path:
    alpha, sha = task_repo(tmp_path / "repos", "alpha", ["a1", "a2"])
    return write_registry(tmp_path / "registry.json", [entry(alpha, sha, "alpha", "1.0", ["a1", "a2"])])


def _tasks(tmp_path: Path) -> Path:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    return tmp_path / "tasks"


# (alias, target, the rest of the command line given to both, needs the registry / tasks / no engine)
CASES = [
    (["eval", "create"], ["eval", "run"], ["{tasks}", "--dry-run", "--jobs-dir", "{jobs}"], "Deprecated; use bench eval run."),
    (["eval", "create"], ["eval", "run"], ["{missing}", "--dry-run"], "Deprecated; use bench eval run."),
    (["hub", "env", "list"], ["hub", "list"], ["--registry", "{registry}"], "Deprecated; use bench hub list."),
    (["hub", "env", "show"], ["hub", "show"], ["alpha@1.0", "--registry", "{registry}"], "Deprecated; use bench hub show."),
    (["hub", "env", "inspect"], ["hub", "inspect"], ["alpha@1.0", "--registry", "{registry}", "--path", "a1/oracle/solve.sh"],
     "Deprecated; use bench hub inspect."),
    (["hub", "env", "inspect"], ["hub", "inspect"], ["alpha"], "Deprecated; use bench hub inspect."),
    (["environment", "show"], ["hub", "show"], ["alpha@1.0", "--registry", "{registry}", "--json"],
     "Deprecated; use bench hub show."),
    (["environment", "inspect"], ["hub", "inspect"], ["alpha@1.0", "--registry", "{registry}", "--path", "a2/task.md"],
     "Deprecated; use bench hub inspect."),
    (["environment", "list"], ["sandbox", "list"], ["--json"],
     "Deprecated; use bench sandbox list (local) or bench hub list (hosted)."),
    (["environment", "cleanup"], ["sandbox", "cleanup"], ["--dry-run", "--max-age", "0"],
     "Deprecated; use bench sandbox cleanup."),
    (["environment", "create"], ["sandbox", "create"], ["{tasks}/hello", "--sandbox", "moon"],
     "Deprecated; use bench sandbox create."),
    (["environment", "cleanup"], ["sandbox", "cleanup"], ["--max-age", "-1"], "Deprecated; use bench sandbox cleanup."),
    (["continue"], ["eval", "continue"], ["{missing}"], "Deprecated; use bench eval continue."),
    (["continue"], ["eval", "continue"], ["{tasks}", "--proxy-mode", "sandbox"], "Deprecated; use bench eval continue."),
    (["continue-batch"], ["eval", "continue-batch"], ["{tasks}"], "Deprecated; use bench eval continue-batch."),
]


@pytest.mark.parametrize("alias, target, rest, notice", CASES, ids=lambda v: "-".join(v) if isinstance(v, list) else None)
def test_an_alias_prints_its_notice_and_otherwise_what_its_target_does(tmp_path, alias, target, rest, notice):
    values = {"tasks": _tasks(tmp_path), "jobs": tmp_path / "jobs", "missing": tmp_path / "nope",
              "registry": _registry(tmp_path)}
    args = [part.format(**values) for part in rest]
    env = _without_docker(tmp_path)
    expected = run_bench(*target, *args, env=env)
    got = run_bench(*alias, *args, env=env)
    assert got.returncode == expected.returncode
    assert got.stdout == expected.stdout
    first, _, after = got.stderr.partition("\n")
    assert first == f"bench {' '.join(alias)}: {notice}"
    # a usage error names the command as it was typed; the rest is the target's
    assert after == expected.stderr.replace(f"bench {' '.join(target)}", f"bench {' '.join(alias)}")


def test_eval_create_runs_the_same_plan_as_eval_run(tmp_path):
    tasks = _tasks(tmp_path)
    done = run_bench("eval", "create", str(tasks), "--dry-run", "--jobs-dir", str(tmp_path / "jobs"))
    assert done.returncode == 0, done.stderr
    assert '"kind": "benchflow.plan"' in done.stdout and '"hello"' in done.stdout


@pytest.mark.parametrize("group, hidden", [([], "environment"), (["eval"], "create"), (["hub"], "env"),
                                           ([], "continue"), ([], "continue-batch"), (["eval"], "continue-batch")])
def test_aliases_are_left_out_of_help(group, hidden):
    shown = run_bench(*group, "--help")
    assert shown.returncode == 0, shown.stderr
    listed = {line.strip("│ ").split(" ")[0] for line in shown.stdout.splitlines()}
    assert hidden not in listed
    assert "bench" not in shown.stderr  # listing never prints an alias's notice


def test_an_alias_prints_its_own_help_after_its_notice():
    done = run_bench("environment", "create", "--help")
    assert done.returncode == 0
    assert done.stderr == "bench environment create: Deprecated; use bench sandbox create.\n"
    assert "Deprecated; use bench sandbox create." in done.stdout and "TASK_DIR" in done.stdout.upper()
    group = run_bench("hub", "env", "--help")
    assert group.returncode == 0 and "Alias of bench hub" in group.stdout
    assert {"list", "show", "inspect"} <= {line.strip("│ ").split(" ")[0] for line in group.stdout.splitlines()}
