"""``bench train run sft --compat-profile`` / ``--message-tail-truncation`` / ``--loss-normalization``.

Prime-RL is the fake ``uv`` (tests/doubles/fake_prime_rl.py); with tests/doubles/prime_rl_double on
``PYTHONPATH`` it runs the double's SFT data loader over the staged rows and its ``compute_loss`` on a fixed
batch, imported the way Prime-RL's trainer imports them, so BenchFlow's run-local shim hooks them as it
would hook Prime-RL's. The rows are measured with a real Hugging Face tokenizer and chat template.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli.test_cli_train import _checkout
from tests.conftest import ROOT, run_bench

DOUBLE = ROOT / "tests" / "doubles" / "prime_rl_double"
WORDS = ["[UNK]", "<|", "|>", "user", "assistant", "system", "tool", "call", "do", "it", "ok", "done", "x"]
TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] or '' }}"
            "{% for c in m.get('tool_calls') or [] %} call {{ c['function']['arguments']['cmd'] }}{% endfor %}"
            "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")
PROFILE = "env0-mobile300-pr828"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local model folder holding only a tokenizer (one token per word or bracket) and its chat template."""
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    folder = tmp_path_factory.mktemp("model")
    transformers.PreTrainedTokenizerFast(tokenizer_object=core, chat_template=TEMPLATE,
                                         unk_token="[UNK]").save_pretrained(folder)
    return folder


def _row(rounds: int) -> dict:
    messages = [{"role": "system", "content": "x"}, {"role": "user", "content": "do it"}]
    for _ in range(rounds):
        messages += [{"role": "assistant", "content": "", "tool_calls": [
                          {"id": "c", "type": "function", "function": {"name": "sh", "arguments": '{"cmd": "x"}'}}]},
                     {"role": "tool", "content": "ok", "tool_call_id": "c"}]
    messages.append({"role": "assistant", "content": "done"})
    return {"messages": messages, "tool_defs": [{"name": "sh", "parameters": {"type": "object"}}], "task_name": "t"}


@pytest.fixture
def setup(tmp_path: Path, model: Path) -> dict:
    checkout, env = _checkout(tmp_path)
    config = tmp_path / "sft.toml"
    config.write_text(f'[model]\nname = "{model}"\n[data]\nbatch_size = 8\nseq_len = 16\n')
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(_row(n)) + "\n" for n in (0, 3)))  # 13 and 40 tokens
    env["PYTHONPATH"] = os.pathsep.join([str(DOUBLE), os.environ.get("PYTHONPATH", "")])
    base = ["train", "run", "sft", "--config", str(config), "--data", str(data), "--prime-rl-dir", str(checkout),
            "--work-dir", str(tmp_path / "work")]
    return {"base": base, "env": env, "seen": tmp_path / "argv.json", "work": tmp_path / "work", "tmp": tmp_path}


def _run(setup: dict, *args: str, code: int = 0) -> dict:
    done = run_bench(*setup["base"], *args, env=setup["env"])
    assert done.returncode == code, done.stderr + done.stdout
    return json.loads(setup["seen"].read_text())


def test_the_profile_stages_pretokenized_rows_and_prime_rl_trains_them_row_by_row(setup: dict) -> None:
    seen = _run(setup, "--compat-profile", PROFILE)
    flags = dict(zip(seen["argv"][4::2], seen["argv"][5::2]))
    assert {k: flags[k] for k in ("--max_steps", "--scheduler.decay_steps", "--ckpt.interval", "--ckpt.keep_interval",
                                  "--data.pack_function", "--model.attn", "--renderer")} == {
        "--max_steps": "37", "--scheduler.decay_steps": "37", "--ckpt.interval": "37", "--ckpt.keep_interval": "37",
        "--data.pack_function": "stack", "--model.attn": "sdpa", "--renderer": "None"}  # 300 // 8 micro-steps
    assert all(flags[f"--data.loss_mask.{role}"] == "true" for role in ("system", "user", "assistant", "tool"))
    staged = [json.loads(line) for line in Path(flags["--data.name"]).read_text().splitlines()]
    assert [len(r["benchflow_input_ids"]) for r in staged] == [12, 15]  # 13 tokens; the last 16 of 40
    assert not {"messages", "tool_defs"} & set(staged[1])
    # Through the shim: each micro-batch is one staged row as it is (the double packs two otherwise) ...
    assert [batch["input_ids"]["data"] for batch in seen["batches"]] == [[r["benchflow_input_ids"]] for r in staged]
    assert seen["batches"][1]["loss_mask"] == {"dtype": "bool", "data": [staged[1]["benchflow_loss_mask"]]}
    # ... and the loss is the sum of the rows' mean token losses, counted per row: (1+3+5)/3 + 2/1 over 2 rows.
    assert seen["loss"] == [5.0, 2]
    record = json.loads((setup["work"] / "train-run.json").read_text())
    assert record["compat_profile"]["name"] == PROFILE
    assert record["compat_profile"]["resolved_settings"]["message_tail_truncation"] == "custom-trainer-pretokenized"
    assert record["message_tail_truncation"] == {"mode": "custom-trainer-pretokenized", "window": 16, "rows": 2,
                                                 "truncated_rows": 1, "max_tokens_before": 40, "max_tokens_after": 16,
                                                 "trainable_tokens": 27}
    assert record["shim"]["hooks"] == ["BENCHFLOW_PRIME_RL_PRETOKENIZED", "BENCHFLOW_PRIME_RL_SAMPLE_MEAN"]
    assert Path(record["shim"]["path"]).read_text() == (ROOT / "src/benchflow/train/prime_rl_site.py").read_text()


def test_without_the_hooks_prime_rl_packs_and_means_over_tokens(setup: dict) -> None:
    seen = _run(setup, "--loss-normalization", "token_mean")
    assert [sorted(batch) for batch in seen["batches"]] == [["packed"]]  # the double's own packing, untouched
    assert seen["loss"] == [11.0, 4]
    assert json.loads((setup["work"] / "train-run.json").read_text())["shim"] is None


def test_keep_first_user_fits_rows_to_the_window_as_chat_rows(setup: dict) -> None:
    seen = _run(setup, "--message-tail-truncation", "keep-first-user")
    flags = dict(zip(seen["argv"][4::2], seen["argv"][5::2]))
    short, long = [json.loads(line) for line in Path(flags["--data.name"]).read_text().splitlines()]
    assert short["messages"] == _row(0)["messages"]
    assert [m["role"] for m in long["messages"]] == ["user", "tool", "assistant"]  # 5 + 4 + 4 tokens, 12 shifted
    record = json.loads((setup["work"] / "train-run.json").read_text())
    assert (record["message_tail_truncation"]["truncated_rows"], record["shim"]) == (1, None)


def test_the_shim_stops_a_prime_rl_it_was_not_written_for(setup: dict) -> None:
    newer = setup["tmp"] / "newer"
    (newer / "prime_rl" / "trainer" / "sft").mkdir(parents=True)
    for rel in ("prime_rl/__init__.py", "prime_rl/trainer/__init__.py", "prime_rl/trainer/sft/__init__.py",
                "prime_rl/trainer/sft/data.py"):
        (newer / rel).write_text((DOUBLE / rel).read_text())
    train = (DOUBLE / "prime_rl/trainer/sft/train.py").read_text()  # a loop that counts tokens itself
    (newer / "prime_rl/trainer/sft/train.py").write_text(train + '\nPRECOUNT = \'micro_batch["loss_mask"].sum()\'\n')
    setup["env"]["PYTHONPATH"] = os.pathsep.join([str(newer), os.environ.get("PYTHONPATH", "")])
    seen = _run(setup, "--loss-normalization", "sample_mean", "--pack-function", "stack", code=1)
    assert "does not reduce the loss as the per-row mean hook expects" in seen["error"]
    assert json.loads((setup["work"] / "train-run.json").read_text())["exit_code"] == 1
    data = newer / "prime_rl/trainer/sft/data.py"  # samples that carry more than the four token lists
    data.write_text(data.read_text().replace("    target_ids: list[int]\n", "    target_ids: list[int]\n"
                                                                        "    seq_lens: list[int]\n"))
    seen = _run(setup, "--message-tail-truncation", "custom-trainer-pretokenized", "--tool-defs-mode", "omit",
                "--force", code=1)
    assert "is not the SFTDataset._process, setup_dataloader and Sample of" in seen["error"]


@pytest.mark.parametrize("args, needle", [
    (["--compat-profile", "env0-mobile300"], "--compat-profile 'env0-mobile300': unknown; use env0-mobile300-pr828"),
    (["--compat-profile", PROFILE, "--pack-function", "cat"],
     f"--compat-profile {PROFILE} sets --pack-function stack; drop --pack-function cat or the profile"),
    (["--compat-profile", PROFILE, "--no-sync-scheduler-to-max-steps"],
     "sets --sync-scheduler-to-max-steps; drop --no-sync-scheduler-to-max-steps"),
    (["--compat-profile", PROFILE, "--target-examples", "100"], "trains 300 micro-steps; drop --target-examples 100"),
    (["--message-tail-truncation", "tail"], "--message-tail-truncation 'tail': use off, keep-first-user, "
                                            "custom-trainer-pretokenized"),
    (["--message-tail-truncation", "custom-trainer-pretokenized"], "needs --tool-defs-mode omit"),
    (["--loss-normalization", "sample_mean", "--pack-function", "cat"], "needs data.pack_function stack"),
    (["--loss-normalization", "sample_mean", "--pack-function", "stack", "--override", "model.cp=2"],
     "needs model.cp 1"),
    (["--loss-mask", "assistant,critic"], "--loss-mask 'assistant,critic': use all, assistant, or roles"),
    (["--renderer-mode", "jinja"], "--renderer-mode 'jinja': only none"),
])
def test_bad_values_are_one_line_and_exit_2(setup: dict, args: list[str], needle: str) -> None:
    done = run_bench(*setup["base"], *args, env=setup["env"])
    assert done.returncode == 2 and needle in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not setup["seen"].exists(), "refused before Prime-RL starts"


def test_truncation_needs_local_rows_and_the_model_s_tokenizer(setup: dict, tmp_path: Path) -> None:
    remote = [a if a != str(tmp_path / "rows.jsonl") else "org/dataset" for a in setup["base"]]
    done = run_bench(*remote, "--message-tail-truncation", "keep-first-user", env=setup["env"])
    assert done.returncode == 2 and "give --data a local Prime-SFT JSONL file" in done.stderr
    (tmp_path / "sft.toml").write_text("[data]\nbatch_size = 8\n")
    done = run_bench(*setup["base"], "--message-tail-truncation", "keep-first-user", env=setup["env"])
    assert done.returncode == 2 and "set model.name in" in done.stderr
