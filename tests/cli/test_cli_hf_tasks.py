"""``bench tasks snapshot-hf | list-sources | generate`` and ``bench view hf://`` against the HF Hub double.

Every request goes to :class:`tests.doubles.hf_hub_double.HfHubDouble` on
loopback (``HF_ENDPOINT``); nothing reaches the internet.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.doubles.hf_hub_double import HfHubDouble

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tasks" / "hello-world"
SECRET = "sk-ant-api03-" + "Z" * 40


def tree(folder: Path, prefix: str) -> dict[str, bytes]:
    return {f"{prefix}/{p.relative_to(folder).as_posix()}": p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HfHubDouble]:
    with HfHubDouble() as double:
        env = {"HF_ENDPOINT": double.url, "HF_TOKEN": double.token, "HF_HOME": str(tmp_path / "hf-home"),
               "BENCHFLOW_CACHE": str(tmp_path / "bf-cache")}
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        double.env = env  # type: ignore[attr-defined]
        yield double


def seed_tasks(hub: HfHubDouble) -> str:
    files = {**tree(EXAMPLE, "tasks/hello-world"), **tree(EXAMPLE, "tasks/second"),
             "tasks/notes/README.md": b"not a task", "README.md": b"# tasks\n"}
    return hub.add_repo("org/tasks", files)


def test_snapshot_writes_tasks_with_provenance_and_digests(bench, hub: HfHubDouble, tmp_path: Path) -> None:
    commit = seed_tasks(hub)
    out = tmp_path / "snap"
    done = bench("tasks", "snapshot-hf", "org/tasks", str(out), "--path", "tasks",
                 "--cache-dir", str(tmp_path / "cache"), env=hub.env)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["hello-world", "provenance.json", "second"]
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["repo_id"] == "org/tasks" and provenance["commit"] == commit
    digests = bench("tasks", "digest", str(out))
    expected = dict(line.split() for line in digests.stdout.splitlines())
    assert {t["name"]: t["digest"] for t in provenance["tasks"]} == expected
    hello = next(t for t in provenance["tasks"] if t["name"] == "hello-world")
    assert {f["path"] for f in hello["files"]} == {p.relative_to(EXAMPLE).as_posix()
                                                   for p in EXAMPLE.rglob("*") if p.is_file()}
    source = json.loads((out / "hello-world" / ".benchflow-source.json").read_text())
    assert source["commit"] == commit and source["digest"] == expected["hello-world"]
    assert f"hello-world\t{expected['hello-world']}" in done.stdout
    # the task is unchanged by the trip: same digest as the example it came from
    assert expected["hello-world"] == bench("tasks", "digest", str(EXAMPLE)).stdout.strip()


def test_snapshot_refuses_to_overwrite_and_selects_tasks(bench, hub: HfHubDouble, tmp_path: Path) -> None:
    seed_tasks(hub)
    out = tmp_path / "snap"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    refused = bench("tasks", "snapshot-hf", "org/tasks", str(out), "--path", "tasks", env=hub.env)
    assert refused.returncode == 2 and "--overwrite" in refused.stderr
    assert (out / "keep.txt").read_text() == "mine"
    done = bench("tasks", "snapshot-hf", "org/tasks", str(out), "--path", "tasks", "--overwrite",
                 "--include-task", "second", env=hub.env)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["provenance.json", "second"]
    unknown = bench("tasks", "snapshot-hf", "org/tasks", str(tmp_path / "x"), "--path", "tasks",
                    "--include-task", "nope", env=hub.env)
    assert unknown.returncode == 2 and "nope" in unknown.stderr and "second" in unknown.stderr


@pytest.mark.parametrize("args, needle", [
    (["not-a-repo-id"], "org/name"),
    (["org/missing"], "not found"),
    (["org/tasks", "--ref", "v9"], "revision"),
    (["org/tasks", "--path", "../etc"], "--path"),
])
def test_snapshot_bad_input_is_one_line_exit_2(bench, hub: HfHubDouble, tmp_path: Path, args: list[str],
                                               needle: str) -> None:
    seed_tasks(hub)
    done = bench("tasks", "snapshot-hf", args[0], str(tmp_path / "out"), *args[1:], env=hub.env)
    assert done.returncode == 2, done.stderr
    assert needle in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_private_dataset_needs_the_token_from_the_environment(bench, hub: HfHubDouble, tmp_path: Path) -> None:
    hub.add_repo("org/private", tree(EXAMPLE, "hello-world"), private=True)
    anonymous = bench("tasks", "snapshot-hf", "org/private", str(tmp_path / "a"), env={**hub.env, "HF_TOKEN": ""})
    assert anonymous.returncode == 2 and "HF_TOKEN" in anonymous.stderr
    done = bench("tasks", "snapshot-hf", "org/private", str(tmp_path / "b"), env=hub.env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "b" / "hello-world" / "task.md").is_file()


def test_list_sources_piped_is_one_tab_separated_line_each(bench) -> None:
    done = bench("tasks", "list-sources")
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert done.returncode == 0 and rows and all(len(row) == 4 for row in rows)
    assert "opentraces-test" in [row[0] for row in rows]


def session_lines(secret: str = SECRET) -> str:
    events = [
        {"type": "user", "cwd": "/home/u/proj", "sessionId": "s1",
         "message": {"role": "user", "content": f"Write greet.py that prints hello. Use key {secret}"}},
        {"type": "assistant", "cwd": "/home/u/proj", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Writing it."},
            {"type": "tool_use", "id": "t1", "name": "Write",
             "input": {"file_path": "/home/u/proj/src/greet.py", "content": f"print('hello')  # {secret}\n"}},
            {"type": "tool_use", "id": "t2", "name": "Write", "input": {"file_path": "/etc/cron.d/x", "content": "x"}},
        ]}},
    ]
    return "".join(json.dumps(e) + "\n" for e in events)


def test_generate_from_a_session_file_makes_checked_redacted_tasks(bench, tmp_path: Path) -> None:
    session = tmp_path / "session.jsonl"
    session.write_text(session_lines())
    preview = bench("tasks", "generate", "--from-file", str(session), "--dry-run", "--output", str(tmp_path / "t"))
    assert preview.returncode == 0 and "claude-code" in preview.stdout and SECRET not in preview.stdout
    assert not (tmp_path / "t").exists()
    done = bench("tasks", "generate", "--from-file", str(session), "--output", str(tmp_path / "t"),
                 "--author", "tester")
    assert done.returncode == 0, done.stderr
    [task] = list((tmp_path / "t").iterdir())
    text = "".join(p.read_text() for p in task.rglob("*") if p.is_file())
    assert SECRET not in text and "author_name: tester" in text
    assert "src/greet.py" in (task / "verifier" / "test_outputs.py").read_text()
    assert "cron" not in text  # a write outside the session's folder is not part of the task
    checked = bench("tasks", "check", str(task))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    again = bench("tasks", "generate", "--from-file", str(session), "--output", str(tmp_path / "t"))
    assert again.returncode == 0 and f"Kept {task} (already generated)" in again.stdout
    nothing = tmp_path / "nothing.jsonl"
    nothing.write_text(session_lines().replace('"name": "Write"', '"name": "Read"'))
    unusable = bench("tasks", "generate", "--from-file", str(nothing), "--output", str(tmp_path / "t2"))
    assert unusable.returncode == 1 and "wrote no files" in unusable.stderr


def test_generate_from_hf_filters_by_outcome_and_needs_one_source(bench, hub: HfHubDouble, tmp_path: Path) -> None:
    def row(i: int, outcome: str) -> str:
        return json.dumps({"trace_id": f"tr-{i}", "outcome": outcome, "steps": [
            {"role": "user", "content": f"Create out{i}.txt containing {i}"},
            {"role": "assistant", "content": "ok", "tool_calls": [
                {"name": "write_file", "arguments": json.dumps({"path": f"out{i}.txt", "content": f"{i}\n"})}]}]})

    rows = "\n".join(row(i, "success" if i % 2 else "failure") for i in range(6)) + "\n"
    hub.add_repo("opentraces/opentraces-test", {"data/train.jsonl": rows, "data/test.jsonl": row(99, "success")})
    done = bench("tasks", "generate", "--from-hf", "opentraces-test", "--outcome", "success",
                 "--output", str(tmp_path / "t"), env=hub.env)
    assert done.returncode == 0, done.stderr
    tasks = sorted((tmp_path / "t").iterdir())
    assert len(tasks) == 3
    assert bench("tasks", "check", str(tmp_path / "t")).returncode == 0
    none = bench("tasks", "generate", "--output", str(tmp_path / "t"))
    both = bench("tasks", "generate", "--from-local", "--from-hf", "x/y")
    assert none.returncode == both.returncode == 2 and "exactly one" in none.stderr


def test_view_hf_dataset_serves_its_jobs(hub: HfHubDouble, tmp_path: Path) -> None:
    from fixtures.viewer_jobs import make_jobs

    from benchflow.hf.view_source import fetch
    from benchflow.viewer.app import create_app
    from benchflow.viewer.sources import resolve_source

    jobs = make_jobs(tmp_path / "made")
    hub.add_repo("org/traces", {**tree(jobs.a, "runs/job-a"), "README.md": b"traces"})
    local = fetch("hf://org/traces/runs")
    source = resolve_source(str(local))
    assert source.kind == "jobs"
    api = TestClient(create_app(source), base_url="http://127.0.0.1")
    overview = api.get("/api/overview")
    assert overview.status_code == 200 and "job-a" in overview.text
    served = len(hub.requests)
    assert fetch("hf://org/traces/runs") == local  # the second view reads the local copy
    assert all(r["method"] == "GET" and "/resolve/" not in r["path"] for r in hub.requests[served:])


def test_view_hf_bad_target_is_exit_2(bench, hub: HfHubDouble) -> None:
    done = bench("view", "hf://only-org", "--port", "0", env=hub.env)
    assert done.returncode == 2 and "hf://<org>/<dataset>" in done.stderr


def test_generate_from_local_sessions_filters_by_project_and_writes_legacy(bench, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    for project in ("-home-u-proj", "-home-u-other"):
        (projects / project).mkdir(parents=True)
        (projects / project / "s1.jsonl").write_text(session_lines().replace("/home/u/proj", "/" + project[1:].replace("-", "/")))
    done = bench("tasks", "generate", "--from-local", "--projects-dir", str(projects), "--project", "u-proj",
                 "--task-format", "legacy", "--output", str(tmp_path / "t"))
    assert done.returncode == 0, done.stderr
    [task] = list((tmp_path / "t").iterdir())
    assert (task / "task.toml").is_file() and (task / "instruction.md").is_file() and not (task / "task.md").exists()
    assert bench("tasks", "check", str(task)).returncode == 0
    missing = bench("tasks", "generate", "--from-local", "--projects-dir", str(tmp_path / "none"),
                    "--output", str(tmp_path / "t2"))
    assert missing.returncode == 2 and "--projects-dir" in missing.stderr


def test_generate_reads_parquet_rows_of_the_split(bench, hub: HfHubDouble, tmp_path: Path) -> None:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([{"trace_id": "p-1", "success": True, "steps": [
        {"role": "user", "content": "Make a.txt", "tool_calls": []},
        {"role": "assistant", "content": "ok", "tool_calls": [
            {"name": "create_file", "arguments": json.dumps({"path": "a.txt", "content": "A"})}]}]}])
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    hub.add_repo("org/parquet-traces", {"data/train-00000.parquet": buffer.getvalue(), "README.md": "traces"})
    done = bench("tasks", "generate", "--from-hf", "org/parquet-traces", "--output", str(tmp_path / "t"),
                 env=hub.env)
    assert done.returncode == 0, done.stderr
    [task] = list((tmp_path / "t").iterdir())
    assert "a.txt" in (task / "task.md").read_text()
    wrong_split = bench("tasks", "generate", "--from-hf", "org/parquet-traces", "--split", "test",
                        "--output", str(tmp_path / "t2"), env=hub.env)
    assert wrong_split.returncode == 2 and "--split" in wrong_split.stderr


def test_a_repo_that_is_one_task_becomes_one_task_folder(bench, hub: HfHubDouble, tmp_path: Path) -> None:
    hub.add_repo("org/single-task", {p.relative_to(EXAMPLE).as_posix(): p.read_bytes()
                                     for p in EXAMPLE.rglob("*") if p.is_file()})
    done = bench("tasks", "snapshot-hf", "org/single-task", str(tmp_path / "out"), env=hub.env)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["provenance.json", "single-task"]
    digest = bench("tasks", "digest", str(tmp_path / "out" / "single-task")).stdout.strip()
    assert digest == bench("tasks", "digest", str(EXAMPLE)).stdout.strip()
