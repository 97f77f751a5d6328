"""``verifier/verifier.md``: the verifier document and its strategies (contracts §1.11)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from benchflow.errors import TaskError

from .document import parse_task_md, read_utf8, split_sections
from .validation import issues_of

StrategyType = Literal["script", "llm-judge", "reward-kit", "agent-judge", "ors-episode"]


class Strategy(BaseModel):
    """One grading strategy; which keys are required depends on ``type``."""

    model_config = ConfigDict(extra="allow")

    type: StrategyType
    command: str | None = None
    rubric: str | None = None
    model: str | None = None
    input_dir: str | None = None
    context: str | None = None
    context_file: str | None = None
    root: str | None = None
    entrypoint: str = "reward.py"
    criteria: str | None = None
    role: str | None = None
    isolation: str | None = None
    inputs: list[Any] | None = None
    format: Literal["json", "jsonl", "auto"] | None = None

    @model_validator(mode="after")
    def _required(self) -> "Strategy":
        need = {"script": "command", "llm-judge": "rubric", "reward-kit": "root",
                "agent-judge": "role", "ors-episode": "inputs"}[self.type]
        if not getattr(self, need):
            raise ValueError(f"a '{self.type}' strategy needs '{need}'")
        if self.type == "script":
            first = shlex.split(self.command or "")[:1]
            if not first or first[0].startswith("/") or ".." in first[0]:
                raise ValueError(f"script command {self.command!r} must start with a program or a "
                                 "relative script such as './test.sh' (no absolute path, no '..')")
        if self.type == "llm-judge" and self.context and self.context_file:
            raise ValueError("set either 'context' or 'context_file', not both")
        return self


class Dimension(BaseModel):
    model_config = ConfigDict(extra="allow")
    weight: float = 1.0
    source: str | None = None


class Rubric(BaseModel):
    model_config = ConfigDict(extra="allow")
    combine: str | None = None
    dimensions: dict[str, Dimension] = Field(default_factory=dict)
    files: list[str] = Field(default_factory=list)


class Outputs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reward_text: str = "/logs/verifier/reward.txt"
    reward_json: str = "/logs/verifier/reward.json"
    details_json: str | None = None
    aggregate_policy: dict[str, Any] = Field(default_factory=dict)


class VerifierSpec(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str | None = None
    default_strategy: str | None = None
    strategies: dict[str, Strategy] = Field(default_factory=dict)
    rubric: Rubric = Field(default_factory=Rubric)
    outputs: Outputs = Field(default_factory=Outputs)

    @model_validator(mode="after")
    def _default(self) -> "VerifierSpec":
        if self.default_strategy is not None and self.default_strategy not in self.strategies:
            raise ValueError(f"default_strategy {self.default_strategy!r} is not one of the "
                             f"declared strategies ({', '.join(self.strategies) or 'none'})")
        return self

    @property
    def selected(self) -> tuple[str, Strategy] | None:
        name = self.default_strategy or next(iter(self.strategies), None)
        return (name, self.strategies[name]) if name else None


class VerifierDocument(BaseModel):
    model_config = ConfigDict(extra="allow")
    document_version: str | None = None
    verifier: VerifierSpec = Field(default_factory=VerifierSpec)


def load_verifier_md(path: Path) -> tuple[VerifierDocument, dict[str, Any], dict[str, str]]:
    """(document, raw frontmatter, judge role prompts) of a verifier.md.

    Raises:
        TaskError: the file does not parse or a strategy is incomplete.
    """
    source = f"{path.parent.name}/{path.name}"
    frontmatter, body = parse_task_md(read_utf8(path, source), source=source)
    try:
        doc = VerifierDocument.model_validate(frontmatter)
    except ValidationError as exc:
        raise TaskError(issues_of(exc, source, VerifierDocument)[0]) from None
    roles = split_sections(body, source)["roles"]
    for name, strategy in doc.verifier.strategies.items():
        if strategy.type == "agent-judge" and strategy.role not in roles:
            raise TaskError(f"{source}: strategy '{name}' uses role '{strategy.role}' but the body has "
                            f"no '## role:{strategy.role}' section; add it")
    return doc, frontmatter, roles


def strategy_files(strategy: Strategy) -> list[str]:
    """Files (relative to the verifier folder) a strategy needs in order to run."""
    if strategy.type == "script":
        tokens = shlex.split(strategy.command or "")
        return [t for t in tokens if not t.startswith("-") and ("/" in t or t.endswith((".sh", ".py")))]
    if strategy.type == "llm-judge":
        return [p for p in (strategy.rubric, strategy.context_file) if p]
    if strategy.type == "reward-kit":
        root = (strategy.root or "").rstrip("/")
        files = [f"{root}/{strategy.entrypoint}"]
        return files + ([f"{root}/{strategy.criteria}"] if strategy.criteria else [])
    return []
