"""``bench eval continue`` / ``continue-batch`` end to end on Docker, from a trial ``bench run`` timed out.

The agent is the OpenHands stand-in (``tests/doubles/fake_openhands.py``: OpenHands' loop over Chat
Completions, its conversation persisted in OpenHands' event format), installed from a user agent
file named ``openhands``; its model is the scripted OpenAI server (``tests/doubles/scripted_openai.py``)
behind the job's gateway. The task's one tool call takes longer than the agent's budget, so the
original trial times out after one recorded model call with the work unfinished (reward 0).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_bench
from tests.doubles.scripted_common import Work
from tests.doubles.scripted_openai import ScriptedOpenAI
from tests.taskgen import make_task

UPSTREAM_KEY = "sk-proj-UPSTREAMSECRET" + "c" * 30
WORK = Work(command="sleep 12; printf hello > /app/out.txt", summary="Done: out.txt is written.")
TEST = ("cp -r /home/agent/.openhands /logs/verifier/openhands 2>/dev/null; "
        'if [ "$(cat /app/out.txt 2>/dev/null)" = hello ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt')


def stand_in_agent(folder: Path) -> Path:
    """A user agents folder whose ``openhands`` is the stand-in (it replaces the built-in entry by name)."""
    import tomli_w

    source = (ROOT / "tests" / "doubles" / "fake_openhands.py").read_text()
    script = f"mkdir -p /opt/benchflow && cat > /opt/benchflow/fake_openhands.py <<'BENCHFLOW_EOF'\n{source}\nBENCHFLOW_EOF\n"
    folder.mkdir()
    (folder / "openhands.toml").write_text(tomli_w.dumps({
        "name": "openhands", "description": "TEST DOUBLE: OpenHands stand-in", "protocol": "acp",
        "launch": "python3 /opt/benchflow/fake_openhands.py", "install": {"kind": "script", "script": script},
        "env": {"FAKE_OPENHANDS_STREAM": "1"},
        "gateway": {"api": "openai-completions", "base_url_env": ["LLM_BASE_URL"], "api_key_env": ["LLM_API_KEY"],
                    "model_env": ["LLM_MODEL"]},
        "model": {"format": "provider/model", "via": "env"}}))
    return folder


def files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def events(trial: Path) -> list[tuple]:
    """The stand-in's persisted OpenHands events (the verifier copied its conversation out)."""
    [conversation] = (trial / "verifier" / "openhands" / "conversations").iterdir()
    return [(e["kind"], e.get("tool_call_id"), (e.get("action") or {}).get("command"))
            for e in (json.loads(p.read_text()) for p in sorted((conversation / "events").glob("event-*.json")))]


def lines(path: Path) -> list[dict]:
    return [json.loads(text) for text in path.read_text().splitlines()]


@pytest.mark.docker
def test_a_timed_out_trial_is_replayed_continued_and_scored(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "hello", dockerfile="FROM benchflow/python:3.11-bookworm\nWORKDIR /app\n",
              agent_timeout=6, test=TEST, prompt="Write hello to /app/out.txt.")
    jobs = tmp_path / "jobs"
    with ScriptedOpenAI(WORK) as provider:
        env = {"BENCHFLOW_AGENTS_DIR": str(stand_in_agent(tmp_path / "agents")), "OPENAI_API_KEY": UPSTREAM_KEY,
               "OPENAI_BASE_URL": provider.url + "/v1"}
        ran = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs), "-a", "openhands",
                        "-m", "gpt-4o-mini", "--retry-attempts", "0", env=env)
        assert "Traceback" not in ran.stderr, ran.stderr
        original = next(jobs.rglob("result.json")).parent
        before = json.loads((original / "result.json").read_text())
        assert before["error_category"] == "timeout" and before["rewards"]["reward"] == 0.0
        assert len(lines(original / "trajectory" / "llm_trajectory.jsonl")) == 1
        snapshot = files(original)

        # --- continue: replay the one recorded call, then go on with the live (scripted) model
        n_before = len(provider.calls)
        done = run_bench("eval", "continue", str(original), "--timeout", "120", env=env)
        assert done.returncode == 0, done.stderr + done.stdout
        assert [c.kind for c in provider.calls[n_before:]] == ["final"]  # the first call came from the recording
        out = done.stdout.splitlines()
        continued = Path(out[0].removeprefix("continued run written to "))
        assert continued.parent == original.parent / "continued" / original.parent.name
        assert out[1:3] == ["replayed 1 of 1 recorded call(s); 1 live call(s); 0 divergence(s)", "reward: 1.0"]
        result = json.loads((continued / "result.json").read_text())
        assert result["rewards"]["reward"] == 1.0 and result["error"] is None
        assert result["continued"] | {"replayed_tokens": None} == {
            "from_trial": str(original), "from_error_category": "timeout", "from_reward": 0.0,
            "live_model": "gpt-4o-mini", "replay_only": False, "strict_divergence": False, "recorded_calls": 1,
            "replayed_calls": 1, "live_calls": 1, "cut_point_reached": True, "divergences": [],
            "replayed_tokens": None}
        config = json.loads((continued / "config.json").read_text())
        assert config["continued_from"] == str(original) and config["agent"] == "openhands"
        assert config["config_override"]["patch"] == {"agent": {"timeout_sec": 120}}
        calls = lines(continued / "trajectory" / "llm_trajectory.jsonl")
        assert [c["metadata"].get("replayed", {}).get("call") for c in calls] == [1, None]
        assert calls[1]["request"]["body"]["stream"] is True and calls[1]["response"]["status_code"] == 200
        rebuilt, first = events(continued), events(original)
        assert rebuilt[:len(first)] == first  # the stand-in's own conversation, rebuilt call for call
        assert [kind for kind, *_ in rebuilt[len(first):]] == ["ObservationEvent", "MessageEvent"]
        assert files(original) == snapshot  # the original is never written to
        assert UPSTREAM_KEY not in "".join(p.read_text(errors="replace") for p in jobs.rglob("*") if p.is_file())

        # --- --replay-only: no provider at all; the workspace is rebuilt and the agent stopped at the cut point
        bare = {"BENCHFLOW_AGENTS_DIR": env["BENCHFLOW_AGENTS_DIR"], "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
        n_before = len(provider.calls)
        replayed = run_bench("eval", "continue", str(original), "--replay-only", "--timeout", "120",
                             "--output", str(tmp_path / "replay-only"), env=bare)
        assert replayed.returncode == 0, replayed.stderr + replayed.stdout
        assert provider.calls[n_before:] == []
        assert "replay-only: stopped at the cut point" in replayed.stdout
        trial = Path(replayed.stdout.splitlines()[0].removeprefix("continued run written to "))
        assert trial.is_relative_to(tmp_path / "replay-only")
        result = json.loads((trial / "result.json").read_text())
        assert result["rewards"]["reward"] == 1.0 and result["error"] is None  # the replayed call did the work
        assert (result["continued"]["live_calls"], result["continued"]["cut_point_reached"]) == (0, True)
        assert result["continued"]["live_model"] is None and result["continued"]["replay_only"] is True

        # --- --strict-divergence: a recording the agent cannot follow fails at its first call, with one line
        tampered = jobs / "tampered-job" / original.name
        shutil.copytree(original, tampered)
        recording = tampered / "trajectory" / "llm_trajectory.jsonl"
        exchange = json.loads(recording.read_text())
        exchange["request"]["body"]["messages"].append({"role": "user", "content": "never sent"})
        recording.write_text(json.dumps(exchange) + "\n")
        strict = run_bench("eval", "continue", str(tampered), "--strict-divergence", env=env)
        assert strict.returncode == 1 and strict.stdout == ""
        [failed] = (tampered.parent / "continued" / "tampered-job").glob("hello__*")
        assert strict.stderr.splitlines() == [
            f"error: {tampered}: replay diverged at recorded call 1 (llm_trajectory.jsonl line 1): the agent sent 2 "
            f"messages, the recording 3 (--strict-divergence); recorded in {failed}"]
        result = json.loads((failed / "result.json").read_text())
        assert result["error_category"] == "replay_divergence" and result["rewards"] is None

        # --- continue-batch (the deprecated spelling): every timed-out trial not yet continued
        n_before = len(provider.calls)
        batch = run_bench("continue-batch", str(jobs), "--timeout", "120", env=env)
        assert batch.returncode == 0, batch.stderr + batch.stdout
        assert batch.stderr.splitlines()[0] == "bench continue-batch: Deprecated; use bench eval continue-batch."
        summary = json.loads(batch.stdout)
        assert (summary["total"], summary["succeeded"], summary["failed"], summary["skipped"]) == (1, 1, 0, 1)
        assert summary["skips"] == [{"folder": str(original), "reason": f"already continued in {continued}"}]
        [output] = summary["outputs"]
        result = json.loads((Path(output) / "result.json").read_text())
        assert result["continued"]["from_trial"] == str(tampered) and result["rewards"]["reward"] == 1.0
        assert result["continued"]["divergences"] == [{"call": 1, "line": 1, "sent_messages": 2,
                                                       "recorded_messages": 3}]  # noted, served anyway
        assert [c.kind for c in provider.calls[n_before:]] == ["final"]
