"""``bench train run sft --compat-profile``: named sets of settings that reproduce a historical training run.

``env0-mobile300-pr828`` reproduces BenchFlow's Mobile300 PR828 run, trained by a custom trainer on
Prime-SFT rows whose ``tool_defs`` the trainer never saw, counting ``max_steps`` in batch-size-1
micro-steps and averaging the loss per row: 300 micro-steps (the scheduler's decay and the checkpoint
intervals follow the derived ``max_steps``), ``stack`` packing, every role in the loss, per-row mean loss,
SDPA attention, no Prime-RL renderer, tool schemas left out, and each row staged as the custom trainer's
pretokenized, shifted tensors (``custom-trainer-pretokenized``). A flag given with the profile must agree
with it; one that does not is refused in one line.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from benchflow.errors import UserError

if TYPE_CHECKING:
    from .sft_run import SftOptions

MOBILE300 = "env0-mobile300-pr828"

PROFILES: dict[str, dict[str, Any]] = {
    MOBILE300: {
        "target_micro_steps": 300, "sync_scheduler": True, "sync_ckpt": True, "pack_function": "stack",
        "loss_mask": "all", "loss_normalization": "sample_mean", "model_attn": "sdpa", "renderer_mode": "none",
        "tool_defs_mode": "omit", "message_tail_truncation": "custom-trainer-pretokenized",
    },
}
DESCRIPTIONS = {
    MOBILE300: "BenchFlow Mobile300 PR828 settings: the historical custom trainer's rows (tool_defs unseen, "
               "pretokenized shifted tensors), max_steps counted in batch-size-1 micro-steps, per-row mean loss.",
}
_FLAGS = {"target_micro_steps": "--target-micro-steps", "sync_scheduler": "--sync-scheduler-to-max-steps",
          "sync_ckpt": "--sync-ckpt-to-max-steps", "pack_function": "--pack-function", "loss_mask": "--loss-mask",
          "loss_normalization": "--loss-normalization", "model_attn": "--model-attn",
          "renderer_mode": "--renderer-mode", "tool_defs_mode": "--tool-defs-mode",
          "message_tail_truncation": "--message-tail-truncation"}
_DEFAULTS = {"sync_scheduler": True, "sync_ckpt": False, "tool_defs_mode": "preserve", "message_tail_truncation": "off"}
"""The options' own defaults: a value equal to one was not given, so the profile's wins."""


def apply_profile(o: SftOptions) -> tuple[SftOptions, dict[str, Any] | None]:
    """(the options with the profile's settings, the profile's record for train-run.json); no profile: (o, None).

    Raises:
        UserError: an unknown profile, or a flag that disagrees with the profile.
    """
    if o.compat_profile is None:
        return o, None
    settings = PROFILES.get(o.compat_profile)
    if settings is None:
        raise UserError(f"--compat-profile {o.compat_profile!r}: unknown; use {', '.join(sorted(PROFILES))}")
    name = o.compat_profile
    if o.target_examples is not None and o.target_examples != settings["target_micro_steps"]:
        raise UserError(f"--compat-profile {name} trains {settings['target_micro_steps']} micro-steps; drop "
                        f"--target-examples {o.target_examples}")
    if o.chat_template_kwargs:
        raise UserError(f"--compat-profile {name} stages pretokenized rows; drop --chat-template-kwarg")
    for key, wanted in settings.items():
        given = getattr(o, key)
        if given is not None and given != _DEFAULTS.get(key, object()) and given != wanted:
            raise UserError(f"--compat-profile {name} sets {_flag(key, wanted)}; drop {_flag(key, given)} "
                            "or the profile")
    resolved = replace(o, target_examples=None, **settings)
    record = {"name": name, "description": DESCRIPTIONS[name], "resolved_settings": dict(settings)}
    return resolved, record


def _flag(key: str, value: Any) -> str:
    """How the option is typed: ``--pack-function cat``, ``--no-sync-scheduler-to-max-steps``."""
    if isinstance(value, bool):
        return _FLAGS[key] if value else "--no-" + _FLAGS[key][2:]
    return f"{_FLAGS[key]} {value}"
