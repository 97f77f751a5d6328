"""``bench train`` on rollouts made by real runs, not written by hand.

``bench run`` drives the scripted ACP agent (tests/doubles/fake_acp_agent.py) in
docker; its model calls go through the job's gateway to the fake upstream
(tests/doubles/fake_model_server.py), which answers the first call with a tool
call and the second (carrying the tool's result) with text. One task passes,
one fails. While the job runs, ``bench train stream --group-size 2`` follows it;
afterwards every format is converted, validated and opened the way its trainer
opens it: TRL rows with ``datasets`` and rendered with a local tokenizer's chat
template, verl parquet with pyarrow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.doubles.fake_model_server import CONTENT, TOOL_ARGS, TOOL_NAME, FakeModelServer
from tests.integration.test_agent_pipeline import PYTHON_IMAGE, UPSTREAM_KEY, fake_agent_file
from tests.taskgen import make_task

pytestmark = pytest.mark.docker

PROMPT = "Create hello.txt with bash."
TOOLS = [{"type": "function", "function": {"name": "bash", "description": "Run a shell command",
                                           "parameters": {"type": "object",
                                                          "properties": {"command": {"type": "string"}}}}}]
FIRST_CALL = {"op": "ask_model", "model": "gpt-4o-mini-tool", "tools": TOOLS,
              "messages": [{"role": "user", "content": PROMPT}]}
SECOND_CALL = {"op": "ask_model", "tools": TOOLS, "messages": [
    {"role": "user", "content": PROMPT},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": TOOL_NAME, "arguments": json.dumps(TOOL_ARGS)}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": ""}]}
SCRIPT = {"prompts": [[FIRST_CALL, {"op": "tool", "id": "call_1", "run": TOOL_ARGS["command"]}, SECOND_CALL,
                       {"op": "message", "text": "done"}]]}
PASS_IF = ('[ -f /app/{name} ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt')


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def real_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """One job of two real rollouts (alpha passes, beta fails), and what stream printed while it ran."""
    tmp = tmp_path_factory.mktemp("train-real")
    make_task(tmp / "tasks", "alpha", dockerfile=PYTHON_IMAGE, network="no-network", test=PASS_IF.format(name="hello.txt"))
    make_task(tmp / "tasks", "beta", dockerfile=PYTHON_IMAGE, network="no-network", test=PASS_IF.format(name="other.txt"))
    jobs, job = tmp / "jobs", tmp / "jobs" / "real"
    env = {**os.environ, "NO_COLOR": "1", "OPENAI_API_KEY": UPSTREAM_KEY}
    with FakeModelServer() as upstream:
        env["OPENAI_BASE_URL"] = upstream.url + "/v1"
        stream = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "train", "stream", str(job),
                                   "--group-size", "2", "--group-by", "job"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        done = run_bench("run", str(tmp / "tasks"), "-s", "docker", "--jobs-dir", str(jobs), "--job-name", "real",
                         "-a", str(fake_agent_file(tmp)), "-m", "gpt-4o-mini", "--capture-tokens",
                         "--agent-env", f"FAKE_ACP_SCRIPT={json.dumps(SCRIPT)}", env=env)
        out, err = stream.communicate(timeout=60)
    assert done.returncode in (0, 1), done.stderr + done.stdout
    assert stream.returncode == 0, err
    return jobs, _lines(out)


def test_stream_follows_the_running_job_and_emits_the_group_with_its_advantage(real_job) -> None:
    _, streamed = real_job
    assert sorted((r["task_name"], r["reward"], r["advantage"]) for r in streamed) == [
        ("alpha", 1.0, pytest.approx(0.7070, abs=1e-3)), ("beta", 0.0, pytest.approx(-0.7070, abs=1e-3))]
    for rec in streamed:  # the gateway asked the upstream for token ids: every call carries them
        assert len(rec["calls"]) == 2 and all(c["prompt_token_ids"] and c["logprobs"] for c in rec["calls"])


def test_every_format_converts_and_validates(real_job, tmp_path: Path) -> None:
    jobs, _ = real_job
    for fmt, ext in {"prime-sft": "jsonl", "trl-sft": "jsonl", "skyrl-sft": "jsonl", "openenv-episodes": "jsonl",
                     "verl-sft": "parquet"}.items():
        out = tmp_path / f"{fmt}.{ext}"
        made = run_bench("train", "convert", str(jobs), "-o", str(out), "--format", fmt)
        assert made.returncode == 0, made.stderr
        checked = run_bench("train", "validate", str(out), "--format", fmt)
        assert checked.returncode == 0, fmt + ": " + checked.stdout + checked.stderr


def test_prime_sft_row_is_the_real_conversation(real_job, tmp_path: Path) -> None:
    jobs, _ = real_job
    out = tmp_path / "rows.jsonl"
    assert run_bench("train", "convert", str(jobs), "-o", str(out), "--min-reward", "1").returncode == 0
    (row,) = _lines(out.read_text())
    assert row["task_name"] == "alpha" and row["reward"] == 1.0 and row["agent"] == "fake-acp"
    assert row["messages"] == [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": TOOL_NAME, "arguments": json.dumps(TOOL_ARGS)}}]},
        {"role": "tool", "content": "", "tool_call_id": "call_1"},
        {"role": "assistant", "content": CONTENT}]
    assert row["tool_defs"] == TOOLS
    assert UPSTREAM_KEY not in out.read_text()


def test_trl_rows_load_with_datasets_and_render_with_a_chat_template(real_job, tmp_path: Path) -> None:
    import datasets
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    jobs, _ = real_job
    out = tmp_path / "trl.jsonl"
    assert run_bench("train", "convert", str(jobs), "-o", str(out), "--format", "trl-sft").returncode == 0
    rows = datasets.load_dataset("json", data_files=str(out), split="train")
    assert len(rows) == 2 and set(rows.column_names) >= {"prompt", "completion", "tools"}
    conversations = [row["prompt"] + row["completion"] for row in rows]  # TRL's conversational prompt-completion
    words = {w for messages in conversations for m in messages for w in (m["content"] or "").split()}
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[UNK]", *sorted(words)])}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    template = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] or '' }}\n{% endfor %}"
                "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=core, chat_template=template, unk_token="[UNK]")
    for messages in conversations:
        text = tokenizer.apply_chat_template(messages, tokenize=False)
        assert text.startswith(f"<|user|>{PROMPT}\n") and "<|assistant|>" in text
        assert tokenizer.apply_chat_template(messages, tokenize=True)


def test_verl_parquet_has_the_columns_verl_multiturn_sft_reads(real_job, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    jobs, _ = real_job
    out = tmp_path / "verl.parquet"
    assert run_bench("train", "convert", str(jobs), "-o", str(out), "--format", "verl-sft").returncode == 0
    table = pq.read_table(out)
    assert table.num_rows == 2 and "messages" in table.column_names
    first = table.to_pylist()[0]["messages"]
    assert [m["role"] for m in first] == ["user", "assistant", "tool", "assistant"]
