"""``bench branch`` with an ACP agent (the fake ACP agent, a test double) whose model calls go through the
job's gateway to a fake upstream: each child's ``llm_trajectory.jsonl`` holds only its own calls, and with
``--resume-session`` each child reloads the parent's conversation (ACP ``session/load``) from the snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.doubles.fake_model_server import FakeModelServer
from tests.integration.test_agent_pipeline import PYTHON_IMAGE, UPSTREAM_KEY, fake_agent_file
from tests.taskgen import make_task

pytestmark = pytest.mark.docker

STEPS = [{"op": "report_history"}, {"op": "ask_model", "api": "openai"},
         {"op": "tool", "id": "w", "write": {"path": "answer.txt", "content": "42"}}]


def _branch(bench, tmp_path: Path, script: dict, *extra: str):
    make_task(tmp_path / "tasks", "acp-branch", dockerfile=PYTHON_IMAGE, network="no-network",
              test='[ -f /app/answer.txt ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt')
    agent = fake_agent_file(tmp_path, env={"FAKE_ACP_SCRIPT": json.dumps(script)})
    with FakeModelServer() as upstream:
        done = bench("branch", "--tasks-dir", str(tmp_path / "tasks"), "--agent", str(agent), "-m", "gpt-4o-mini",
                     "--sandbox", "docker", "--jobs-dir", str(tmp_path / "jobs"), "--prompt", "parent says hello",
                     "--checkpoint-after-prompt", "1", "--child", "label=a,prompt=child a asks",
                     "--child", "label=b,prompt=child b asks", *extra,
                     env={"OPENAI_API_KEY": UPSTREAM_KEY, "OPENAI_BASE_URL": upstream.url + "/v1"})
        calls = len(upstream.requests)
    assert "Traceback" not in done.stderr, done.stderr
    [trial] = list((tmp_path / "jobs").glob("branch-*/acp-branch__*"))
    return done, trial, calls


def _asked(folder: Path) -> list[str]:
    """The user text of every model call recorded in the folder's llm_trajectory.jsonl."""
    path = folder / "trajectory" / "llm_trajectory.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
    return [m["content"] for row in rows for m in row["request"]["body"]["messages"] if m["role"] == "user"]


def _messages(folder: Path) -> list[str]:
    path = folder / "trajectory" / "acp_trajectory.jsonl"
    return [e["text"] for e in map(json.loads, path.read_text().splitlines()) if e["type"] == "agent_message"]


def test_children_record_only_their_own_model_calls_and_reload_the_parents_session(bench, tmp_path: Path) -> None:
    done, trial, calls = _branch(bench, tmp_path, {"load_session": True, "prompts": [STEPS]}, "--resume-session")
    assert done.returncode == 0, done.stderr + done.stdout
    children = {n: trial / "branches/fork-0/children" / n for n in ("a", "b")}
    assert _asked(trial) == ["parent says hello"]
    assert _asked(children["a"]) == ["child a asks"]
    assert _asked(children["b"]) == ["child b asks"]
    assert calls == 3
    # each child continued the parent's conversation, not its sibling's: b restored the snapshot first
    assert _messages(children["a"])[0].startswith('history:["parent says hello", "child a asks"]')
    assert _messages(children["b"])[0].startswith('history:["parent says hello", "child b asks"]')
    tree = json.loads((trial / "tree.json").read_text())
    assert tree["resume_session"] is True and tree["forks"][0]["session_id"]
    for child in children.values():
        assert json.loads((child / "observation.json").read_text())["reward"] == 1.0
        blob = "".join(p.read_text(errors="replace") for p in child.rglob("*") if p.is_file())
        assert UPSTREAM_KEY not in blob


def test_resume_session_is_refused_when_the_agent_does_not_advertise_load_session(bench, tmp_path: Path) -> None:
    done, trial, calls = _branch(bench, tmp_path, {"prompts": [STEPS]}, "--resume-session")
    assert done.returncode == 1
    result = json.loads((trial / "result.json").read_text())
    assert result["error_category"] == "agent_integration" and "does not advertise loadSession" in result["error"]
    assert calls == 1  # the parent's prompt only: no child started
    assert not list(trial.glob("branches/fork-0/children/*/observation.json"))


def test_a_checkpoint_retry_resumes_the_trials_conversation_at_the_checkpoint(bench, tmp_path: Path) -> None:
    """bench run --checkpoints prompt:1: prompt 2 continues prompt 1's session; the trial fails; the retry
    reloads the session as it was at the checkpoint and passes (the verifier wants exactly that history)."""
    make_task(tmp_path / "tasks", "acp-retry", dockerfile=PYTHON_IMAGE, network="no-network",
              test="""grep -qx '\\["p1", "try again"\\]' /app/history.json && echo 1 > /logs/verifier/reward.txt \
|| echo 0 > /logs/verifier/reward.txt; cat /app/history.json""")
    script = {"load_session": True, "prompts": [[{"op": "save_history"}, {"op": "ask_model", "api": "openai"}]]}
    agent = fake_agent_file(tmp_path, env={"FAKE_ACP_SCRIPT": json.dumps(script)})
    with FakeModelServer() as upstream:
        done = bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs"),
                     "-a", str(agent), "-m", "gpt-4o-mini", "--prompt", "p1", "--prompt", "p2",
                     "--checkpoints", "prompt:1", "--retry-from-checkpoint", "on-failure",
                     "--retry-prompt", "try again", "--retry-resume-session",
                     env={"OPENAI_API_KEY": UPSTREAM_KEY, "OPENAI_BASE_URL": upstream.url + "/v1"})
    assert done.returncode == 0, done.stderr + done.stdout
    [result_path] = list((tmp_path / "jobs").rglob("result.json"))
    trial = result_path.parent
    try:
        result = json.loads(result_path.read_text())
        assert result["rewards"]["reward"] == 0.0
        assert (trial / "verifier/test-stdout.txt").read_text().strip() == '["p1", "p2"]'  # one conversation
        assert result["agent_result"]["n_prompts"] == 2
        retry = result["retry"]
        assert (retry["resume_session"], retry["status"], retry["reward"]) == (True, "passed", 1.0)
        assert _asked(trial / retry["path"]) == ["try again"]
        assert _asked(trial) == ["p1", "p2"]
    finally:
        import docker

        client = docker.from_env()
        label = f"benchflow.job={trial.parent.resolve()}"
        for image in client.api.images(filters={"label": [label, "benchflow.kind=snapshot"]}):
            client.api.remove_image(image["Id"], force=True)
        client.close()
