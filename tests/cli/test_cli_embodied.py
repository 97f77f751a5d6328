"""bench embodied as a user types it, over job folders written in BenchFlow 0.7's embodied format: report,
export, verify (a clean job passes; a tampered record hash, a missing video, a reward that is not the record's
fail), check-spec, robo-path."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from doubles.episode_server_double import EpisodeServerDouble
from fixtures.embodied_jobs import SPEC, Episode, initial_state, write_embodied_trial
from fixtures.jobgen import TrialSpec, write_trial


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), (proc.returncode, proc.stderr)
    return lines[0]


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    job = tmp_path_factory.mktemp("jobs") / "embodied"
    write_embodied_trial(job, "reach", Episode(0, True), suffix="aaaa0000")
    write_embodied_trial(job, "reach", Episode(1, False, outcome="budget_exhausted", settle=0), suffix="aaaa0001")
    write_embodied_trial(job, "look", Episode(0, True, observation_mode="vision", rewards=[0.5, 0.25]),
                         naming="variant", suffix="bbbb0000")
    write_trial(job, TrialSpec("plain-task", reward=1.0, suffix="cccc0000"))  # not embodied
    return job


def tampered(job: Path, tmp_path: Path, trial: str, change) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(job, copy)
    change(copy / trial)
    return copy


def test_report_prints_the_table_and_json(bench, job):
    proc = bench("embodied", "report", str(job))
    assert proc.returncode == 0, proc.stderr
    reach = next(line for line in proc.stdout.splitlines() if line.startswith("reach "))
    assert reach.split()[:6] == ["reach", "2", "1", "0.500", "0.707", "0.500"]
    document = json.loads(bench("embodied", "report", str(job), "--json").stdout)
    assert document["kind"] == "benchflow.embodied-report"
    assert document["tasks"]["look"]["rewards_by_seed"] == {"0": [1.0]}
    assert document["tasks"]["reach"]["pass_at_k"] == {"1": 0.5, "2": 1.0}


def test_report_of_a_folder_that_is_no_job_is_one_line(bench, tmp_path):
    assert str(tmp_path / "nope") in one_line_error(bench("embodied", "report", str(tmp_path / "nope")))


def test_export_writes_transitions_and_the_episode_index(bench, job, tmp_path):
    out = tmp_path / "export"
    proc = bench("embodied", "export", str(job), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"3 episode(s), 12 step(s) -> {out}"  # 3+2 settle, 3, 2+2 settle
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    episodes = {row["episode_id"]: row for row in map(json.loads, (out / "episodes.jsonl").read_text().splitlines())}
    assert set(episodes) == {"reach__aaaa0000", "reach__aaaa0001", "look--seed-0__bbbb0000"}

    first = [row for row in steps if row["episode_id"] == "reach__aaaa0000"]
    assert [row["index"] for row in first] == [0, 1, 2, 3, 4]
    assert first[0]["obs"] == initial_state(0)  # the state before the first step
    assert first[1]["obs"]["hand_pos"] == [0.01, 0.6, 0.2]  # the next row's obs is the state after a step
    assert [row["op"] for row in first] == ["act", "act", "act", "settle", "settle"]
    assert [row["done"] for row in first] == [False] * 4 + [True] and first[-1]["truncated"] is False
    assert first[-1]["final_obs"]["hand_pos"] == [0.03, 0.6, 0.2] and first[1]["frame"] == 0
    budget = [row for row in steps if row["episode_id"] == "reach__aaaa0001"]
    assert budget[-1]["done"] is True and budget[-1]["truncated"] is True  # budget_exhausted cuts it short
    vision = [row for row in steps if row["episode_id"] == "look--seed-0__bbbb0000"]
    assert all(set(row["obs"]) == {"hand_pos", "gripper_open"} for row in vision)  # obj1_pos is privileged

    reach = episodes["reach__aaaa0000"]
    assert (reach["task"], reach["seed"], reach["reward"], reach["success"]) == ("reach", 0, 1.0, True)
    assert reach["n_steps"] == 5 and reach["return"] == pytest.approx(2.6)  # 0.1+0.2+0.3 + 2 settle steps of 1
    assert reach["video_index"]["video"] == "reach__aaaa0000/verifier/episode/recording.mp4"
    assert (job / reach["video_index"]["video"]).is_file()
    assert reach["embodiment"]["name"] == "sawyer-2f" and reach["initial_state_sha256"]


def test_export_of_a_job_without_episodes_writes_nothing(bench, tmp_path):
    job = tmp_path / "plain"
    write_trial(job, TrialSpec("plain-task", reward=1.0))
    out = tmp_path / "export"
    assert "no embodied episodes" in one_line_error(bench("embodied", "export", str(job), "--out", str(out)))
    assert not (out / "steps.jsonl").exists() and not (out / "episodes.jsonl").exists()


def test_verify_passes_a_clean_job(bench, job):
    proc = bench("embodied", "verify", str(job))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("\nok    ") + proc.stdout.startswith("ok    ") == 3
    assert proc.stdout.splitlines()[-1] == ("3 embodied trial(s): 3 ok, 0 failed "
                                            "(1 trial(s) without an episode record skipped)")


def _edit_json(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def _move_object(trial: Path) -> None:
    header = trial / "verifier" / "episode" / "episode.json"
    data = json.loads(header.read_text())
    data["initial_state"]["obj1_pos"][0] = 0.25  # the hash it records stays the old one
    header.write_text(json.dumps(data))


@pytest.mark.parametrize(("trial", "change", "check", "words"), [
    ("reach__aaaa0000", _move_object, "record_hash", "episode.json's initial_state hashes to"),
    ("reach__aaaa0000", lambda t: (t / "artifacts" / "recording.mp4").unlink(), "video_copy", "artifacts/recording.mp4 is missing"),
    ("reach__aaaa0000", lambda t: (t / "artifacts" / "recording.mp4").write_bytes(b"another video"), "video_copy", "differs"),
    ("reach__aaaa0000", lambda t: (t / "verifier" / "episode" / "recording.mp4").unlink(), "video", "names recording.mp4"),
    ("reach__aaaa0000", lambda t: _edit_json(t / "result.json", rewards={"reward": 0.0}), "reward",
     "result.json's reward is 0, but the record judged success=true"),
    ("reach__aaaa0000", lambda t: _edit_json(t / "verifier" / "episode" / "result.json", success=False), "reward",
     "result.json's reward is 1, but the record judged success=false"),
    ("reach__aaaa0000", lambda t: _edit_json(t / "verifier" / "episode" / "result.json", **{"return": 9.5}), "record_steps",
     "return is 9.5"),
    ("look--seed-0__bbbb0000", lambda t: (t / "artifacts" / "observations" / "obs_001_corner.png").write_bytes(b"x"),
     "observation_copy", "obs_001_corner.png differs"),
])
def test_verify_catches_files_that_no_longer_match_the_verdict(bench, job, tmp_path, trial, change, check, words):
    copy = tampered(job, tmp_path, trial, change)
    proc = bench("embodied", "verify", str(copy))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failures = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert failures and all(line.split()[1] == trial for line in failures)
    assert any(f" {check}: " in line and words in line for line in failures), failures
    document = json.loads(bench("embodied", "verify", str(copy), "--json").stdout)
    assert document["ok"] is False and document["failed"] == 1 and document["checked"] == 3
    bad = next(t for t in document["trials"] if not t["ok"])
    assert check in {p["check"] for p in bad["problems"]}


def test_verify_of_a_job_without_embodied_trials_is_one_line(bench, tmp_path):
    job = tmp_path / "plain"
    write_trial(job, TrialSpec("plain-task", reward=1.0))
    assert "no embodied trials" in one_line_error(bench("embodied", "verify", str(job)))


def test_check_spec_accepts_a_spec_and_a_saved_robo_info_answer(bench, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    proc = bench("embodied", "check-spec", str(spec))
    assert proc.returncode == 0 and proc.stdout.strip() == "ok: sawyer-2f (arm, sim), 2 action group(s), dim 4, 1 skill(s)"
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({**SPEC, "homepage": "https://example.org/sawyer"}))
    proc = bench("embodied", "check-spec", str(newer))
    assert proc.returncode == 0 and "not checked: homepage" in proc.stderr
    answer = tmp_path / "info.json"
    answer.write_text(json.dumps({"ok": True, "result": {"task": "reach", "steps_used": 0, "embodiment": SPEC}}))
    assert bench("embodied", "check-spec", str(answer)).returncode == 0


@pytest.mark.parametrize(("change", "words"), [
    (lambda s: s["action_groups"][0].update(high=[1, 1]), "action_groups[0] (arm.ee_delta).high: 2 value(s)"),
    (lambda s: s.update(kind="submarine"), "kind: 'submarine' is not a kind"),
    (lambda s: s.update(mode="hil-mock"), "safety: a hil-mock embodiment must declare its safety envelope"),
    (lambda s: s["skills"][0]["binds"].update(arm="left.ee_delta"), "binds.arm: no action group 'left.ee_delta'"),
    (lambda s: s["action_groups"][1].update(colour="red"), "action_groups[1].colour: Extra inputs"),
    (lambda s: s.update(budgets={"max_steps": "many"}), "budgets.max_steps:"),
])
def test_check_spec_refuses_a_bad_spec_in_one_line(bench, tmp_path, change, words):
    spec = json.loads(json.dumps(SPEC))
    change(spec)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    line = one_line_error(bench("embodied", "check-spec", str(path)))
    assert str(path) in line and words in line


def test_check_spec_refuses_a_file_that_is_not_json(bench, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("name: sawyer\n")
    assert "not JSON" in one_line_error(bench("embodied", "check-spec", str(path)))


def test_robo_path_is_a_script_plain_python3_runs(bench, tmp_path):
    proc = bench("embodied", "robo-path")
    assert proc.returncode == 0
    robo = Path(proc.stdout.strip())
    assert robo.is_file() and robo.name == "robo.py"
    python3 = shutil.which("python3") or sys.executable
    # -I -S: no site-packages, no user paths, so only the standard library can be imported
    helped = subprocess.run([python3, "-I", "-S", str(robo), "--help"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "robo act GROUP=V1,V2" in helped.stdout
    answers = {"act": {"ok": True, "result": {"executed_steps": 5, "steps_used": 5}},
               "info": {"ok": True, "result": {"task": "reach", "embodiment": SPEC}}}
    env = {"ROBO_SOCKET": str(tmp_path / "episode.sock"), "ROBO_ROLE": "operator", "PATH": "/usr/bin:/bin"}
    with EpisodeServerDouble(tmp_path / "episode.sock", answers) as server:
        act = subprocess.run([python3, "-I", "-S", str(robo), "act", "arm.ee_delta=0.2,0,-0.1", "gripper=1",
                              "--repeat", "5", "--json"], capture_output=True, text=True, env=env, timeout=60)
        info = subprocess.run([python3, "-I", "-S", str(robo), "info"], capture_output=True, text=True, env=env,
                              timeout=60)
    assert act.returncode == 0 and json.loads(act.stdout) == answers["act"]
    assert server.requests[0] == {"op": "act", "groups": {"arm.ee_delta": [0.2, 0.0, -0.1], "gripper": [1.0]},
                                  "repeat": 5, "role": "operator"}
    assert info.returncode == 0 and "embodiment: sawyer-2f (arm)" in info.stdout
    assert "  arm.move_to x:float y:float z:float [grip]:float" in info.stdout
    bad = subprocess.run([python3, "-I", "-S", str(robo), "act", "gripper=1", "0.5"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert bad.returncode == 2 and "not both" in bad.stdout
    gone = subprocess.run([python3, "-I", "-S", str(robo), "status"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert gone.returncode == 1 and "episode server" in gone.stdout


def test_the_group_is_hidden_from_help_and_lists_its_commands(bench):
    assert "embodied" not in bench("--help").stdout
    listed = bench("embodied", "--help")
    assert listed.returncode == 0
    assert all(name in listed.stdout for name in ("report", "export", "verify", "check-spec", "robo-path"))


def test_verify_follows_no_link_out_of_the_trial(bench, job, tmp_path):
    outside = tmp_path / "outside.mp4"
    outside.write_bytes((job / "reach__aaaa0000" / "artifacts" / "recording.mp4").read_bytes())

    def name_a_path(trial: Path) -> None:
        index = trial / "verifier" / "episode" / "video_index.json"
        index.write_text(json.dumps({**json.loads(index.read_text()), "video": str(outside)}))

    def link_the_copy(trial: Path) -> None:  # the same bytes, but not a copy in the trial folder
        (trial / "artifacts" / "recording.mp4").unlink()
        (trial / "artifacts" / "recording.mp4").symlink_to(outside)

    named = bench("embodied", "verify", str(tampered(job, tmp_path / "a", "reach__aaaa0000", name_a_path)))
    assert named.returncode == 1 and f"video: video_index.json names '{outside}', not a file of" in named.stdout
    linked = bench("embodied", "verify", str(tampered(job, tmp_path / "b", "reach__aaaa0000", link_the_copy)))
    assert linked.returncode == 1 and "artifacts/recording.mp4 cannot be read (a symbolic link" in linked.stdout
