"""What ``bench branch`` was asked: :class:`BranchSpec`, the ``--child`` syntax and ``--checkpoints``.

Bad input is refused here, before anything starts, with a one-line
:class:`BranchSpecError` (exit 2) naming the flag and the fix.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from benchflow.errors import ConfigError

LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class BranchSpecError(ConfigError):
    """A ``bench branch`` flag that cannot be used as given."""


class ChildSpec(BaseModel):
    """One ``--child``: its label, the child it forks after (nested), and its own prompt."""

    label: str
    parent: str | None = None
    prompt: str | None = None
    """The child's prompt; None: the parent's remaining prompts (or the task's)."""


class BranchSpec(BaseModel):
    """Every ``bench branch`` setting, as the library takes it (``benchflow.branch.run_branch``)."""

    tasks_dir: str
    agent: str = "claude-agent-acp"
    model: str | None = None
    reasoning_effort: str | None = None
    harness: Literal["acp", "native"] = "acp"
    sandbox: str | None = None
    prompts: list[str] = Field(default_factory=list)
    checkpoint_after_prompt: int | None = Field(None, ge=0)
    """None: 1, or 0 for the oracle and with --from-checkpoint."""
    children: list[ChildSpec] = Field(default_factory=list)
    snapshot_layers: Literal["sandbox", "environment", "both"] = "sandbox"
    parent_mode: Literal["continue", "discard"] | None = None
    """None: continue, or discard with --from-checkpoint."""
    retain_snapshots: bool = False
    from_checkpoint: str | None = None
    fork: str | None = None
    checkpoints: list[int] | Literal["every-prompt"] | None = None
    checkpoint_keep: int = Field(3, ge=1)
    resume_session: bool = False
    child_retries: int = Field(1, ge=0)
    stop_on_child_failure: bool = False
    concurrency: int = Field(1, ge=1)
    isolate_children: bool = False
    agent_env: dict[str, str] = Field(default_factory=dict)
    include: list[str] = Field(default_factory=list)
    jobs_dir: str = "jobs"
    job_name: str | None = None
    ca_bundle: str | None = None
    """A CA bundle (PEM path, or ``host``) trusted inside builds and sandboxes, as ``bench run --ca-bundle``."""

    @property
    def isolated(self) -> bool:
        """Each child of the trial's own fork in a sandbox of its own (--isolate-children, --concurrency > 1)."""
        return self.isolate_children or self.concurrency > 1

    @property
    def at_prompt(self) -> int:
        if self.checkpoint_after_prompt is not None:
            return self.checkpoint_after_prompt
        return 0 if self.agent == "oracle" or self.from_checkpoint else 1

    @property
    def parent(self) -> str:
        return self.parent_mode or ("discard" if self.from_checkpoint else "continue")

    def request(self) -> dict:
        """What identifies this branch request (a rerun with the same request resumes its job)."""
        return self.model_dump(mode="json", exclude={"agent_env", "jobs_dir", "job_name", "concurrency",
                                                     "isolate_children", "child_retries", "ca_bundle"})


def parse_child(text: str) -> ChildSpec:
    """``label=NAME[,parent=LABEL][,prompt=TEXT|,prompt-file=PATH]``; ``prompt=`` takes the rest.

    Raises:
        BranchSpecError: a missing label, an unknown key, or an unreadable prompt file.
    """
    fields: dict[str, str] = {}
    rest = text
    while rest:
        if rest.startswith("prompt="):
            fields["prompt"] = rest[len("prompt="):]
            break
        item, _, rest = rest.partition(",")
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in {"label", "parent", "prompt-file"}:
            raise BranchSpecError(f"--child {text!r}: {item!r} is not label=, parent=, prompt= or prompt-file=; "
                                  "give label=NAME[,parent=LABEL][,prompt=TEXT|,prompt-file=PATH]")
        if key in fields:
            raise BranchSpecError(f"--child {text!r}: {key}= is given twice")
        fields[key] = value.strip()
    label = fields.get("label")
    if not label or not LABEL.fullmatch(label):
        raise BranchSpecError(f"--child {text!r}: give label=NAME first (letters, digits, '_', '.', '-')")
    if "prompt" in fields and "prompt-file" in fields:
        raise BranchSpecError(f"--child {text!r}: give prompt= or prompt-file=, not both")
    prompt = fields.get("prompt")
    if "prompt-file" in fields:
        path = Path(fields["prompt-file"]).expanduser()
        try:
            prompt = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BranchSpecError(f"--child {label}: prompt-file {path}: cannot be read ({exc}); "
                                  "give a UTF-8 text file") from None
    if prompt is not None and not prompt.strip():
        raise BranchSpecError(f"--child {label}: the prompt is empty; give text or leave prompt= out")
    return ChildSpec(label=label, parent=fields.get("parent") or None, prompt=prompt)


def check_children(children: list[ChildSpec]) -> None:
    """At least two children per fork, unique labels, every ``parent=`` a known label, no cycle.

    Raises:
        BranchSpecError: the tree cannot be built.
    """
    labels = [c.label for c in children]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise BranchSpecError(f"--child label={twice[0]} is given twice; every child needs its own label")
    known = set(labels)
    for child in children:
        if child.parent is not None and child.parent not in known:
            raise BranchSpecError(f"--child {child.label}: parent={child.parent} names no --child label")
        seen, node = {child.label}, child.parent
        while node is not None:
            if node in seen:
                raise BranchSpecError(f"--child {child.label}: parent= links form a cycle")
            seen.add(node)
            node = next(c.parent for c in children if c.label == node)
    groups: dict[str | None, int] = {}
    for child in children:
        groups[child.parent] = groups.get(child.parent, 0) + 1
    if groups.get(None, 0) < 2:
        raise BranchSpecError("give at least two --child options (each label=NAME[,prompt=TEXT]); "
                              "a fork of one child is a plain run")
    for parent, n in groups.items():
        if parent is not None and n < 2:
            raise BranchSpecError(f"--child parent={parent}: a nested fork needs at least two children "
                                  f"after {parent}")


def parse_checkpoints(value: str | None, flag: str = "--checkpoints") -> list[int] | Literal["every-prompt"] | None:
    """``every-prompt`` or ``prompt:N[,M]`` (N ≥ 1).

    Raises:
        BranchSpecError: anything else.
    """
    if value is None:
        return None
    text = value.strip()
    if text == "every-prompt":
        return "every-prompt"
    match = re.fullmatch(r"prompt:(\d+(?:,\d+)*)", text)
    numbers = [int(n) for n in match.group(1).split(",")] if match else []
    if not numbers or min(numbers) < 1:
        raise BranchSpecError(f"{flag} {value!r}: give every-prompt or prompt:N[,M] with N >= 1")
    return sorted(set(numbers))


def checkpoint_after(points: list[int] | Literal["every-prompt"] | None, n_prompts: int) -> list[int]:
    """The prompt numbers after which an automatic checkpoint is taken, within ``n_prompts``."""
    if points is None:
        return []
    if points == "every-prompt":
        return list(range(1, n_prompts + 1))
    return [n for n in points if n <= n_prompts]
