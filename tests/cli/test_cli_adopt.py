"""``bench eval adopt`` as a user runs it: the scaffold, the conversion through the host's Codex CLI
(the ``fake_codex_cli.py`` double asking a scripted OpenAI server), and the parity gate over benchmark
packages that agree, diverge or are malformed, from the record or from a rerun of parity_test.py."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.doubles.scripted_openai import ScriptedOpenAI
from tests.taskgen import PASS_IF_HELLO, make_task

DOUBLES = Path(__file__).resolve().parents[1] / "doubles"
TB2 = Path(__file__).resolve().parents[1] / "fixtures" / "compat" / "tb2-cwd-program"

AGREEING = {
    "experiment": "side-by-side-parity", "benchmark": "agree",
    "conversion_parity": {"tasks": [{"task_id": "t1", "criteria_results": [
        {"criterion_id": "compiles", "original_verdict": "pass", "adapted_verdict": "pass"},
        {"criterion_id": "tests", "original_verdict": "fail", "adapted_verdict": "fail"}]}]},
    "reward_distribution_parity": {"samples": [
        {"task_id": "t1", "legacy_reward": 0.0, "converted_reward": 0.0},
        {"task_id": "t2", "legacy_reward": 0.75, "converted_reward": 0.76}]},
}
DIVERGING = {
    "conversion_parity": {"tasks": [{"task_id": "t1", "criteria_results": [
        {"criterion_id": "tests", "original_verdict": "pass", "adapted_verdict": "fail"}]}]},
    "reward_distribution_parity": {"samples": [
        {"task_id": "t1", "legacy_reward": 1.0, "converted_reward": 0.5},
        {"task_id": "t2", "legacy_reward": 0.5, "converted_reward": 0.5}]},
}
HARBOR = [{"adapter_name": "harb", "agent": "codex@1.0", "model": "gpt-5", "date": "2026-01-15",
           "adapted_benchmark_size": 500, "parity_benchmark_size": 50, "number_of_runs": 3, "notes": None,
           "original_parity_repo": "https://example.invalid/fork", "adapter_pr": [], "dataset_pr": [],
           "parity_pr": [], "metrics": [{"benchmark_name": "Harb", "metric": "Accuracy",
                                         "original": "72.0 +/- 1.5", "harbor": "71.3 +/- 1.2",
                                         "original_runs": [73.0, 69.0, 74.0], "harbor_runs": [72.0, 70.0, 71.9]}]}]


def package(root: Path, slug: str, evidence: object | None = None, *, raw: str | None = None) -> Path:
    """``root/benchmarks/<slug>/`` holding a parity_experiment.json (JSON of ``evidence``, or ``raw`` text)."""
    bench = root / "benchmarks" / slug
    bench.mkdir(parents=True)
    if raw is not None or evidence is not None:
        (bench / "parity_experiment.json").write_text(raw if raw is not None else json.dumps(evidence))
    return bench


def verdict_of(bench: Path) -> dict:
    return json.loads((bench / "parity_verdict.json").read_text())


# -- scaffold -------------------------------------------------------------------------------------------------


def test_scaffold_only_writes_the_package_and_never_overwrites_it(tmp_path):
    done = run_bench("eval", "adopt", "my-bench", "--scaffold-only", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    bench = tmp_path / "benchmarks" / "my-bench"
    assert sorted(p.name for p in bench.iterdir()) == sorted([
        "__init__.py", "benchflow.py", "main.py", "parity_test.py", "parity_experiment.json", "run_my_bench.py",
        "my-bench.yaml", "benchmark.yaml", "README.md"])
    assert "Scaffolded benchmarks/my-bench/" in done.stdout and "  parity_test.py" in done.stdout
    for script in ("benchflow.py", "main.py", "parity_test.py", "run_my_bench.py"):
        compile((bench / script).read_text(), script, "exec")
    template = json.loads((bench / "parity_experiment.json").read_text())
    assert template["benchmark"] == "my-bench" and template["status"] == "template"

    (bench / "README.md").write_text("mine")
    again = run_bench("eval", "adopt", "my-bench", "--scaffold-only", cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr and len(again.stderr.splitlines()) == 1
    assert (bench / "README.md").read_text() == "mine"


def test_the_scaffolded_run_config_is_one_bench_run_reads(tmp_path):
    from benchflow.jobs.public import make_spec

    run_bench("eval", "adopt", "cfg-bench", "--scaffold-only", "--benchmarks-dir", str(tmp_path / "b"))
    spec = make_spec(config=str(tmp_path / "b" / "cfg-bench" / "cfg-bench.yaml"))
    assert spec.agent == "claude-agent-acp" and spec.concurrency == 4


def test_a_fresh_scaffold_has_insufficient_evidence(tmp_path):
    run_bench("eval", "adopt", "fresh", "--scaffold-only", cwd=tmp_path)
    done = run_bench("eval", "adopt", "fresh", "--verify", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == "verdict: insufficient-evidence"
    assert "## " not in done.stdout  # nothing diverged: no issue draft
    assert verdict_of(tmp_path / "benchmarks" / "fresh")["verdict"] == "insufficient-evidence"


@pytest.mark.parametrize("args, says", [
    (["Bad_Name", "--scaffold-only"], "benchmark name 'Bad_Name' is not a slug"),
    (["../escape", "--scaffold-only"], "is not a slug"),
    (["x", "--verify", "--scaffold-only"], "--verify and --scaffold-only: pick one mode"),
    ([], "missing TARGET"),
    (["x", "--rerun"], "--rerun: not used without --verify"),
    (["x", "--verify", "--model", "m"], "--model: not used with --verify"),
    (["x", "--scaffold-only", "--tolerance", "0.5"], "--tolerance: not used with --scaffold-only"),
    (["x", "--verify", "--tolerance", "-1"], "--tolerance -1.0: must be a reward difference of 0 or more"),
    (["ghost", "--verify"], "no such benchmark"),
    (["src", "--dry-run", "-c", "novalue"], "--codex-config 'novalue': not key=value"),
    (["!!!", "--dry-run"], "pass --name SLUG"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, says):
    done = run_bench("eval", "adopt", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr and len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "benchmarks").exists()


# -- the gate over recorded evidence ------------------------------------------------------------------------


def test_agreeing_evidence_confirms_parity_and_writes_the_verdict(tmp_path):
    bench = package(tmp_path, "agree", AGREEING)
    done = run_bench("eval", "adopt", "agree", "--verify", "--issue-out", str(tmp_path / "issue.md"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "verdict: parity-confirmed"
    assert "criteria: 2/2 agree" in lines and "rewards: 2 pairs, max abs delta 0.0100 (tolerance 0.02)" in lines
    verdict = verdict_of(bench)
    assert verdict["verdict"] == "parity-confirmed" and verdict["passed"] is True
    assert (verdict["criteria"]["compared"], verdict["rewards"]["samples"]) == (2, 2)
    assert verdict["evidence"] == "recorded" and verdict["tolerance"] == 0.02
    assert not (tmp_path / "issue.md").exists()  # nothing diverged
    assert [p.name for p in bench.iterdir() if p.name.startswith(".")] == []  # atomic writes leave no temp files


def test_diverging_evidence_fails_the_gate_with_an_issue_draft(tmp_path):
    bench = package(tmp_path, "diverge", DIVERGING)
    issue = tmp_path / "drafts" / "issue.md"
    done = run_bench("eval", "adopt", "diverge", "--verify", "--issue-out", str(issue), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == "verdict: parity-divergent"
    assert "  differs: t1/tests: original 'pass', converted 'fail'" in done.stdout
    assert "  over tolerance: t1: original 1.0000, converted 0.5000, delta 0.5000" in done.stdout
    assert f"issue draft: {issue}" in done.stdout
    text = issue.read_text()
    assert text.startswith("## The adopted benchmark `diverge` does not pass the parity gate")
    assert "`t1/tests`: original `pass`, converted `fail`" in text and "`t1`: original 1.0000" in text
    assert "`t2`" not in text  # only the pairs that fail are listed
    verdict = verdict_of(bench)
    assert verdict["verdict"] == "parity-divergent" and verdict["passed"] is False
    assert verdict["criteria"]["disagreements"] == [{"where": "t1/tests", "original": "pass", "converted": "fail"}]
    assert [r["where"] for r in verdict["rewards"]["exceeding"]] == ["t1"]


def test_the_issue_draft_goes_to_stdout_without_issue_out(tmp_path):
    package(tmp_path, "diverge", DIVERGING)
    done = run_bench("eval", "adopt", "diverge", "--verify", cwd=tmp_path)
    assert done.returncode == 1 and "## The adopted benchmark `diverge` does not pass the parity gate" in done.stdout


def test_tolerance_decides_a_reward_difference(tmp_path):
    package(tmp_path, "close", {"reward_distribution_parity": {"samples": [
        {"task_id": "t", "legacy_reward": 0.5, "converted_reward": 0.53}]}})
    assert run_bench("eval", "adopt", "close", "--verify", cwd=tmp_path).returncode == 1
    assert run_bench("eval", "adopt", "close", "--verify", "--tolerance", "0.05", cwd=tmp_path).returncode == 0
    assert verdict_of(tmp_path / "benchmarks" / "close")["tolerance"] == 0.05


def test_harbors_parity_experiment_is_scored(tmp_path):
    bench = package(tmp_path, "harb", HARBOR)
    done = run_bench("eval", "adopt", "harb", "--verify", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rewards: 1 pair, max abs delta 0.0070 (tolerance 0.02)" in done.stdout
    assert run_bench("eval", "adopt", "harb", "--verify", "--tolerance", "0.005", cwd=tmp_path).returncode == 1
    assert verdict_of(bench)["rewards"]["exceeding"][0]["where"] == "Harb / Accuracy"


@pytest.mark.parametrize("raw, says", [
    ("{not json", "parity_experiment.json: not valid JSON (Expecting property name enclosed in double quotes "
                  "at line 1 column 2)"),
    (json.dumps({"reward_distribution_parity": {"samples": [{"task_id": "t1", "legacy_reward": 1.0}]}}),
     "parity_experiment.json: reward_distribution_parity.samples[0]: has no converted_reward"),
    (json.dumps({"reward_distribution_parity": {"samples": [{"legacy_reward": "1", "converted_reward": 1}]}}),
     "reward_distribution_parity.samples[0].legacy_reward: '1' is not a number"),
    (json.dumps([{"metrics": [{"metric": "acc", "original_runs": [120.0], "harbor_runs": [118.0]}]}]),
     "[0].metrics[0]: metric 'acc' has a value outside 0-100, not a reward"),
])
def test_malformed_evidence_is_one_line_and_exit_2(tmp_path, raw, says):
    bench = package(tmp_path, "broken", raw=raw)
    done = run_bench("eval", "adopt", "broken", "--verify", cwd=tmp_path)
    assert done.returncode == 2
    assert says in done.stderr and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("error: benchmarks/broken/parity_experiment.json: ")
    assert not (bench / "parity_verdict.json").exists()


def test_a_missing_record_is_insufficient_evidence(tmp_path):
    package(tmp_path, "norecord")
    done = run_bench("eval", "adopt", "norecord", "--verify", cwd=tmp_path)
    assert done.returncode == 1
    assert "evidence: none (benchmarks/norecord/parity_experiment.json does not exist)" in done.stdout


# -- --rerun ----------------------------------------------------------------------------------------------------

PARITY_TEST = '''
import argparse, json, sys
parser = argparse.ArgumentParser()
parser.add_argument("--mode", required=True)
args = parser.parse_args()
assert args.mode == "side-by-side", args.mode
print("running the original harness ...")  # a log line on stdout before the document
print("comparing", file=sys.stderr)
print(json.dumps(DOCUMENT, indent=2))
'''


def parity_script(bench: Path, document: object, body: str = PARITY_TEST) -> None:
    (bench / "parity_test.py").write_text(f"DOCUMENT = {document!r}\n" + body)


def test_rerun_scores_the_fresh_output_instead_of_the_record(tmp_path):
    bench = package(tmp_path, "rerun", DIVERGING)  # the record says it diverges ...
    parity_script(bench, AGREEING)  # ... but measured again it agrees
    done = run_bench("eval", "adopt", "rerun", "--verify", "--rerun", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "parity_test.py --mode side-by-side" in done.stderr
    assert done.stdout.splitlines()[0] == "verdict: parity-confirmed"
    assert json.loads((bench / "parity_rerun.json").read_text()) == AGREEING
    assert json.loads((bench / "parity_experiment.json").read_text()) == DIVERGING  # the record is untouched
    assert verdict_of(bench)["evidence"] == "rerun"

    parity_script(bench, DIVERGING)
    assert run_bench("eval", "adopt", "rerun", "--verify", "--rerun", cwd=tmp_path).returncode == 1


def test_a_failing_parity_test_fails_the_gate_without_a_verdict(tmp_path):
    bench = package(tmp_path, "crash", AGREEING)
    (bench / "parity_test.py").write_text("import sys\nprint('original harness not installed', file=sys.stderr)\n"
                                          "sys.exit(3)\n")
    done = run_bench("eval", "adopt", "crash", "--verify", "--rerun", cwd=tmp_path)
    assert done.returncode == 1
    assert "--mode side-by-side: exited 3: original harness not installed" in done.stderr
    assert not (bench / "parity_verdict.json").exists()


def test_the_scaffolds_parity_test_is_not_a_measurement_yet(tmp_path):
    run_bench("eval", "adopt", "fresh", "--scaffold-only", cwd=tmp_path)
    done = run_bench("eval", "adopt", "fresh", "--verify", "--rerun", cwd=tmp_path)
    assert done.returncode == 1 and "side-by-side parity is not written yet" in done.stderr


def test_the_scaffolds_parity_test_once_written_records_what_the_gate_scores(tmp_path):
    import subprocess

    run_bench("eval", "adopt", "filled", "--scaffold-only", cwd=tmp_path)
    bench = tmp_path / "benchmarks" / "filled"
    script = bench / "parity_test.py"
    placeholder = '    raise NotImplementedError("filled: side-by-side parity is not written yet")'
    assert placeholder in script.read_text()
    script.write_text(script.read_text().replace(placeholder, f"    return {AGREEING!r}"))
    recorded = subprocess.run([sys.executable, str(script), "--mode", "side-by-side", "--record"],
                              capture_output=True, text=True, cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    assert json.loads((bench / "parity_experiment.json").read_text()) == AGREEING == json.loads(recorded.stdout)
    assert run_bench("eval", "adopt", "filled", "--verify", cwd=tmp_path).returncode == 0
    assert run_bench("eval", "adopt", "filled", "--verify", "--rerun", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("body, says", [
    ("print('all good')\n", "its stdout is not a JSON document"),
    ("import json\nprint(json.dumps({'status': 'template', 'conversion_parity': {'tasks': []}}))\n",
     "printed no criterion pairs and no reward samples"),
])
def test_rerun_output_that_is_no_evidence_is_bad_input(tmp_path, body, says):
    bench = package(tmp_path, "noout", AGREEING)
    (bench / "parity_test.py").write_text(body)
    done = run_bench("eval", "adopt", "noout", "--verify", "--rerun", cwd=tmp_path)
    assert done.returncode == 2 and says in done.stderr


# -- --roundtrip-task -----------------------------------------------------------------------------------------


def test_roundtrip_task_joins_the_gate(tmp_path):
    bench = package(tmp_path, "agree", AGREEING)
    good = run_bench("eval", "adopt", "agree", "--verify", "--roundtrip-task", str(TB2), cwd=tmp_path)
    assert good.returncode == 0, good.stdout + good.stderr
    assert f"round-trip: lossless ({TB2})" in good.stdout
    assert verdict_of(bench)["roundtrip"]["status"] == "lossless"

    task = make_task(tmp_path / "tasks", "persona", test=PASS_IF_HELLO)
    (task / "task.md").write_text((task / "task.md").read_text() + "\n## user-persona\n\nAn impatient user.\n")
    bad = run_bench("eval", "adopt", "agree", "--verify", "--roundtrip-task", str(task), cwd=tmp_path)
    assert bad.returncode == 1
    assert "round-trip: drift" in bad.stdout and "  ## user-persona: the simulated user's persona" in bad.stdout
    verdict = verdict_of(bench)
    assert (verdict["verdict"], verdict["passed"], verdict["roundtrip"]["status"]) == ("parity-confirmed", False,
                                                                                       "drift")


# -- convert ---------------------------------------------------------------------------------------------------


def test_dry_run_prints_the_codex_launch_and_writes_nothing(tmp_path):
    source = tmp_path / "Cool_Bench"
    source.mkdir()
    done = run_bench("eval", "adopt", str(source), "--dry-run", "--model", "gpt-5-codex", "-c", "service_tier=flex",
                     "-c", "model_reasoning_effort=high", "--codex-bin", "/opt/codex", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    argv = shlex.split(done.stdout)
    assert argv[:8] == ["/opt/codex", "exec", "--json", "--cd", str(tmp_path), "--skip-git-repo-check",
                        "--sandbox", "workspace-write"]
    assert argv[8:14] == ["-c", "service_tier=flex", "-c", "model_reasoning_effort=high", "--model", "gpt-5-codex"]
    prompt = argv[14]
    assert f"Source benchmark: {source}" in prompt and "Target package: benchmarks/cool-bench/" in prompt
    assert "`bench eval adopt cool-bench --verify` reports parity-confirmed" in prompt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Cool_Bench"]


def fake_codex(tmp_path: Path) -> Path:
    """A ``codex`` on a PATH folder that runs the Codex CLI double with this Python."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    codex = bin_dir / "codex"
    codex.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(DOUBLES / 'fake_codex_cli.py'))} "
                     '"$@"\n')
    codex.chmod(0o755)
    return bin_dir


def test_convert_drives_the_host_codex_then_the_gate_scores_its_work(tmp_path):
    """Codex gets the prompt, asks its model (a scripted OpenAI server), writes the package's evidence."""
    work = tmp_path / "repo"
    (work / "upstream-bench").mkdir(parents=True)
    record = json.dumps(AGREEING)
    script = {"prompts": [[
        {"op": "ask_model", "prompt": "How is upstream-bench scored?"},
        {"op": "tool", "write": {"path": "benchmarks/upstream-bench/parity_experiment.json", "content": record}},
        {"op": "tool", "run": "test -f benchmarks/upstream-bench/parity_test.py"},
        {"op": "message", "text": "Converted; parity recorded."}]]}
    with ScriptedOpenAI() as provider:
        env = {"PATH": f"{fake_codex(tmp_path)}:/usr/bin:/bin", "HOME": str(tmp_path),
               "FAKE_CLI_SCRIPT": json.dumps(script), "FAKE_CODEX_ARGV_FILE": str(tmp_path / "argv.json"),
               "OPENAI_BASE_URL": f"{provider.url}/v1", "OPENAI_API_KEY": "sk-test-not-a-key"}
        done = run_bench("eval", "adopt", "./upstream-bench", "--model", "gpt-5-codex", "-c", "service_tier=flex",
                         cwd=work, env=env)
        asked = [c for c in provider.calls if c.path == "/v1/responses"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == "Scaffolded benchmarks/upstream-bench/"
    assert "codex: Hello world file" in done.stdout  # the scripted model's answer, through Codex
    assert "codex add: benchmarks/upstream-bench/parity_experiment.json" in done.stdout
    assert "codex ran: bash -lc \"test -f benchmarks/upstream-bench/parity_test.py\" (exit 0)" in done.stdout
    assert "codex: Converted; parity recorded." in done.stdout
    assert done.stdout.splitlines()[-1] == "codex finished; check parity with: bench eval adopt upstream-bench --verify"
    assert len(asked) == 1 and asked[0].model == "gpt-5-codex"
    launched = json.loads((tmp_path / "argv.json").read_text())
    assert launched["cwd"] == str(work) and launched["options"]["config"] == {"service_tier": "flex"}
    assert launched["options"]["sandbox"] == "workspace-write" and launched["options"]["model"] == "gpt-5-codex"
    assert f"Source benchmark: {work / 'upstream-bench'}" in launched["options"]["prompt"]

    gate = run_bench("eval", "adopt", "upstream-bench", "--verify", cwd=work)
    assert gate.returncode == 0 and gate.stdout.splitlines()[0] == "verdict: parity-confirmed"


def test_a_failing_codex_run_exits_1(tmp_path):
    script = {"prompts": [[{"op": "error", "text": "401 Unauthorized"}]]}
    env = {"PATH": f"{fake_codex(tmp_path)}:/usr/bin:/bin", "HOME": str(tmp_path),
           "FAKE_CLI_SCRIPT": json.dumps(script)}
    done = run_bench("eval", "adopt", "up", "--benchmarks-dir", str(tmp_path / "b"), cwd=tmp_path, env=env)
    assert done.returncode == 1
    assert "codex error: 401 Unauthorized" in done.stdout and "codex exited 1" in done.stderr
    assert (tmp_path / "b" / "up" / "parity_test.py").is_file()  # the scaffold stays for the next attempt


def test_a_named_codex_binary_that_is_missing_is_one_line_and_nothing_is_written(tmp_path):
    done = run_bench("eval", "adopt", "up", "--codex-bin", "/nonexistent/codex", cwd=tmp_path,
                     env={"PATH": "/nonexistent"})
    assert done.returncode == 2
    assert done.stderr == ("error: codex CLI not found: '/nonexistent/codex' is not an executable on PATH; install it "
                           "(npm install -g @openai/codex) or pass --codex-bin PATH\n")
    assert list(tmp_path.iterdir()) == []


def test_without_codex_on_the_host_the_dry_run_shows_the_sandboxed_agent_and_its_prompt(tmp_path):
    source = tmp_path / "Cool_Bench"
    source.mkdir()
    done = run_bench("eval", "adopt", "./Cool_Bench", "--dry-run", cwd=tmp_path, env={"PATH": "/nonexistent"})
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("conversion: no 'codex' on PATH, so agent codex-acp runs it in a BenchFlow sandbox")
    first, *prompt = done.stdout.splitlines()
    assert first == (f"agent codex-acp in a BenchFlow sandbox (image debian:bookworm-slim, model the agent default); "
                     f"{source} -> /app/source; the package comes back to benchmarks/cool-bench/")
    assert f"Source benchmark: /app/source (a copy of {source})" in prompt
    assert "Target package: benchmarks/cool-bench/ (scaffolded; fill it in)" in prompt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Cool_Bench"]

    other = run_bench("eval", "adopt", "./Cool_Bench", "--dry-run", cwd=tmp_path,
                      env={"PATH": "/nonexistent", "BENCHFLOW_ADOPT_AGENT": "claude-agent-acp"})
    assert other.stdout.startswith("agent claude-agent-acp in a BenchFlow sandbox")


def test_codex_config_without_a_host_codex_is_one_line(tmp_path):
    done = run_bench("eval", "adopt", "up", "-c", "service_tier=flex", cwd=tmp_path, env={"PATH": "/nonexistent"})
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == ("error: --codex-config: only the host's Codex CLI takes -c options and "
                                            "there is none on PATH (agent codex-acp in a sandbox does not); install "
                                            "Codex, or drop -c")
    assert list(tmp_path.iterdir()) == []


# -- older spellings --------------------------------------------------------------------------------------------

ALIASES = [
    (["adopt", "init"], ["eval", "adopt"], ["old-bench"], ["old-bench", "--scaffold-only"],
     "Deprecated; use bench eval adopt NAME --scaffold-only."),
    (["agent", "create"], ["eval", "adopt"], ["old-bench"], ["old-bench", "--scaffold-only"],
     "Deprecated; use bench eval adopt NAME --scaffold-only."),
    (["adopt", "convert"], ["eval", "adopt"], ["./src", "--dry-run", "-c", "a=b", "--codex-bin", "/opt/codex"],
     ["./src", "--dry-run", "-c", "a=b", "--codex-bin", "/opt/codex"],
     "Deprecated; use bench eval adopt SOURCE."),
    (["agent", "run"], ["eval", "adopt"], ["./src", "--dry-run"], ["./src", "--dry-run"],
     "Deprecated; use bench eval adopt SOURCE."),
    (["adopt", "verify"], ["eval", "adopt"], ["diverge", "--tolerance", "0.6"],
     ["diverge", "--verify", "--tolerance", "0.6"], "Deprecated; use bench eval adopt NAME --verify."),
    (["agent", "verify"], ["eval", "adopt"], ["diverge"], ["diverge", "--verify"],
     "Deprecated; use bench eval adopt NAME --verify."),
]


@pytest.mark.parametrize("alias, target, alias_args, target_args, notice", ALIASES,
                         ids=lambda v: "-".join(v) if isinstance(v, list) else None)
def test_an_older_spelling_prints_its_notice_and_does_what_eval_adopt_does(tmp_path, alias, target, alias_args,
                                                                         target_args, notice):
    for side in ("old", "new"):
        package(tmp_path / side, "diverge", DIVERGING)
    expected = run_bench(*target, *target_args, cwd=tmp_path / "new")
    got = run_bench(*alias, *alias_args, cwd=tmp_path / "old")
    assert got.returncode == expected.returncode
    assert got.stdout == expected.stdout.replace(str(tmp_path / "new"), str(tmp_path / "old"))
    assert got.stderr.splitlines()[0] == f"bench {' '.join(alias)}: {notice}"
    if "verify" in alias:
        assert verdict_of(tmp_path / "old" / "benchmarks" / "diverge")["verdict"] == "parity-divergent"


def test_older_spellings_are_hidden_from_help():
    agent = run_bench("agent", "--help")
    listed = {line.strip("│ ").split(" ")[0] for line in agent.stdout.splitlines()}
    assert {"list", "show"} <= listed and not {"create", "run", "verify"} & listed
    root = run_bench("--help")
    assert "adopt" not in {line.strip("│ ").split(" ")[0] for line in root.stdout.splitlines()}
    evals = run_bench("eval", "--help")
    assert "adopt" in {line.strip("│ ").split(" ")[0] for line in evals.stdout.splitlines()}
    init = run_bench("adopt", "init", "--help")
    assert init.returncode == 0 and "Scaffold benchmarks/<name>/ for a new benchmark adoption" in init.stdout
