"""What ``bench run`` loads before its first container: only what starts a trial (issue 21, imports)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchflow.cli.app import ROOT, load
from tests.conftest import ROOT as REPO
from tests.fresh_python import python_prints
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

RUN_ARGS = ["-s", "docker", "--jobs-dir", "jobs", "--fresh", "-q"]


def _after_planning(tmp_path, then: str) -> str:
    """What ``then`` prints in a fresh interpreter that has imported the run path, loaded a task and
    made a RunSpec (``task``, ``spec``), as ``bench run`` does before its first container."""
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    return python_prints("import sys, tokenize\n"
                         "import benchflow.jobs.api\n"
                         "from benchflow.jobs.spec import RunSpec\n"
                         "from benchflow.tasks import load_task\n"
                         f"task = load_task({str(tmp_path / 'tasks' / 'hello')!r})\n"
                         f"spec = RunSpec(targets=[{str(tmp_path / 'tasks')!r}])\n" + then)


def test_the_engine_and_a_local_task_load_without_the_verifier_checker_fetchers_or_result_models(tmp_path):
    assert _after_planning(tmp_path, (
        "from benchflow.datasets import resolve_source\n"
        "assert resolve_source(spec) is None\n"
        "print(sorted(m for m in ('benchflow.verify', 'benchflow.tasks.check', 'benchflow.tasks.verifier_doc',\n"
        "                         'benchflow.datasets.repo_targets', 'benchflow.datasets.resolve',\n"
        "                         'benchflow.records.trial', 'benchflow.records.review', 'benchflow.records.steps')\n"
        "             if m in sys.modules))")) == "[]"


def test_planning_a_run_reads_no_builtin_signature(tmp_path):
    """A pydantic ``default_factory=list`` on a model built before the first container makes pydantic
    read ``list``'s signature, which compiles tokenize's patterns (~2 ms); plain ``[]`` defaults do not."""
    assert _after_planning(tmp_path, (
        "from benchflow.jobs.plan import RunCard\n"
        "from benchflow.records import TrialConfig\n"
        "TrialConfig(task_name=task.name)\n"
        "class Plan:\n"
        "    sandbox, tasks = 'docker', [task]\n"
        "Plan.spec = spec\n"
        "RunCard().document(Plan())\n"
        "print(tokenize._compile.cache_info().currsize)")) == "0"


def test_every_name_of_the_tasks_package_is_there():
    from benchflow import tasks

    for name in tasks.__all__:
        assert getattr(tasks, name) is not None
    with pytest.raises(AttributeError):
        tasks.no_such_name  # noqa: B018


def test_every_name_of_the_records_package_is_there():
    from benchflow import records

    for name in records.__all__:
        assert getattr(records, name) is not None
    with pytest.raises(AttributeError):
        records.no_such_name  # noqa: B018


def _parse(args: list[str], *, typer_coercers: bool = False):
    command = load(ROOT["run"], "run")
    if typer_coercers:  # undo the deferral: Typer builds every coercer, as it does by itself
        for param in command.params:
            if type(getattr(param, "_runtime_param", None)).__name__ == "_UntilGiven":
                param._runtime_param = None
    return command, command.make_context("run", args)


@pytest.mark.parametrize("args", [
    [],
    ["-j", "3", "--timeout-multiplier", "2.5", "-i", "a*", "-i", "b", "--agent-env", "K=V", "--checkpoint-keep", "2",
     "--no-task-skills", "-a", "nop", "--max-cost-usd", "1.5", "--keep-sandbox", "always", *RUN_ARGS],
])
def test_options_get_the_values_typer_gives_them(args, tmp_path):
    _, deferred = _parse([str(tmp_path), *args])
    _, built = _parse([str(tmp_path), *args], typer_coercers=True)
    assert deferred.params == built.params
    assert deferred.params["targets"] == [str(tmp_path)] and deferred.params["model"] is None


def test_an_option_left_out_gets_no_coercer(tmp_path):
    command, ctx = _parse([str(tmp_path), "-j", "3", *RUN_ARGS])
    assert ctx.params["concurrency"] == 3 and ctx.params["exclude"] == ()
    if hasattr(command.params[0], "get_runtime_param"):  # a Typer that builds a coercer per parameter
        unbuilt = [p.name for p in command.params if type(p._runtime_param).__name__ == "_UntilGiven"]
        assert "model" in unbuilt and "exclude" in unbuilt and "concurrency" not in unbuilt


@pytest.mark.parametrize(("args", "message"), [
    (["-j", "abc"], "Input should be a valid integer"),
    (["--checkpoint-keep", "0"], "greater than or equal to 1"),
    (["--timeout-multiplier", "x"], "Input should be a valid number"),
])
def test_a_bad_value_is_refused_with_typers_message(args, message):
    done = subprocess.run([sys.executable, "-m", "benchflow.cli", "run", ".", *args, "--dry-run"],
                          capture_output=True, text=True, cwd=REPO, env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
                          check=False)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_what_a_trial_needs_after_its_start_is_imported_ahead_and_not_before():
    code = ("import asyncio, sys\n"
            "import benchflow.jobs.api\n"
            "from benchflow.jobs import ahead\n"
            "before = [m for m in ahead.AFTER_START if m in sys.modules]\n"
            "ahead.begin()\n"
            "asyncio.run(ahead.ready())\n"
            "print(before, [m for m in ahead.AFTER_START if m not in sys.modules])")
    assert python_prints(code) == "[] []"
