"""``bench train run sft``: run Prime-RL's SFT trainer from a checkout and record ``train-run.json``.

The command is ``uv run [--no-sync] sft @ CONFIG [--KEY VALUE …]`` in the
Prime-RL checkout: ``--data`` becomes ``--data.name``, each ``--override
KEY=VALUE`` becomes ``--KEY VALUE``, the first-class flags their config keys,
and ``--target-examples`` / ``--target-micro-steps`` derive ``--max-steps``
from the config's ``data.batch_size`` (and, when asked, the scheduler's decay
and the checkpoint intervals). A local JSONL ``--data`` is staged into the
work dir when ``--tool-defs-mode omit`` or ``--chat-template-kwarg`` change
its rows, and ``--message-tail-truncation`` fits them to Prime-RL's sample window
(:mod:`.sft_tail`). ``--compat-profile`` sets a named group of these flags (:mod:`.sft_profiles`);
``--loss-normalization sample_mean`` and pretokenized rows switch on run-local Prime-RL hooks
(:mod:`.prime_rl_shim`). Output goes to ``<work-dir>/logs/trainer.log`` (and the terminal
with ``--follow``). No secret is put on the command line: the trainer gets
the environment it was started with.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from benchflow.errors import UserError
from benchflow.util.files import sha256_hex
from benchflow.util import atomic

from . import prime_rl_shim, sft_profiles, sft_publish, sft_tail

ROLES = ("system", "user", "assistant", "tool")


@dataclass
class SftOptions:
    config: Path
    backend: str = "prime-rl"
    data: str | None = None
    output_dir: Path | None = None
    compat_profile: str | None = None
    work_dir: Path = Path("train-runs/sft")
    prime_rl_dir: Path | None = None
    dry_run: bool = False
    follow: bool = False
    uv_no_sync: bool = False
    overrides: list[str] = field(default_factory=list)
    target_examples: int | None = None
    target_micro_steps: int | None = None
    sync_scheduler: bool = True
    sync_ckpt: bool = False
    pack_function: str | None = None
    loss_mask: str | None = None
    loss_normalization: str | None = None
    model_attn: str | None = None
    renderer_mode: str | None = None
    tool_defs_mode: str = "preserve"
    chat_template_kwargs: list[str] = field(default_factory=list)
    message_tail_truncation: str = "off"
    allow_unsafe_stack_flash_attn: bool = False
    force: bool = False
    publishing: dict[str, Any] = field(default_factory=dict)


def _sha256(path: Path) -> str:
    return "sha256:" + sha256_hex(path)


def _pair(text: str, flag: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UserError(f"{flag} {text!r}: use KEY=VALUE")
    return key.strip(), value


def _literal(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def _lookup(config: dict[str, Any], dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _check(o: SftOptions) -> None:
    if o.backend != "prime-rl":
        raise UserError(f"--backend {o.backend!r}: only prime-rl is supported")
    if o.message_tail_truncation not in sft_tail.MODES:
        raise UserError(f"--message-tail-truncation {o.message_tail_truncation!r}: use {', '.join(sft_tail.MODES)}")
    if o.message_tail_truncation != "off" and (o.data is None or not Path(o.data).is_file()):
        raise UserError(f"--message-tail-truncation {o.message_tail_truncation} changes local rows; give --data "
                        "a local Prime-SFT JSONL file")
    if o.message_tail_truncation == sft_tail.PRETOKENIZED and (o.tool_defs_mode != "omit" or o.chat_template_kwargs):
        raise UserError(f"--message-tail-truncation {sft_tail.PRETOKENIZED} stages token ids, not chat rows: it "
                        "needs --tool-defs-mode omit and no --chat-template-kwarg")
    if o.renderer_mode not in (None, "none"):
        raise UserError(f"--renderer-mode {o.renderer_mode!r}: only none (tokenize with the chat template)")
    if o.tool_defs_mode not in ("preserve", "omit"):
        raise UserError(f"--tool-defs-mode {o.tool_defs_mode!r}: use preserve or omit")
    if o.target_examples is not None and o.target_micro_steps is not None:
        raise UserError("--target-examples and --target-micro-steps both derive max_steps; give one")
    if o.pack_function not in (None, "cat", "stack"):
        raise UserError(f"--pack-function {o.pack_function!r}: use cat or stack")
    if o.loss_normalization not in (None, "token_mean", "sample_mean"):
        raise UserError(f"--loss-normalization {o.loss_normalization!r}: use token_mean or sample_mean")
    if o.pack_function == "stack" and (o.model_attn or "").startswith("flash") and not o.allow_unsafe_stack_flash_attn:
        raise UserError("--pack-function stack with flash attention risks Prime-RL's varlen kernel; add "
                        "--allow-unsafe-stack-flash-attn to run it anyway")
    if not o.config.is_file():
        raise UserError(f"--config {o.config}: no such file; give the Prime-RL SFT TOML config")


def _loss_mask(value: str) -> dict[str, str]:
    """``--loss-mask``: Prime-RL's per-role switches (``all``, ``assistant``, or roles separated by commas)."""
    roles = set(ROLES) if value == "all" else {part.strip() for part in value.split(",") if part.strip()}
    if not roles or roles - set(ROLES):
        raise UserError(f"--loss-mask {value!r}: use all, assistant, or roles from {','.join(ROLES)}")
    return {f"data.loss_mask.{role}": "true" if role in roles else "false" for role in ROLES}


def _check_sample_mean(config: dict[str, Any], settings: dict[str, Any]) -> None:
    """Per-row mean loss needs each batch row to be one example and whole rows in each rank's batch."""
    def value(key: str) -> Any:
        return settings.get(key, _lookup(config, key))

    if str(value("data.pack_function")) != "stack":
        raise UserError("--loss-normalization sample_mean needs data.pack_function stack (--pack-function stack)")
    if str(value("model.cp") or 1) != "1":
        raise UserError("--loss-normalization sample_mean needs model.cp 1: a row split across ranks has no mean")
    if str(value("loss_impl") or "torch") in ("liger_fused", "quack_fused"):
        raise UserError("--loss-normalization sample_mean needs loss_impl torch or liger, not a fused loss")


def _stage_data(o: SftOptions, work: Path, config: dict[str, Any],
                overrides: dict[str, str]) -> tuple[str | None, str | None, dict[str, Any] | None]:
    """(data name passed to Prime-RL, sha256 of the local data, the truncation's counts) — staging rows
    when they must change."""
    if o.data is None:
        return None, None, None
    local = Path(o.data)
    if not local.is_file():
        if o.tool_defs_mode == "omit" or o.chat_template_kwargs:
            raise UserError(f"--data {o.data}: --tool-defs-mode omit and --chat-template-kwarg change local rows; "
                            "give a local JSONL file")
        return o.data, None, None
    if o.tool_defs_mode == "preserve" and not o.chat_template_kwargs and o.message_tail_truncation == "off":
        return str(local.resolve()), _sha256(local), None
    kwargs = {k: _literal(v) for k, v in (_pair(t, "--chat-template-kwarg") for t in o.chat_template_kwargs)}
    rows = []
    for number, line in enumerate(local.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise UserError(f"--data {local}: line {number} is not JSON") from None
        if o.tool_defs_mode == "omit":
            row.pop("tool_defs", None)
        if kwargs:
            row["chat_template_kwargs"] = {**(row.get("chat_template_kwargs") or {}), **kwargs}
        rows.append(row)
    tail = _truncate(o, rows, config, overrides, str(local)) if o.message_tail_truncation != "off" else None
    staged = atomic.write_jsonl(work / "data" / "train.jsonl", rows)
    return str(staged.resolve()), _sha256(staged), tail


def _truncate(o: SftOptions, rows: list[dict[str, Any]], config: dict[str, Any], overrides: dict[str, str],
              source: str) -> dict[str, Any]:
    """``--message-tail-truncation`` over ``rows`` (in place) with ``model.name``'s tokenizer, in Prime-RL's
    window of ``data.seq_len * data.micro_batch_size`` (its defaults 128 and 1); returns the counts."""
    def value(key: str, default: int) -> int:
        return _positive(overrides.get(key, _lookup(config, key) or default), key)

    model = overrides.get("model.name", _lookup(config, "model.name"))
    if not model:
        raise UserError(f"--message-tail-truncation needs the model's tokenizer: set model.name in {o.config} "
                        "or --override model.name=ID")
    window = value("data.seq_len", 128) * value("data.micro_batch_size", 1)
    return sft_tail.apply(rows, o.message_tail_truncation, sft_tail.load_tokenizer(str(model)), window,
                          source).record()


def _positive(value: Any, key: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number < 1:
        raise UserError(f"{key} {value!r}: must be a whole number of 1 or more")
    return number


def _derived(o: SftOptions, config: dict[str, Any], overrides: dict[str, str]) -> dict[str, int]:
    if o.target_examples is None and o.target_micro_steps is None:
        return {}
    batch = overrides.get("data.batch_size", _lookup(config, "data.batch_size"))
    try:
        batch = int(batch)
    except (TypeError, ValueError):
        raise UserError(f"--config {o.config}: data.batch_size is needed to derive max_steps") from None
    if batch < 1:
        raise UserError(f"--config {o.config}: data.batch_size must be 1 or more")
    if o.target_examples is not None:
        steps = math.ceil(o.target_examples / batch)
    else:
        steps = (o.target_micro_steps or 0) // batch
    if steps < 1:
        raise UserError(f"the target gives {steps} optimizer step(s) with data.batch_size {batch}; raise it")
    out = {"max_steps": steps}
    if o.sync_scheduler:
        out["scheduler.decay_steps"] = steps
    if o.sync_ckpt:
        out["ckpt.interval"] = steps
        out["ckpt.keep_interval"] = steps
    return out


def build_command(o: SftOptions, data_name: str | None, output_dir: Path,
                  config: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """(argv, the settings passed) for the Prime-RL run."""
    overrides = dict(_pair(t, "--override") for t in o.overrides)
    settings: dict[str, Any] = {"output_dir": str(output_dir)}
    if data_name is not None:
        settings["data.name"] = data_name
    for key, value in (("data.pack_function", o.pack_function), ("model.attn", o.model_attn)):
        if value is not None:
            settings[key] = value
    if o.loss_mask is not None:
        settings.update(_loss_mask(o.loss_mask))
    if o.renderer_mode == "none":
        settings["renderer"] = "None"
    settings.update(_derived(o, config, overrides))
    settings.update(overrides)
    argv = ["uv", "run", *(["--no-sync"] if o.uv_no_sync else []), "sft", "@", str(o.config.resolve())]
    for key, value in settings.items():
        argv += [f"--{key}", str(value)]
    if o.dry_run:
        argv.append("--dry-run")
    return argv, settings


def _run(argv: list[str], cwd: Path, log: Path, follow: bool, env: dict[str, str]) -> int:
    """Run the trainer with this process's environment plus ``env`` (the shim's switches)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   env={**os.environ, **env} if env else None)
    except FileNotFoundError:
        raise UserError("uv not found on PATH; install uv (https://docs.astral.sh/uv/) to run Prime-RL") from None
    assert process.stdout is not None
    with open(log, "wb") as handle:
        for line in process.stdout:
            handle.write(line)
            if follow:
                sys.stdout.buffer.write(line)
                sys.stdout.flush()
    return process.wait()


def run_sft(o: SftOptions) -> int:
    """Launch the run, write ``<work-dir>/train-run.json``; returns the trainer's exit code."""
    o, profile = sft_profiles.apply_profile(o)
    _check(o)
    publishing = sft_publish.check(o.publishing)
    work = o.work_dir
    manifest = work / "train-run.json"
    if manifest.exists() and not o.force:
        raise UserError(f"{manifest} exists; pass --force to overwrite it or pick another --work-dir")
    checkout = (o.prime_rl_dir or Path.cwd()).resolve()
    if not (checkout / "pyproject.toml").is_file():
        raise UserError(f"--prime-rl-dir {checkout}: not a Prime-RL checkout (no pyproject.toml)")
    try:
        config = tomllib.loads(o.config.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"--config {o.config}: not valid TOML ({exc})") from None
    output_dir = (o.output_dir or work / "prime-rl-output").resolve()
    sample_mean = o.loss_normalization == "sample_mean"
    if sample_mean:
        _check_sample_mean(config, build_command(o, None, output_dir, config)[1])
    overrides = dict(_pair(t, "--override") for t in o.overrides)
    data_name, data_hash, tail = _stage_data(o, work, config, overrides)
    argv, settings = build_command(o, data_name, output_dir, config)
    env, shim = prime_rl_shim.install(work, pretokenized=o.message_tail_truncation == sft_tail.PRETOKENIZED,
                                      sample_mean=sample_mean)
    log = work / "logs" / "trainer.log"
    started = datetime.now().isoformat(timespec="seconds")
    code = _run(argv, checkout, log, o.follow, env)
    record = {
        "kind": "benchflow.train-run", "schema_version": 1, "backend": o.backend,
        "config": str(o.config.resolve()), "config_sha256": _sha256(o.config), "data": data_name,
        "data_sha256": data_hash, "command": argv, "cwd": str(checkout), "settings": settings,
        "loss_normalization": o.loss_normalization, "message_tail_truncation": tail, "compat_profile": profile,
        "shim": shim, "output_dir": str(output_dir), "log": str(log.resolve()), "dry_run": o.dry_run,
        "started_at": started, "finished_at": datetime.now().isoformat(timespec="seconds"), "exit_code": code}
    atomic.write_json(manifest, record)
    if publishing and code == 0 and not o.dry_run:
        record["published"] = sft_publish.publish(publishing, record, manifest, output_dir, config)
        atomic.write_json(manifest, record)
        if record["published"].get("error"):
            sys.stderr.write(f"publish: FAILED: {record['published']['error']}. The run and {manifest} are kept.\n")
    return code
