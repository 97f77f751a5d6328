"""``bench train run sft``: run Prime-RL's SFT trainer from a checkout and record ``train-run.json``.

The command is ``uv run [--no-sync] sft @ CONFIG [--KEY VALUE …]`` in the
Prime-RL checkout: ``--data`` becomes ``--data.name``, each ``--override
KEY=VALUE`` becomes ``--KEY VALUE``, the first-class flags their config keys,
and ``--target-examples`` / ``--target-micro-steps`` derive ``--max-steps``
from the config's ``data.batch_size`` (and, when asked, the scheduler's decay
and the checkpoint intervals). A local JSONL ``--data`` is staged into the
work dir when ``--tool-defs-mode omit`` or ``--chat-template-kwarg`` change
its rows. Output goes to ``<work-dir>/logs/trainer.log`` (and the terminal
with ``--follow``). No secret is put on the command line: the trainer gets
the environment it was started with.
"""

from __future__ import annotations

import json
import math
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

from . import sft_publish

TRUNCATION_MODES = ("off", "keep-first-user", "custom-trainer-pretokenized")


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
    if o.compat_profile is not None:
        raise UserError(f"--compat-profile {o.compat_profile!r}: this BenchFlow ships no compatibility profiles; "
                        "pass the settings with --override")
    if o.message_tail_truncation not in TRUNCATION_MODES:
        raise UserError(f"--message-tail-truncation {o.message_tail_truncation!r}: use {', '.join(TRUNCATION_MODES)}")
    if o.message_tail_truncation != "off":
        raise UserError(f"--message-tail-truncation {o.message_tail_truncation}: not available in this BenchFlow "
                        "(it needs the model's tokenizer); use off")
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


def _stage_data(o: SftOptions, work: Path) -> tuple[str | None, str | None]:
    """(data name passed to Prime-RL, sha256 of the local data) — staging rows when they must change."""
    if o.data is None:
        return None, None
    local = Path(o.data)
    if not local.is_file():
        if o.tool_defs_mode == "omit" or o.chat_template_kwargs:
            raise UserError(f"--data {o.data}: --tool-defs-mode omit and --chat-template-kwarg change local rows; "
                            "give a local JSONL file")
        return o.data, None
    if o.tool_defs_mode == "preserve" and not o.chat_template_kwargs:
        return str(local.resolve()), _sha256(local)
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
    staged = atomic.write_jsonl(work / "data" / "train.jsonl", rows)
    return str(staged.resolve()), _sha256(staged)


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
    for key, value in (("data.pack_function", o.pack_function), ("data.loss_mask", o.loss_mask),
                       ("loss.normalization", o.loss_normalization), ("model.attn", o.model_attn),
                       ("data.renderer_mode", o.renderer_mode)):
        if value is not None:
            settings[key] = value
    settings.update(_derived(o, config, overrides))
    settings.update(overrides)
    argv = ["uv", "run", *(["--no-sync"] if o.uv_no_sync else []), "sft", "@", str(o.config.resolve())]
    for key, value in settings.items():
        argv += [f"--{key}", str(value)]
    if o.dry_run:
        argv.append("--dry-run")
    return argv, settings


def _run(argv: list[str], cwd: Path, log: Path, follow: bool) -> int:
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
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
    data_name, data_hash = _stage_data(o, work)
    argv, settings = build_command(o, data_name, output_dir, config)
    log = work / "logs" / "trainer.log"
    started = datetime.now().isoformat(timespec="seconds")
    code = _run(argv, checkout, log, o.follow)
    record = {
        "kind": "benchflow.train-run", "schema_version": 1, "backend": o.backend,
        "config": str(o.config.resolve()), "config_sha256": _sha256(o.config), "data": data_name,
        "data_sha256": data_hash, "command": argv, "cwd": str(checkout), "settings": settings,
        "output_dir": str(output_dir), "log": str(log.resolve()), "dry_run": o.dry_run, "started_at": started,
        "finished_at": datetime.now().isoformat(timespec="seconds"), "exit_code": code}
    atomic.write_json(manifest, record)
    if publishing and code == 0 and not o.dry_run:
        record["published"] = sft_publish.publish(publishing, record, manifest, output_dir, config)
        atomic.write_json(manifest, record)
        if record["published"].get("error"):
            sys.stderr.write(f"publish: FAILED: {record['published']['error']}. The run and {manifest} are kept.\n")
    return code
