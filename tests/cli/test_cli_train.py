"""``bench train`` as a user types it: exit codes, stream against a job being written and a killed one,
``run sft`` against a stand-in Prime-RL checkout (tests/doubles/fake_prime_rl.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import ROOT, run_bench
from tests.fixtures.jobgen import write_job
from tests.fixtures.train_jobs import rollout
from tests.waiting import wait_until as wait_for

# A job writer standing in for `bench run`: it takes the job's lock the way the run engine does
# (jobs.job.lock_job), then writes one finished trial each time the test drops a file named go-<n>.
WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from benchflow.jobs.job import lock_job
    from benchflow.jobs.layout import JobPaths
    from tests.fixtures.jobgen import write_trial
    from tests.fixtures.train_jobs import rollout
    job = JobPaths(Path(sys.argv[1]))
    fd = lock_job(job)
    rewards = [1.0, 0.0, 1.0, 1.0]
    for n, reward in enumerate(rewards):
        while not (job.root / f"go-{{n}}").exists():
            time.sleep(0.02)
        write_trial(job.root, rollout("task-" + str(n // 2), reward, suffix=f"{{n:08x}}", capture=True))
    while not (job.root / "go-end").exists():
        time.sleep(0.02)
    if sys.argv[2] == "finish":
        (job.root / "summary.json").write_text("{{}}")
""").format(root=str(ROOT))


def _stream(job: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.Popen([sys.executable, "-m", "benchflow.cli", "train", "stream", str(job),
                             "--poll-interval", "0.05", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def _writer(tmp_path: Path, job: Path, end: str) -> subprocess.Popen[bytes]:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    return subprocess.Popen([sys.executable, str(script), str(job), end])


def test_stream_follows_a_running_job_emits_groups_and_exits_0_when_it_finishes(tmp_path: Path) -> None:
    job = tmp_path / "jobs" / "job-1"
    stream = _stream(tmp_path / "jobs", "--group-size", "2", "--withheld", str(tmp_path / "withheld.jsonl"),
                     "--timeout", "120")  # the folder does not exist yet
    writer = _writer(tmp_path, job, "finish")
    try:
        wait_for(lambda: (job / ".lock").exists(), timeout=30)
        lines: list[dict] = []
        for n in range(4):
            (job / f"go-{n}").touch()
            if n % 2:  # a group of two is complete: both come out together, with their advantage
                lines += [json.loads(stream.stdout.readline()) for _ in range(2)]
        (job / "go-end").touch()
        out, err = stream.communicate(timeout=60)
    finally:
        writer.wait(timeout=30)
        stream.kill()
    assert stream.returncode == 0, err
    assert out == ""  # every rollout came out once, when its group completed
    assert [line["kind"] for line in lines] == ["benchflow.rollout-stream.v1"] * 4
    assert [(line["task_name"], line["reward"]) for line in lines] == [
        ("task-0", 1.0), ("task-0", 0.0), ("task-1", 1.0), ("task-1", 1.0)]
    std = (0.5 ** 2 * 2) ** 0.5  # sample std of 1, 0
    assert lines[0]["advantage"] == 0.5 / (std + 1e-4) and lines[2]["advantage"] == 0.0
    assert lines[0]["calls"][0]["sampled_token_ids"] == [100, 200]  # train_jobs.conversation, call 0
    assert lines[0]["group"] == "task=task-0|agent=fake-acp|model=gpt-4o-mini|job=job-1"
    assert not (tmp_path / "withheld.jsonl").exists() and "the job finished" in err


def test_stream_of_a_killed_run_exits_1_and_withholds_the_short_group(tmp_path: Path) -> None:
    job = tmp_path / "job-2"
    writer = _writer(tmp_path, job, "never")
    wait_for(lambda: (job / ".lock").exists(), timeout=30)
    stream = _stream(job, "--group-size", "2", "--withheld", str(tmp_path / "withheld.jsonl"))
    try:
        (job / "go-0").touch()
        wait_for(lambda: any(job.glob("task-0__*/result.json")), timeout=30)
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
        out, err = stream.communicate(timeout=60)
    finally:
        stream.kill()
    assert stream.returncode == 1, err
    assert out == "" and "stopped" in err
    (held,) = [json.loads(line) for line in (tmp_path / "withheld.jsonl").read_text().splitlines()]
    assert held["withheld_reason"] == "group_short" and held["task_name"] == "task-0"


def test_stream_timeout_exits_3_and_bad_input_2(tmp_path: Path) -> None:
    done = run_bench("train", "stream", str(tmp_path / "not-yet"), "--timeout", "0.3", "--poll-interval", "0.05")
    assert done.returncode == 3 and "--timeout" in done.stderr
    done = run_bench("train", "stream", str(tmp_path), "--withheld", str(tmp_path / "w.jsonl"))
    assert done.returncode == 2 and "--group-size" in done.stderr


def test_convert_validate_and_coverage_from_the_command_line(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    write_job(jobs, "j", [rollout("a", 1.0, capture=True), rollout("b", 0.0)])
    out = tmp_path / "rows.jsonl"
    done = run_bench("train", "convert", str(jobs), "-o", str(out), "--expected-rows", "3")
    assert done.returncode == 1 and "nothing was written" in done.stderr and not out.exists()
    done = run_bench("train", "convert", str(jobs), "-o", str(out), "--format", "trl-sft")
    assert done.returncode == 0, done.stderr
    done = run_bench("train", "validate", str(out), "--format", "trl-sft", "--expected-rows", "2",
                     "--source-jobs", str(jobs))
    assert done.returncode == 0 and "OK: 2 row(s)" in done.stdout, done.stdout + done.stderr
    done = run_bench("train", "validate", str(out), "--format", "prime-sft")
    assert done.returncode == 1 and "row 1: messages: missing or empty" in done.stdout
    done = run_bench("train", "convert", str(jobs), "-o", str(out), "--format", "branch-tree")
    assert done.returncode == 2 and "no branch records" in done.stderr
    done = run_bench("train", "token-coverage", str(jobs), "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["rollouts"] == 2 and report["training_grade"] == 1
    grade = {row["task_name"]: row["training_grade"] for row in report["rows"]}
    assert grade == {"a": True, "b": False}


def _checkout(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    checkout = tmp_path / "prime-rl"
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text('[project]\nname = "prime-rl"\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    uv = bin_dir / "uv"
    uv.write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'tests' / 'doubles' / 'fake_prime_rl.py'} \"$@\"\n")
    uv.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_PRIME_RL_RECORD": str(tmp_path / "argv.json")}
    return checkout, env


def test_run_sft_launches_prime_rl_and_records_train_run_json(tmp_path: Path) -> None:
    checkout, env = _checkout(tmp_path)
    config = tmp_path / "sft.toml"
    config.write_text("[data]\nbatch_size = 8\n")
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"messages": [], "tool_defs": [{"x": 1}]}) + "\n")
    work = tmp_path / "work"
    args = ("train", "run", "sft", "--config", str(config), "--data", str(data), "--work-dir", str(work),
            "--prime-rl-dir", str(checkout), "--target-examples", "20", "--tool-defs-mode", "omit",
            "--chat-template-kwarg", "enable_thinking=false", "--override", "optim.lr=1e-5")
    done = run_bench(*args, env=env)
    assert done.returncode == 0, done.stderr
    seen = json.loads((tmp_path / "argv.json").read_text())
    assert seen["cwd"] == str(checkout.resolve())
    argv = seen["argv"]
    assert argv[:4] == ["run", "sft", "@", str(config.resolve())]
    flags = dict(zip(argv[4::2], argv[5::2]))
    assert flags["--max_steps"] == "3" and flags["--scheduler.decay_steps"] == "3"  # ceil(20 / 8)
    assert flags["--optim.lr"] == "1e-5"
    staged = Path(flags["--data.name"])
    assert json.loads(staged.read_text()) == {"messages": [], "chat_template_kwargs": {"enable_thinking": False}}
    manifest = json.loads((work / "train-run.json").read_text())
    assert manifest["exit_code"] == 0 and manifest["command"] == ["uv", *argv]
    assert manifest["config_sha256"].startswith("sha256:") and manifest["data_sha256"].startswith("sha256:")
    assert (Path(manifest["output_dir"]) / "step_3" / "model.safetensors").is_file()
    again = run_bench(*args, env=env)
    assert again.returncode == 2 and "--force" in again.stderr
    failing = run_bench(*args, "--force", env={**env, "FAKE_PRIME_RL_EXIT": "7"})
    assert failing.returncode == 7
    assert json.loads((work / "train-run.json").read_text())["exit_code"] == 7


def test_run_sft_publishes_the_model_and_its_record_to_the_hub_double(tmp_path: Path) -> None:
    from tests.doubles.hf_hub_double import HfHubDouble

    checkout, env = _checkout(tmp_path)
    config = tmp_path / "sft.toml"
    config.write_text('[model]\nname = "Qwen/Qwen3-0.6B"\n[data]\nbatch_size = 8\n')
    work = tmp_path / "run-7"
    args = ("train", "run", "sft", "--config", str(config), "--work-dir", str(work), "--prime-rl-dir", str(checkout),
            "--publish-model", "acme/sft-model", "--model-tag", "v1", "--model-card", "auto",
            "--publish-artifacts", "acme/sft-runs", "--hf-prefix", "runs")
    with HfHubDouble() as hub:
        hub_env = {**env, "HF_ENDPOINT": hub.url, "HF_TOKEN": hub.token, "HF_HOME": str(tmp_path / "hf-home")}
        done = run_bench(*args, env=hub_env)
        assert done.returncode == 0, done.stderr
        model = hub.files("acme/sft-model", repo_type="model")
        runs = hub.files("acme/sft-runs")
        assert any(k.startswith("v1/") and k.endswith("model.safetensors") for k in model), model.keys()
        card = model["v1/README.md"].decode()
        assert "base_model: Qwen/Qwen3-0.6B" in card
        record = json.loads(runs["runs/run-7/train-run.json"])
        assert record["exit_code"] == 0
        assert hub.token.encode() not in hub.all_request_bytes().replace(b"Bearer " + hub.token.encode(), b"")
    manifest = json.loads((work / "train-run.json").read_text())
    assert manifest["published"]["model"]["repo"] == "acme/sft-model"
    assert manifest["published"]["artifacts"]["path"] == "runs/run-7"


def test_run_sft_publishing_flags_are_checked_before_training(tmp_path: Path) -> None:
    checkout, env = _checkout(tmp_path)
    config = tmp_path / "sft.toml"
    config.write_text("")
    base = ("train", "run", "sft", "--config", str(config), "--prime-rl-dir", str(checkout),
            "--work-dir", str(tmp_path / "w"))
    for extra, words in ((("--model-tag", "v1"), "needs --publish-model"),
                         (("--publish-model", "not a repo"), "not a Hugging Face repo id"),
                         (("--publish-model", "org/model"), "HF_TOKEN")):
        done = run_bench(*base, *extra, env={**env, "HF_TOKEN": ""})
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "argv.json").exists()
