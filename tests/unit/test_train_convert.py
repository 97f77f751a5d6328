"""bench train convert / validate on job folders shaped like real runs (tests/fixtures/train_jobs.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchflow.errors import UserError
from benchflow.train.advantage import advantages
from benchflow.train.convert import ConvertOptions, RowCountMismatch, convert
from benchflow.train.validate import ValidateOptions, validate
from tests.fixtures.jobgen import write_job
from tests.fixtures.train_jobs import TOOLS, conversation, exchange, rollout

FORMATS = {"prime-sft": "jsonl", "trl-sft": "jsonl", "skyrl-sft": "jsonl", "openenv-episodes": "jsonl",
           "verl-sft": "parquet"}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def jobs(tmp_path: Path) -> Path:
    root = tmp_path / "jobs"
    write_job(root, "job-a", [
        rollout("alpha", 1.0, suffix="a0000001", calls=2),
        rollout("alpha", 0.0, suffix="a0000002"),
        rollout("alpha", 0.0, suffix="a0000003"),
        rollout("beta", None, suffix="b0000001"),
        rollout("beta", 1.0, suffix="b0000002", error="agent crashed", error_category="other"),
        rollout("gamma", 1.0, suffix="c0000001", result={"partial_trajectory": True}),
        rollout("delta", 1.0, suffix="d0000001",
                llm_exchanges=[exchange([{"role": "user", "content": "hi"}], {}, status=429)]),
    ])
    return root


def test_prime_sft_golden_row(jobs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    doc = convert(ConvertOptions(source=jobs, out=out, canonical_selection=_select(tmp_path, ["alpha__a0000001"])))
    (row,) = rows(out)
    assert row == {
        "messages": [
            {"role": "system", "content": "You are a careful agent."},
            {"role": "user", "content": "Solve alpha. " + "x" * 40},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_alpha_0", "type": "function",
                 "function": {"name": "bash", "arguments": "{\"command\": \"echo step 0\"}"}}]},
            {"role": "tool", "content": "step 0\n", "tool_call_id": "call_alpha_0"},
            {"role": "assistant", "content": "Done. " + "y" * 40}],
        "tool_defs": TOOLS,
        "task_name": "alpha", "source": "benchflow-llm-trajectory",
        "source_path": "job-a/alpha__a0000001/trajectory/llm_trajectory.jsonl", "exchange_index": 1,
        "reward": 1.0, "score": 1.0, "model": "gpt-4o-mini", "agent": "fake-acp",
        "token_usage": {"n_tool_calls": 8, "n_skill_invocations": 0, "n_prompts": 1, "n_input_tokens": 1200,
                        "n_output_tokens": 0, "n_cache_read_tokens": 0, "n_cache_creation_tokens": 0,
                        "cost_usd": 0.01, "usage_source": "provider_response", "price_source": "litellm",
                        "usage_details": {}, "total_tokens": 1200}}
    assert doc["rows_written"] == 1 and doc["skipped_not_selected"] == 6


def _select(tmp_path: Path, names: list[str]) -> Path:
    path = tmp_path / "canonical-selection.json"
    path.write_text(json.dumps({"trials": names}))
    return path


def test_row_rules_skip_reasons_and_manifest(jobs: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.json"
    convert(ConvertOptions(source=jobs, out=tmp_path / "out.jsonl", manifest=manifest))
    doc = json.loads(manifest.read_text())
    assert doc["rollouts_seen"] == 7
    assert doc["rows_written"] == 4  # alpha x3 and the unscored beta
    assert doc["skipped_terminal_error"] == 2  # the agent error and the partial trajectory
    assert doc["skipped_provider_error"] == 1  # only a 429
    assert doc["rows_with_tool_calls"] == 4
    assert doc["sources"] == [{"job": "job-a", "rollouts": 7}]
    tasks = [r["task_name"] for r in rows(tmp_path / "out.jsonl")]
    assert sorted(tasks) == ["alpha", "alpha", "alpha", "beta"]


def test_min_reward_and_exchange_rows(jobs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    convert(ConvertOptions(source=jobs, out=out, min_reward=1.0, row_mode="exchange"))
    found = rows(out)
    assert [r["exchange_index"] for r in found] == [0, 1]  # alpha a0000001 has two calls
    assert [m["role"] for m in found[0]["messages"]] == ["system", "user", "assistant"]


def test_group_advantage_by_hand(jobs: Path, tmp_path: Path) -> None:
    out = tmp_path / "grpo.jsonl"
    convert(ConvertOptions(source=jobs, out=out, group_advantage="grpo"))
    by_trial = {r["source_path"].split("/")[1]: r for r in rows(out)}
    std = math.sqrt(((1 - 1 / 3) ** 2 + 2 * (0 - 1 / 3) ** 2) / 2)  # sample std of 1, 0, 0
    assert by_trial["alpha__a0000001"]["advantage"] == pytest.approx((1 - 1 / 3) / (std + 1e-4))
    assert by_trial["alpha__a0000002"]["advantage"] == pytest.approx((0 - 1 / 3) / (std + 1e-4))
    assert by_trial["alpha__a0000001"]["group"] == "task=alpha|agent=fake-acp|model=gpt-4o-mini|job=job-a"
    assert "advantage" in by_trial["beta__b0000001"] and by_trial["beta__b0000001"]["advantage"] is None
    out = tmp_path / "loo.jsonl"
    convert(ConvertOptions(source=jobs, out=out, group_advantage="loo", group_by="task"))
    by_trial = {r["source_path"].split("/")[1]: r for r in rows(out)}
    assert by_trial["alpha__a0000001"]["advantage"] == pytest.approx(1.0)  # 1 - mean(0, 0)
    assert by_trial["alpha__a0000003"]["advantage"] == pytest.approx(-0.5)  # 0 - mean(1, 0)
    assert by_trial["beta__b0000001"]["group"] == "task=beta"


def test_advantage_singletons_and_unscored() -> None:
    assert advantages([0.7], "grpo") == [0.0]
    assert advantages([0.7], "loo") == [None]
    assert advantages([None, 1.0, 0.0], "loo") == [None, 1.0, -1.0]


def test_expected_rows_fails_before_anything_is_written(jobs: Path, tmp_path: Path) -> None:
    out, manifest = tmp_path / "out.jsonl", tmp_path / "m.json"
    with pytest.raises(RowCountMismatch, match="makes 4 row"):
        convert(ConvertOptions(source=jobs, out=out, manifest=manifest, expected_rows=5))
    assert not out.exists() and not manifest.exists()
    assert list(tmp_path.iterdir()) == [jobs]  # no temporary file left either
    convert(ConvertOptions(source=jobs, out=out, expected_rows=4))
    assert len(rows(out)) == 4


def test_banned_keys_stripped_roles_limited_ids_made_consistent(tmp_path: Path) -> None:
    messages = [{"role": "developer", "content": "rules"}, {"role": "user", "content": "go"},
                {"role": "assistant", "content": "", "reasoning_content": "secret plan", "tool_calls": [
                    {"id": "dup", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
                    {"id": "dup", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "dup", "content": "one"},
                {"role": "tool", "tool_call_id": "dup", "content": "two"},
                {"role": "tool", "tool_call_id": "dup", "content": "two, more"},
                {"role": "critic", "content": "dropped"}]
    answer = {"role": "assistant", "content": "ok", "thinking_blocks": [{"t": 1}], "provider_specific_fields": {},
              "function_call": {"name": "x"}}
    spec = rollout("eps", 1.0, suffix="e0000001", llm_exchanges=[exchange(messages, answer)],
                   result={"agent_result": {"usage_details": {"gold": "42", "gold_solution": "x"},
                                            "total_tokens": 5}})
    write_job(tmp_path / "jobs", "j", [spec])
    out = tmp_path / "out.jsonl"
    doc = convert(ConvertOptions(source=tmp_path / "jobs", out=out))
    (row,) = rows(out)
    assert row["messages"] == [
        {"role": "system", "content": "rules"}, {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "dup", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
            {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "content": "one", "tool_call_id": "dup"},
        {"role": "tool", "content": "two\ntwo, more", "tool_call_id": "call_2"},
        {"role": "assistant", "content": "ok"}]
    assert row["token_usage"] == {"usage_details": {}, "total_tokens": 5}
    assert doc["tool_call_ids_rewritten"] == 2 and doc["tool_messages_merged"] == 1
    assert "secret plan" not in out.read_text()


def test_redaction_on_by_default(tmp_path: Path) -> None:
    secret = "sk-proj-" + "Z" * 30
    lines = conversation("red", 1)
    lines[0]["request"]["body"]["messages"][1]["content"] = f"use OPENAI_API_KEY={secret}"
    write_job(tmp_path / "jobs", "j", [rollout("red", 1.0, llm_exchanges=lines)])
    convert(ConvertOptions(source=tmp_path / "jobs", out=tmp_path / "red.jsonl"))
    assert secret not in (tmp_path / "red.jsonl").read_text()
    convert(ConvertOptions(source=tmp_path / "jobs", out=tmp_path / "raw.jsonl", redact=False))
    assert secret in (tmp_path / "raw.jsonl").read_text()


def test_trl_rows_split_prompt_and_completion(jobs: Path, tmp_path: Path) -> None:
    out = tmp_path / "trl.jsonl"
    convert(ConvertOptions(source=jobs, out=out, format="trl-sft", reward_vector=True))
    row = next(r for r in rows(out) if r["source_rollout_dir"] == "job-a/alpha__a0000001")
    assert row["completion"] == [{"role": "assistant", "content": "Done. " + "y" * 40}]
    assert [m["role"] for m in row["prompt"]] == ["system", "user", "assistant", "tool"]
    assert row["tools"] == TOOLS and row["task_id"] == "alpha" and row["call_purpose"] == "agent"
    assert row["reward_vector"]["names"] == ["reward"] and row["reward_vector"]["values"] == [1.0]
    unscored = next(r for r in rows(out) if r["task_id"] == "beta")
    assert unscored["reward_vector"] is None and "reward" not in unscored


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_everything_convert_writes_passes_validate(jobs: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"out.{FORMATS[fmt]}"
    doc = convert(ConvertOptions(source=jobs, out=out, format=fmt, group_advantage="grpo"))
    report = validate(ValidateOptions(path=out, format=fmt, expected_rows=doc["rows_written"], source_jobs=jobs,
                                      require_llm_trajectory=True, require_tool_calls=True))
    assert report["ok"], report["problems"]
    assert report["rows"] == 4


def test_verl_parquet_has_the_columns_verl_reads(jobs: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "verl.parquet"
    convert(ConvertOptions(source=jobs, out=out, format="verl-sft"))
    table = pq.read_table(out)
    assert {"messages", "tools"} <= set(table.column_names)
    first = table.to_pylist()[0]
    assert [m["role"] for m in first["messages"]][-1] == "assistant"
    assert json.loads(first["tools"]) == TOOLS


def test_validate_names_each_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    bad = [
        {"messages": [{"role": "user", "content": "q"}, {"role": "critic", "content": "a"}]},
        {"messages": [{"role": "user", "content": "q", "reasoning_content": "x"},
                      {"role": "assistant", "content": "a"}]},
        {"messages": [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "nope", "content": "r"},
                      {"role": "assistant", "content": "a"}]},
        {**good, "gold": "answer"},
        {**good, "reward": "1.0"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in [good, *bad]) + "\nnot json\n")
    report = validate(ValidateOptions(path=path, expected_rows=7))
    problems: dict[int, str] = {}
    for problem in report["problems"]:
        problems[problem["row"]] = problems.get(problem["row"], "") + problem["problem"] + "; "
    assert not report["ok"] and report["bad_rows"] == 6 and 1 not in problems
    assert "role 'critic'" in problems[2] and "banned key reasoning_content" in problems[3]
    assert "answers 'nope'" in problems[4] and "banned key gold" in problems[5]
    assert "not a number" in problems[6] and "not valid JSON" in problems[7]


def test_bad_options_are_one_line_user_errors(jobs: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    for options, words in [
        ({"format": "nope"}, "--format"), ({"group_advantage": "ppo"}, "grpo or loo"),
        ({"group_by": "task,color"}, "'color'"), ({"pairs": tmp_path / "p.jsonl"}, "branch-tree only"),
        ({"subagent_rows": True, "format": "openenv-episodes"}, "subagent"),
        ({"format": "branch-tree"}, "no branch records"),
        ({"context_policy": "message-window"}, "--tokenizer"),
    ]:
        with pytest.raises(UserError, match=words) as caught:
            convert(ConvertOptions(source=jobs, out=out, **options))
        assert "\n" not in str(caught.value)
    assert not out.exists()


def test_message_window_with_a_local_tokenizer(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(["system user assistant tool solve done step echo"],
                                  trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
    tokenizer_path = tmp_path / "tokenizer.json"
    tokenizer.save(str(tokenizer_path))
    lines = conversation("win", 2)
    first_turn = lines[1]["request"]["body"]["messages"]
    lines[1]["request"]["body"]["messages"] = first_turn + [{"role": "user", "content": "now say done"}]
    write_job(tmp_path / "jobs", "j", [rollout("win", 1.0, llm_exchanges=lines)])
    out = tmp_path / "w.jsonl"
    common = {"format": "trl-sft", "context_policy": "message-window", "tokenizer": str(tokenizer_path)}
    convert(ConvertOptions(source=tmp_path / "jobs", out=out, max_length=10_000, **common))
    assert [m["role"] for m in rows(out)[0]["prompt"]] == ["system", "user", "assistant", "tool", "user"]
    convert(ConvertOptions(source=tmp_path / "jobs", out=out, max_length=120, **common))
    (row,) = rows(out)
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]  # the older turn no longer fits
    assert validate(ValidateOptions(path=out, format="trl-sft", tokenizer=str(tokenizer_path),
                                    max_length=120))["ok"]
    assert not validate(ValidateOptions(path=out, format="trl-sft", tokenizer=str(tokenizer_path),
                                        max_length=20))["ok"]


def _subagent_rollout() -> list[dict]:
    """A parent that spawns a subagent with the Task tool; the subagent's two calls come between the parent's."""
    parent_open = [{"role": "system", "content": "You are the main agent."}, {"role": "user", "content": "Fix the bug."}]
    task_call = {"id": "toolu_task", "type": "function",
                 "function": {"name": "Task", "arguments": json.dumps({"description": "look", "prompt": "Find the bug."})}}
    sub_open = [{"role": "system", "content": "You are a search subagent."}, {"role": "user", "content": "Find the bug."}]
    grep = {"id": "toolu_grep", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"grep -rn bug\"}"}}
    return [
        exchange(parent_open, {"role": "assistant", "content": None, "tool_calls": [task_call]}, index=0),
        exchange(sub_open, {"role": "assistant", "content": None, "tool_calls": [grep]}, index=1),
        exchange([*sub_open, {"role": "assistant", "content": None, "tool_calls": [grep]},
                  {"role": "tool", "tool_call_id": "toolu_grep", "content": "a.py:3: bug"}],
                 {"role": "assistant", "content": "It is in a.py line 3."}, index=2),
        exchange([*parent_open, {"role": "assistant", "content": None, "tool_calls": [task_call]},
                  {"role": "tool", "tool_call_id": "toolu_task", "content": "It is in a.py line 3."}],
                 {"role": "assistant", "content": "Fixed a.py."}, index=3),
    ]


def test_subagent_conversations_are_rows_of_their_own_only_when_asked(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    write_job(root, "job-s", [rollout("sub", 1.0, suffix="s0000001", llm_exchanges=_subagent_rollout())])
    out = tmp_path / "rows.jsonl"
    for mode in ("rollout", "exchange"):
        convert(ConvertOptions(source=root, out=out, row_mode=mode))
        parent_only = rows(out)
        assert all("subagent" not in r for r in parent_only)
        assert all(r["messages"][0]["content"] == "You are the main agent." for r in parent_only)
        assert len(parent_only) == (1 if mode == "rollout" else 2)
    doc = convert(ConvertOptions(source=root, out=out, subagent_rows=True))
    parent, sub = rows(out)
    assert "subagent" not in parent and parent["messages"][-1]["content"] == "Fixed a.py."
    assert sub["subagent"] == {"thread": 1, "tool_call_id": "toolu_task", "tool_name": "Task"}
    assert [m["role"] for m in sub["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert sub["messages"][-1]["content"] == "It is in a.py line 3."
    assert doc["subagent_rows"] == 1 and doc["rows_written"] == 2
    convert(ConvertOptions(source=root, out=out, subagent_rows=True, row_mode="exchange"))
    assert [r.get("subagent", {}).get("thread", 0) for r in rows(out)] == [0, 1, 1, 0]
