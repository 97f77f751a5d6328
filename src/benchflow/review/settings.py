"""Who reviews and how: one value object for ``bench review`` and every ``--reviewer-*`` flag."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from benchflow.util.redact import drop_secrets

DEFAULT_AGENT = "opencode"
OPENCODE_MODEL = "gemini/gemini-3.5-flash-lite"
DEFAULT_IMAGE = "debian:bookworm-slim"
DEFAULT_TIMEOUT_SEC = 1800
DEFAULT_CONCURRENCY = 4
DEFAULT_MEMORY_MB = 2048
MIN_STORAGE_MB = 4096
EVIDENCE_HEADROOM_MB = 2048


@dataclass
class ReviewerSettings:
    agent: str = DEFAULT_AGENT
    model: str | None = None
    """None: gemini/gemini-3.5-flash-lite with opencode, else the agent's registry default."""
    reasoning_effort: str | None = None
    sandbox: str | None = None
    timeout_sec: float = DEFAULT_TIMEOUT_SEC
    idle_timeout_sec: float | None = None
    """None: the run's default watchdog (10 min); 0: off."""
    storage_mb: int | None = None
    memory_mb: int = DEFAULT_MEMORY_MB
    setup_timeout_sec: float | None = None
    evidence_timeout_sec: float | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    image: str | None = None
    agent_env: dict[str, str] = field(default_factory=dict)
    open_network: bool = False

    @property
    def effective_model(self) -> str | None:
        if self.model:
            return self.model
        return OPENCODE_MODEL if self.agent == DEFAULT_AGENT else None

    def storage_for(self, evidence_bytes: int) -> int:
        """``--reviewer-storage-mb``, else the evidence plus 2048 MB, at least 4096."""
        if self.storage_mb is not None:
            return self.storage_mb
        return max(MIN_STORAGE_MB, evidence_bytes // (1024 * 1024) + EVIDENCE_HEADROOM_MB)

    def build_timeout_for(self, evidence_bytes: int) -> float | None:
        """The reviewer sandbox's setup budget: the setup timeout plus the evidence's (1 s per MiB, ≥ 600),
        since the evidence is copied while the sandbox image is built. None: the task default."""
        if self.setup_timeout_sec is None and self.evidence_timeout_sec is None:
            return None
        evidence = self.evidence_timeout_sec or max(600.0, evidence_bytes / (1024 * 1024))
        return (self.setup_timeout_sec or 600.0) + evidence

    def record(self) -> dict[str, Any]:
        """As stored in reports and revisions: secret-looking agent env values dropped."""
        data = asdict(self)
        data["agent_env"] = drop_secrets(self.agent_env)
        data["model"] = self.effective_model
        data["network"] = "open" if self.open_network else "none"
        return data

    def updated(self, **changes: Any) -> "ReviewerSettings":
        """A copy with the given (non-None) fields changed (``--reviewer-*`` over a recorded reviewer)."""
        data = asdict(self)
        data.update({k: v for k, v in changes.items() if v is not None})
        return ReviewerSettings(**data)


def from_record(record: dict | None) -> ReviewerSettings:
    """The reviewer a report or revision recorded (its secret env values were never stored)."""
    if not record:
        return ReviewerSettings()
    names = set(ReviewerSettings.__dataclass_fields__)
    data = {k: v for k, v in record.items() if k in names and v is not None}
    return ReviewerSettings(**data)
