"""``--message-tail-truncation`` with a real Hugging Face tokenizer and chat template (a local folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchflow.errors import UserError
from benchflow.train import sft_tail

WORDS = ["[UNK]", "<|", "|>", "user", "assistant", "system", "tool", "call", "do", "it", "ok", "done", "x", "y"]
TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] or '' }}"
            "{% for c in m.get('tool_calls') or [] %} call {{ c['function']['arguments']['cmd'] }}{% endfor %}"
            "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory):
    """One token per word or bracket of the rendering (``<|user|> do it`` is 5 tokens)."""
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    folder = tmp_path_factory.mktemp("tokenizer")
    transformers.PreTrainedTokenizerFast(tokenizer_object=core, chat_template=TEMPLATE,
                                         unk_token="[UNK]").save_pretrained(folder)
    return sft_tail.load_tokenizer(str(folder))


def _row() -> dict:
    """system (4 tokens), user (the instruction, 5), three tool rounds (5 + 4 each), a final answer (4): 40 tokens."""
    messages = [{"role": "system", "content": "x"}, {"role": "user", "content": "do it"}]
    for _ in range(3):
        messages += [{"role": "assistant", "content": "", "tool_calls": [
                          {"id": "c", "type": "function", "function": {"name": "sh", "arguments": '{"cmd": "x"}'}}]},
                     {"role": "tool", "content": "ok"}]
    messages.append({"role": "assistant", "content": "done"})
    return {"messages": messages, "task_name": "t"}


def test_a_row_that_fits_is_left_as_it_is(tokenizer) -> None:
    row = _row()
    messages, before, after = sft_tail.keep_first_user(tokenizer, row, window=100)
    assert messages == row["messages"] and before == after == 39  # 40 tokens, 39 after the shift


def test_keep_first_user_keeps_the_instruction_and_the_longest_tail_that_fits(tokenizer) -> None:
    messages, before, after = sft_tail.keep_first_user(tokenizer, _row(), window=20)
    assert (before, after) == (39, 17)  # user 5 + call 5 + tool 4 + answer 4, less the shift
    assert messages == [_row()["messages"][1], *_row()["messages"][-3:]]
    longer = [messages[0], *_row()["messages"][-4:]]  # one more message does not fit
    assert sft_tail.keep_first_user(tokenizer, {"messages": longer}, window=100)[1] == 21


def test_a_row_whose_instruction_alone_is_too_long_is_refused_with_its_line(tokenizer, tmp_path: Path) -> None:
    rows = [{"messages": [{"role": "user", "content": "do"}]},  # 3 tokens after the shift: fits
            {"messages": [{"role": "user", "content": "do it"}, {"role": "assistant", "content": "ok"}]}]
    with pytest.raises(UserError, match=r"^--data rows.jsonl: line 2: its first user message alone is 4 tokens, "
                                        r"over the window of 3; raise data.seq_len or drop the row$"):
        sft_tail.apply(rows, "keep-first-user", tokenizer, 3, "rows.jsonl")
    with pytest.raises(UserError, match="line 1: 42 tokens over the window of 20, and no user message to keep"):
        sft_tail.apply([{"messages": [m for m in _row()["messages"] if m["role"] != "user"] + [
            {"role": "tool", "content": "ok"}] * 2}], "keep-first-user", tokenizer, 20, "rows.jsonl")


def test_pretokenized_rows_are_the_shifted_token_tail(tokenizer) -> None:
    row = {**_row(), "tool_defs": [{"name": "sh"}], "chat_template_kwargs": {}}
    full = tokenizer(tokenizer.apply_chat_template(sft_tail._with_object_arguments(row["messages"]), tokenize=False),
                     add_special_tokens=False)["input_ids"]
    staged, before, kept, trainable = sft_tail.pretokenize(tokenizer, row, window=10)
    assert (before, kept, trainable) == (40, 10, 9)
    assert staged["benchflow_input_ids"] == full[-10:-1] and staged["benchflow_target_ids"] == full[-9:]
    assert staged["benchflow_loss_mask"] == [True] * 9 and staged["benchflow_position_ids"] == list(range(9))
    assert staged["task_name"] == "t" and not {"messages", "tool_defs", "chat_template_kwargs"} & set(staged)
    assert staged["benchflow_custom_trainer_pretokenized"] == {
        "original_token_count": 40, "staged_token_count": 10, "trainable_token_count": 9}


def test_label_last_assistant_only_trains_the_answer_alone(tokenizer) -> None:
    row = {**_row(), "label_last_assistant_only": True}
    staged, _, _, trainable = sft_tail.pretokenize(tokenizer, row, window=100)
    assert trainable == 1  # "<|assistant|>" is the generation prompt: the answer is "done"
    assert staged["benchflow_loss_mask"][-1] and not any(staged["benchflow_loss_mask"][:-1])


def test_apply_counts_what_it_changed(tokenizer) -> None:
    rows = [_row(), {"messages": [{"role": "user", "content": "do"}, {"role": "assistant", "content": "ok"}]}]
    stats = sft_tail.apply(rows, "keep-first-user", tokenizer, 20, "rows.jsonl")
    assert stats.record() == {"mode": "keep-first-user", "window": 20, "rows": 2, "truncated_rows": 1,
                              "max_tokens_before": 39, "max_tokens_after": 17}
    assert len(rows[0]["messages"]) == 4 and len(rows[1]["messages"]) == 2


def test_a_model_without_a_chat_template_is_refused(tmp_path: Path) -> None:
    import transformers
    from tokenizers import Tokenizer, models

    transformers.PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")),
                                         unk_token="[UNK]").save_pretrained(tmp_path)
    with pytest.raises(UserError, match="has no chat template"):
        sft_tail.load_tokenizer(str(tmp_path))
    with pytest.raises(UserError, match="cannot be loaded"):
        sft_tail.load_tokenizer(str(tmp_path / "missing"))
