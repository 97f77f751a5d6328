"""The result commands as a user types them: output, files written and exit codes."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.jobgen import TrialSpec, write_job


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("jobs")
    write_job(root, "job-a", [TrialSpec("t1", 1.0), TrialSpec("t2", 0.0, model="haiku"),
                              TrialSpec("t3", None, error="Agent idle for 600s"),
                              TrialSpec("t4", 1.0, agent="oracle")], summary={"agent": "claude-agent-acp"})
    write_job(root, "job-b", [TrialSpec("t1", 1.0, model="sonnet"),
                              TrialSpec("t2", 1.0, model="sonnet", config={"timeout_sec": 60})])
    (root / "summary.json").write_text("{}")  # the jobs folder's copy of the latest summary
    return root


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    return lines[0]


def test_bad_path_exits_2_with_one_line(bench, tmp_path):
    for args in (["results", str(tmp_path / "nope")], ["eval", "inspect", str(tmp_path / "nope")],
                 ["eval", "metrics", str(tmp_path)], ["bundle", str(tmp_path)],
                 ["eval", "compare", str(tmp_path / "x"), str(tmp_path / "y")]):
        assert str(tmp_path) in one_line_error(bench(*args))
    assert "jobs" in one_line_error(bench("results", cwd=tmp_path))


def test_bad_flag_values_exit_2(bench, jobs):
    assert "--attempts" in one_line_error(bench("results", str(jobs / "job-a"), "--attempts", "worst"))
    assert "--by" in one_line_error(bench("eval", "inspect", str(jobs / "job-a"), "--by", "colour"))


def test_results_lists_reads_and_compares(bench, jobs):
    listing = bench("results", str(jobs))
    assert listing.returncode == 0 and "job-a" in listing.stdout and "job-b" in listing.stdout
    one = bench("results", str(jobs / "job-a"))
    assert one.returncode == 0
    assert "Outcomes: 2 scored (1 passed, 1 failed), 1 unscored" in one.stdout
    assert "Controls left out: 1" in one.stdout and "idle_timeout" in one.stdout
    doc = json.loads(bench("results", str(jobs / "job-a"), "--json", "--include-controls").stdout)
    assert doc["kind"] == "benchflow.job" and doc["denominators"]["passed"] == 2
    two = json.loads(bench("results", str(jobs / "job-a"), str(jobs / "job-b"), "--json").stdout)
    assert two["kind"] == "benchflow.comparison" and two["summary"]["paired"] == 2


def test_eval_list(bench, jobs):
    proc = bench("eval", "list", str(jobs), "--json")
    data = json.loads(proc.stdout)
    assert [j["name"] for j in data["jobs"]] == ["job-a", "job-b"]


def test_inspect_writes_out_and_csv(bench, jobs, tmp_path):
    out, table = tmp_path / "doc.json", tmp_path / "trials.csv"
    proc = bench("eval", "inspect", str(jobs / "job-a"), "--json", "--out", str(out), "--csv", str(table),
                 "--attempts", "all", "--by", "agent,model")
    assert proc.returncode == 0 and proc.stdout == ""
    doc = json.loads(out.read_text())
    assert len(doc["trials"]) == 4 and {tuple(g["group"].values()) for g in doc["groups"]} == {
        ("claude-agent-acp", "claude-haiku-4-5"), ("claude-agent-acp", "haiku")}
    rows = list(csv.DictReader(table.open()))
    assert len(rows) == 4 and {r["outcome"] for r in rows} == {"passed", "failed", "errored"}
    trial = next((jobs / "job-a").glob("t3__*"))
    text = bench("eval", "inspect", str(trial)).stdout
    assert "bench explain idle_timeout" in text
    tdoc = json.loads(bench("eval", "inspect", str(trial), "--json", "--trajectories").stdout)
    assert tdoc["kind"] == "benchflow.trial" and tdoc["trajectories"] == {"acp": [], "llm": []}


def test_metrics_splits_settings_and_takes_k(bench, jobs):
    proc = bench("eval", "metrics", str(jobs), "--json", "--k", "1", "--k", "2", "--solve-threshold", "0.5")
    assert proc.returncode == 0
    report = json.loads(proc.stdout)
    assert report["kind"] == "benchflow.metrics" and report["pooled"] is None
    assert len(report["settings"]) == 3 and report["controls_excluded"] == 1
    assert all(s["solve_rates"]["ks"] == [1, 2] for s in report["settings"])
    assert "settings" in proc.stderr and "model" in proc.stderr
    one = json.loads(bench("eval", "metrics", str(jobs), "--json", "--model", "sonnet").stdout)
    assert one["pooled"]["solve_rates"]["solve_rate"] == 1.0
    text = bench("eval", "metrics", str(jobs), "--agent", "claude-agent-acp", "--model", "claude-haiku-4-5").stdout
    assert "Scored only (n=1)" in text and "95% interval" not in text.split("Scored only")[1]


def test_compare_mismatch_modes(bench, jobs):
    a, b = str(jobs / "job-a"), str(jobs / "job-b")
    warn = bench("eval", "compare", a, b, "--vary", "model")
    assert warn.returncode == 0 and "timeout" in warn.stderr and "t2" in warn.stdout
    raised = bench("eval", "compare", a, b, "--vary", "model", "--on-mismatch", "raise", "--json")
    assert raised.returncode == 1 and json.loads(raised.stdout)["setting_mismatches"][0]["setting"] == "timeout"
    assert "error:" in raised.stderr
    clean = bench("eval", "compare", a, b, "--vary", "model", "--vary", "timeout", "--on-mismatch", "raise",
                  "--labels", "base", "new", "--json")
    doc = json.loads(clean.stdout)
    assert clean.returncode == 0 and (doc["a"]["label"], doc["b"]["label"]) == ("base", "new")
    assert "unknown setting" in one_line_error(bench("eval", "compare", a, b, "--vary", "colour"))


def test_compare_lift(bench, jobs, tmp_path):
    md, js = tmp_path / "lift.md", tmp_path / "lift.json"
    proc = bench("eval", "compare-lift", "--baseline", str(jobs / "job-a"), "--trained", str(jobs / "job-b"),
                 "--out", str(md), "--json-out", str(js), "--bootstrap-samples", "50", "--bootstrap-seed", "3")
    assert proc.returncode == 0 and "Paired tasks: 2" in proc.stdout
    assert json.loads(js.read_text())["pass_rate_delta_ci"]["seed"] == 3 and md.read_text().startswith("# Lift")


def test_explain(bench):
    page = bench("explain", "R212")
    assert page.returncode == 0 and "provider_auth" in page.stdout and "bench doctor" in page.stdout
    data = json.loads(bench("explain", "verifier_failure", "--json").stdout)
    assert data["fault"] == "task"
    listing = json.loads(bench("explain", "--json").stdout)
    assert len(listing) > 20
    assert "verifier_failure" in one_line_error(bench("explain", "verifer_failure"))


def test_bundle(bench, jobs, tmp_path):
    out = tmp_path / "job.zip"
    proc = bench("bundle", str(jobs / "job-a"), "-o", str(out), "--no-workspace")
    assert proc.returncode == 0 and out.is_file() and "bundle.json" in proc.stdout


def test_import_benchflow_is_light_and_lazy():
    code = ("import sys, benchflow as bf; assert 'pydantic' not in sys.modules; "
            "assert callable(bf.load_job) and 'benchflow.results' in sys.modules; print(bf.__version__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    with pytest.raises(AttributeError):
        import benchflow

        benchflow.no_such_name  # noqa: B018


def test_explain_a_trial(bench, jobs):
    trial = next((jobs / "job-a").glob("t3__*"))
    proc = bench("explain", str(trial))
    assert proc.returncode == 0 and proc.stdout.startswith("idle_timeout:") and "--agent-idle-timeout" in proc.stdout
