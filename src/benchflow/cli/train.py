"""``bench train``: convert | token-coverage | stream | validate | run sft.

Each command parses its flags and ends in one call into :mod:`benchflow.train`;
heavy imports stay inside the functions so ``bench --help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

train_cmd = typer.Typer(help="Training data commands.", no_args_is_help=True, add_completion=False,
                        rich_markup_mode="rich")
run_group = typer.Typer(help="Launch training jobs.", no_args_is_help=True, add_completion=False)
train_cmd.add_typer(run_group, name="run")

FORMAT_HELP = ("Trainer format: prime-sft, trl-sft, branch-tree (one row per branch child: shared prefix, "
               "continuation, reward, advantage), verl-sft (parquet for verl's multi-turn SFT trainer), skyrl-sft "
               "(rows for SkyRL's SFT trainer) or openenv-episodes (OpenEnv episode records).")
GROUP_BY_HELP = ("Grouping key for --group-advantage, comma-separated from task, agent, model, task_digest, job. "
                 "A group stays inside one job unless job is left out (jobs may have run different policy "
                 "checkpoints)")


@train_cmd.command("convert", help="Convert BenchFlow rollout artifacts into trainer-ready data.\n\n"
                   "A Harbor job's trials are read from their agent's ATIF trajectory (agent/trajectory.json).\n\n"
                   "Exit codes: 0 written; 1 when --expected-rows disagrees (nothing written); 2 bad input.")
def convert_cmd(
    jobs_dir: Path = typer.Argument(..., help="BenchFlow rollout or jobs directory"),
    out: Path = typer.Option(..., "--out", "-o", help="Output path: JSONL, or parquet for verl-sft"),
    fmt: str = typer.Option("prime-sft", "--format", help=FORMAT_HELP),
    pairs: Optional[Path] = typer.Option(None, "--pairs", help="branch-tree only: also write one row per sibling "
                                         "pair whose rewards differ (chosen/rejected, margin) to this JSONL path"),
    pairs_any_request: bool = typer.Option(False, "--pairs-any-request", help="branch-tree only: also pair "
                                           "siblings that were asked different things (default: only siblings "
                                           "with the same first user message)"),
    include_oracle: bool = typer.Option(False, "--include-oracle", help="branch-tree only: keep oracle children "
                                        "as rows (skipped by default; their only message is the solution "
                                        "script's exit code)"),
    min_reward: Optional[float] = typer.Option(None, "--min-reward", help="Only include rows with reward >= value"),
    row_mode: str = typer.Option("rollout", "--row-mode", help="rollout writes one row per rollout; exchange "
                                 "writes one row per LLM exchange"),
    manifest: Optional[Path] = typer.Option(None, "--manifest", help="Optional conversion stats JSON path"),
    expected_rows: Optional[int] = typer.Option(None, "--expected-rows", help="Fail (before writing the output "
                                                "file) unless exactly this many rows would be exported"),
    canonical_selection: Optional[Path] = typer.Option(None, "--canonical-selection", help="Restrict conversion "
                                                       "to rows selected by canonical-selection.json"),
    redact: bool = typer.Option(True, "--redact/--no-redact", help="Redact secrets while exporting trainer JSONL. "
                                "Use --no-redact only for private local SFT data when preserving exact tool-call "
                                "argument tokens is required."),
    context_policy: str = typer.Option("full", "--context-policy", help="TRL context handling: full or "
                                       "tokenizer-aware message-window"),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="Tokenizer/model ID for TRL message-window "
                                            "conversion"),
    tokenizer_revision: Optional[str] = typer.Option(None, "--tokenizer-revision", help="Immutable tokenizer "
                                                     "revision for TRL conversion"),
    max_length: Optional[int] = typer.Option(None, "--max-length", help="Maximum rendered length for TRL "
                                             "message-window conversion"),
    subagent_rows: bool = typer.Option(False, "--subagent-rows", help="Also write each Claude subagent "
                                       "conversation as separate rows tagged with the spawning tool call."),
    reward_vector: bool = typer.Option(False, "--reward-vector", help="prime-sft/trl-sft: add reward_vector to "
                                       "every row: the test gate and each rubric criterion (names, kinds, weights, "
                                       "0-1 values) for rubric-scored trials, else every numeric key the verifier "
                                       "wrote. Unscored rollouts get null."),
    group_advantage: Optional[str] = typer.Option(None, "--group-advantage", help="Add advantage and group to "
                                                  "every row, normalised over the scored rollouts of the same "
                                                  "group: grpo = (r - mean) / (std + 1e-4), sample std; loo = r - "
                                                  "mean of the others. Unscored rollouts get null, never 0."),
    group_by: str = typer.Option("task,agent,model,job", "--group-by", help=GROUP_BY_HELP),
) -> None:
    from benchflow.train.convert import ConvertOptions, convert

    doc = convert(ConvertOptions(
        source=jobs_dir, out=out, format=fmt, min_reward=min_reward, row_mode=row_mode, manifest=manifest,
        expected_rows=expected_rows, canonical_selection=canonical_selection, redact=redact,
        context_policy=context_policy, tokenizer=tokenizer, tokenizer_revision=tokenizer_revision,
        max_length=max_length, subagent_rows=subagent_rows, reward_vector=reward_vector,
        group_advantage=group_advantage, group_by=group_by, pairs=pairs, pairs_any_request=pairs_any_request,
        include_oracle=include_oracle))
    skipped = ", ".join(f"{k[8:]} {v}" for k, v in doc.items() if k.startswith("skipped_") and v)
    typer.echo(f"Wrote {doc['rows_written']} row(s) from {doc['rollouts_seen']} rollout(s) to {out}"
               + (f" (skipped: {skipped})" if skipped else ""))


@train_cmd.command("token-coverage", help="Report whether each rollout's model calls carry token ids and "
                   "logprobs.\n\nReads trajectory/llm_trajectory.jsonl token_capture blocks. A rollout is "
                   "training-grade when every call has prompt token ids, sampled token ids and logprobs, and each "
                   "prompt extends the previous call's prompt and sampled tokens.")
def token_coverage_cmd(
    path: Path = typer.Argument(..., help="BenchFlow rollout or jobs directory"),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON"),
) -> None:
    from benchflow.train.tokens import coverage, render_coverage

    report = coverage(path)
    typer.echo(json.dumps(report, indent=2) if as_json else render_coverage(report))


@train_cmd.command("stream", help="Print each finished rollout of a (running) job as one JSON line.\n\n"
                   "Every line is a benchflow.rollout-stream.v1 record with the reward, group id and, when the "
                   "gateway captured them, per-call token ids and logprobs. Status goes to stderr. Exit 0 when the "
                   "job finished, 1 when it was stopped or its process died first, 2 on bad input, 3 on --timeout.")
def stream_cmd(
    job_dir: Path = typer.Argument(..., help="Job folder (or a --jobs-dir holding one job); may not exist yet"),
    fmt: str = typer.Option("jsonl", "--format", help="Output format: jsonl"),
    follow: bool = typer.Option(True, "--follow/--no-follow", help="Keep polling until the job finishes "
                                "(default), or scan once"),
    poll_interval: float = typer.Option(1.0, "--poll-interval", help="Seconds between scans"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Stop after this many seconds (exit 3)"),
    group_size: Optional[int] = typer.Option(None, "--group-size", help="Hold rollouts until N of a group "
                                             "finished, then emit them with a GRPO advantage"),
    group_by: Optional[str] = typer.Option(None, "--group-by", help="Grouping key, comma-separated from task, "
                                           "agent, model, task_digest, job (default task,agent,model,job)"),
    withheld: Optional[Path] = typer.Option(None, "--withheld", help="--group-size: write the records of groups "
                                            "withheld from the trainer (a member unscored or without the others' "
                                            "token sequence, or the group still short at the end) to this JSONL "
                                            "file, each with its reason"),
) -> None:
    from benchflow.train.stream import StreamOptions, stream

    code = stream(StreamOptions(job_dir=job_dir, format=fmt, follow=follow, poll_interval=poll_interval,
                                timeout=timeout, group_size=group_size, group_by=group_by, withheld=withheld))
    raise typer.Exit(code)


@train_cmd.command("validate", help="Validate trainer-ready data.\n\nPrints one line per bad row and why. "
                   "Exit codes: 0 every row passed; 1 a row (or a source check) failed; 2 bad input.")
def validate_cmd(
    jsonl: Path = typer.Argument(..., help="Trainer JSONL path to validate"),
    fmt: str = typer.Option("prime-sft", "--format", help="Trainer format."),
    expected_rows: Optional[int] = typer.Option(None, "--expected-rows", help="Fail unless this many rows are "
                                                "present"),
    source_jobs: Optional[Path] = typer.Option(None, "--source-jobs", help="Source BenchFlow jobs dir to audit"),
    source_canonical_selection: Optional[Path] = typer.Option(None, "--source-canonical-selection",
                                                              help="Canonical selection JSON used for this "
                                                              "trainer data"),
    task_manifest: Optional[Path] = typer.Option(None, "--task-manifest", help="Task manifest for source rows"),
    require_llm_trajectory: bool = typer.Option(False, "--require-llm-trajectory", help="Fail unless source "
                                                "selected rows have valid llm_trajectory.jsonl"),
    require_tool_calls: bool = typer.Option(False, "--require-tool-calls", help="Fail unless trainer rows and "
                                            "source rows include tool calls"),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="Tokenizer/model ID for TRL render and "
                                            "assistant-mask validation"),
    tokenizer_revision: Optional[str] = typer.Option(None, "--tokenizer-revision", help="Immutable tokenizer "
                                                     "revision for TRL validation"),
    max_length: Optional[int] = typer.Option(None, "--max-length", help="Fail TRL validation when a rendered "
                                             "row exceeds this length"),
) -> None:
    from benchflow.train.validate import ValidateOptions, render_report, validate

    report = validate(ValidateOptions(
        path=jsonl, format=fmt, expected_rows=expected_rows, source_jobs=source_jobs,
        source_canonical_selection=source_canonical_selection, task_manifest=task_manifest,
        require_llm_trajectory=require_llm_trajectory, require_tool_calls=require_tool_calls,
        tokenizer=tokenizer, tokenizer_revision=tokenizer_revision, max_length=max_length))
    typer.echo(render_report(report))
    raise typer.Exit(0 if report["ok"] else 1)


@run_group.command("sft", help="Run a Prime-RL SFT job and record a BenchFlow manifest.\n\nRuns `uv run sft @ "
                   "CONFIG …` in the Prime-RL checkout and writes <work-dir>/train-run.json (config and data "
                   "hashes, command, exit code, output dir). Exits with the trainer's exit code; 2 on bad input.")
def sft_cmd(
    config: Path = typer.Option(..., "--config", help="Prime-RL SFT TOML config"),
    backend: str = typer.Option("prime-rl", "--backend", help="Training backend"),
    data: Optional[str] = typer.Option(None, "--data", help="Optional dataset override passed to Prime-RL as "
                                       "--data.name"),
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", help="Prime-RL trainer output dir. Defaults "
                                              "to <work-dir>/prime-rl-output."),
    compat_profile: Optional[str] = typer.Option(None, "--compat-profile", help="Named BenchFlow Prime-RL SFT "
                                                 "compatibility profile. Currently supports env0-mobile300-pr828."),
    work_dir: Path = typer.Option(Path("train-runs/sft"), "--work-dir", help="BenchFlow training run directory"),
    prime_rl_dir: Optional[Path] = typer.Option(None, "--prime-rl-dir", help="Prime-RL checkout to run uv from. "
                                                "Defaults to the current directory."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Pass --dry-run through to Prime-RL"),
    follow: bool = typer.Option(False, "--follow", help="Stream trainer stdout while writing logs"),
    uv_no_sync: bool = typer.Option(False, "--uv-no-sync", help="Run Prime-RL with uv run --no-sync"),
    override: list[str] = typer.Option([], "--override", help="Prime-RL config override as KEY=VALUE; repeatable"),
    target_examples: Optional[int] = typer.Option(None, "--target-examples", help="Derive Prime-RL max_steps "
                                                  "from a target number of training examples using "
                                                  "data.batch_size, rounding up"),
    target_micro_steps: Optional[int] = typer.Option(None, "--target-micro-steps", help="Derive Prime-RL "
                                                     "max_steps from custom-trainer batch-size-1 microsteps, "
                                                     "dropping the final partial accumulation"),
    sync_scheduler: bool = typer.Option(True, "--sync-scheduler-to-max-steps/--no-sync-scheduler-to-max-steps",
                                        help="When deriving max_steps, also derive scheduler.decay_steps"),
    sync_ckpt: bool = typer.Option(False, "--sync-ckpt-to-max-steps/--no-sync-ckpt-to-max-steps",
                                   help="When deriving max_steps, also derive ckpt.interval and "
                                   "ckpt.keep_interval"),
    pack_function: Optional[str] = typer.Option(None, "--pack-function", help="data.pack_function: cat or stack"),
    loss_mask: Optional[str] = typer.Option(None, "--loss-mask", help="data.loss_mask: 'assistant', 'all', or "
                                            "comma-separated roles"),
    loss_normalization: Optional[str] = typer.Option(None, "--loss-normalization", help="Prime-RL SFT loss "
                                                     "normalization: token_mean for native Prime-RL behavior, or "
                                                     "sample_mean to match the historical custom trainer's per-row "
                                                     "mean loss"),
    model_attn: Optional[str] = typer.Option(None, "--model-attn", help="model.attn override, e.g. sdpa"),
    renderer_mode: Optional[str] = typer.Option(None, "--renderer-mode", help="Optional Prime-RL renderer mode "
                                                "override. Use 'none' to fall back to tokenizer.apply_chat_template "
                                                "tokenization."),
    tool_defs_mode: str = typer.Option("preserve", "--tool-defs-mode", help="How local training JSONL exposes "
                                       "tool schemas to Prime-RL: preserve or omit"),
    chat_template_kwarg: list[str] = typer.Option([], "--chat-template-kwarg", help="Apply KEY=VALUE to every "
                                                  "local Prime-SFT row's chat_template_kwargs; repeatable"),
    message_tail_truncation: str = typer.Option("off", "--message-tail-truncation", help="Local Prime-SFT row "
                                                "truncation before Prime-RL tokenizes it: off, keep-first-user, or "
                                                "custom-trainer-pretokenized. The keep-first-user mode keeps the "
                                                "initial user instruction plus the longest final message suffix "
                                                "that fits data.seq_len * data.micro_batch_size. The "
                                                "custom-trainer-pretokenized mode renders rows like the historical "
                                                "custom trainer, keeps the exact token tail, and stages shifted "
                                                "input_ids/target_ids/loss_mask tensors."),
    allow_unsafe_stack_flash_attn: bool = typer.Option(False, "--allow-unsafe-stack-flash-attn",
                                                       help="Allow stack packing with flash attention"),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing <work-dir>/train-run.json manifest"),
    publish_model: Optional[str] = typer.Option(None, "--publish-model", help="Upload trainer output to this HF "
                                                "model repo"),
    model_tag: Optional[str] = typer.Option(None, "--model-tag", help="Path prefix/tag for --publish-model"),
    model_card: Optional[str] = typer.Option(None, "--model-card", help="Model card mode; currently 'auto'"),
    publish_artifacts: Optional[str] = typer.Option(None, "--publish-artifacts", help="Upload BenchFlow train "
                                                    "run artifacts to this HF dataset repo"),
    hf_prefix: Optional[str] = typer.Option(None, "--hf-prefix", help="Path prefix for --publish-artifacts"),
    hf_public_read_check: bool = typer.Option(False, "--hf-public-read-check", help="Verify public HF reads "
                                              "after upload"),
) -> None:
    from benchflow.train.sft_run import SftOptions, run_sft

    code = run_sft(SftOptions(
        config=config, backend=backend, data=data, output_dir=output_dir, compat_profile=compat_profile,
        work_dir=work_dir, prime_rl_dir=prime_rl_dir, dry_run=dry_run, follow=follow, uv_no_sync=uv_no_sync,
        overrides=list(override), target_examples=target_examples, target_micro_steps=target_micro_steps,
        sync_scheduler=sync_scheduler, sync_ckpt=sync_ckpt, pack_function=pack_function, loss_mask=loss_mask,
        loss_normalization=loss_normalization, model_attn=model_attn, renderer_mode=renderer_mode,
        tool_defs_mode=tool_defs_mode, chat_template_kwargs=list(chat_template_kwarg),
        message_tail_truncation=message_tail_truncation,
        allow_unsafe_stack_flash_attn=allow_unsafe_stack_flash_attn, force=force,
        publishing={"--publish-model": publish_model, "--model-tag": model_tag, "--model-card": model_card,
                    "--publish-artifacts": publish_artifacts, "--hf-prefix": hf_prefix,
                    "--hf-public-read-check": hf_public_read_check or None}))
    raise typer.Exit(code)
