"""The dataset registry JSON (contracts §7.3): datasets → versions → pinned tasks.

A registry is a JSON list of dataset versions. Each task is pinned either by a
git repository and commit (``git_url``, ``git_commit_id``, ``path``) or, as a
BenchFlow Hub serves them, by a ``.tar.gz`` archive (``archive_url``); both
carry the task's content ``digest`` (§1.9), which is checked before any run.

Harbor's ``registry.json`` is the same list without digests: a git task with no
``digest`` is a Harbor entry, its digest computed from what is fetched
(``harbor_fetch``), and its ``git_commit_id`` may be missing (the repository's
HEAD) or a branch or tag: such a task is not pinned, and the commit fetched is
recorded instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from benchflow.errors import ConfigError, DatasetError

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class RegistryTask(BaseModel):
    """One pinned task of a dataset version."""

    model_config = ConfigDict(extra="allow")

    name: str
    """The task's name; also its folder name in a run."""
    digest: str | None = None
    """``sha256:<hex>`` of the task's files (contracts §1.9); None in a Harbor entry (computed when fetched)."""
    git_url: str | None = None
    git_commit_id: str | None = None
    """The full commit SHA the task is read at; the fetched commit must equal it."""
    path: str | None = None
    """The task's folder inside the repository."""
    archive_url: str | None = None
    """A ``.tar.gz`` of the task's files (a BenchFlow Hub); relative URLs are read against the registry's."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _SEGMENT.match(value):
            raise ValueError(f"task name {value!r} must be one path segment of letters, digits, '.', '_', '-'")
        return value

    @field_validator("digest")
    @classmethod
    def _digest(cls, value: str | None) -> str | None:
        if value is not None and not _DIGEST.match(value):
            raise ValueError(f"digest {value!r} is not sha256:<64 hex digits>")
        return value

    @model_validator(mode="after")
    def _pinned(self) -> RegistryTask:
        if self.archive_url:
            if self.digest is None:
                raise ValueError(f"task {self.name}: an archive_url task needs its digest")
            return self
        if self.digest is None:  # a Harbor entry: git_commit_id may be missing (HEAD) or a ref
            if not self.path:
                raise ValueError(f"task {self.name}: give git_url, git_commit_id and path, or archive_url")
            if not self.git_url:
                return self  # Harbor's local-path task: listed, refused by name if it is run
            if (self.git_commit_id or "").startswith("-"):
                raise ValueError(f"task {self.name}: git_commit_id {self.git_commit_id!r} is not a commit or ref")
            self.path = str(PurePosixPath(self.path))  # Harbor reads "./tasks/x/" as "tasks/x"
        elif not (self.git_url and self.git_commit_id and self.path):
            raise ValueError(f"task {self.name}: give git_url, git_commit_id and path, or archive_url")
        elif not re.fullmatch(r"[0-9a-f]{40}", self.git_commit_id):
            raise ValueError(f"task {self.name}: git_commit_id must be a full 40-hex commit SHA")
        parts = self.path.strip("/").split("/")
        if self.path.startswith("/") or any(p in {"", ".", ".."} for p in parts):
            raise ValueError(f"task {self.name}: path {self.path!r} must be a relative folder in the repository")
        return self

    @property
    def hex(self) -> str:
        if self.digest is None:
            raise ValueError(f"task {self.name}: no digest until it is fetched")
        return self.digest.split(":", 1)[1]

    @property
    def pinned(self) -> bool:
        """Pinned to one commit (a full SHA); False for a Harbor entry at HEAD, a branch or a tag."""
        return bool(self.git_commit_id and re.fullmatch(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}", self.git_commit_id))


class DatasetVersion(BaseModel):
    """One version of a dataset: its pinned tasks and the bench versions it was validated with."""

    model_config = ConfigDict(extra="allow")

    name: str
    version: str
    git_tag: str | None = None
    bench_version: str | None = None
    """A PEP 440 specifier (``>=0.6,<0.7``) the running bench's base version must satisfy."""
    description: str | None = None
    tasks: list[RegistryTask] = Field(default_factory=list)

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        return str(value) if isinstance(value, (int, float)) else value

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class DatasetRef:
    """``name@version`` (or ``org/name@version`` for a BenchFlow Hub) as the user wrote it."""

    name: str
    version: str

    @property
    def on_hub(self) -> bool:
        return "/" in self.name

    def __str__(self) -> str:
        return f"{self.name}@{self.version}"


def parse_dataset_ref(text: str, flag: str = "--dataset") -> DatasetRef:
    """``name@version`` → DatasetRef.

    Raises:
        ConfigError: no ``@version``, an empty part, or ``latest`` (versions are pinned).
    """
    name, at, version = text.strip().rpartition("@")
    if not at:
        raise ConfigError(f"{flag} {text!r}: give name@version (e.g. skillsbench@1.1); versions are pinned")
    if not name or not version or not all(_SEGMENT.match(p) for p in name.split("/")) or name.count("/") > 1:
        raise ConfigError(f"{flag} {text!r}: give name@version or org/name@version (e.g. skillsbench@1.1)")
    if version == "latest":
        raise ConfigError(f"{flag} {text!r}: there is no 'latest'; name the version (bench hub list shows them)")
    return DatasetRef(name, version)


def parse_registry(data: Any, source: str) -> list[DatasetVersion]:
    """The registry document at ``source`` as dataset versions.

    Raises:
        DatasetError: not a list of dataset versions; the message names the entry and field.
    """
    if isinstance(data, dict) and isinstance(data.get("datasets"), list):
        data = data["datasets"]  # a hub may wrap the list
    if not isinstance(data, list):
        raise DatasetError(f"{source}: a registry is a JSON list of dataset versions")
    out = []
    for index, entry in enumerate(data):
        try:
            out.append(DatasetVersion.model_validate(entry))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "entry"
            message = str(err["msg"]).removeprefix("Value error, ")
            raise DatasetError(f"{source}: entry {index}: {where}: {message}") from None
    return out


def find_version(versions: list[DatasetVersion], ref: DatasetRef, source: str) -> DatasetVersion:
    """The entry for ``ref`` (matched by name and version string).

    Raises:
        DatasetError: no such dataset or version; the message lists what there is.
    """
    same = [v for v in versions if v.name == ref.name]
    if not same:
        names = sorted({v.name for v in versions})
        shown = ", ".join(names[:8]) + (" …" if len(names) > 8 else "")
        raise DatasetError(f"{source}: no dataset {ref.name!r} (it has: {shown or 'none'})")
    for version in same:
        if version.version == ref.version:
            return version
    have = ", ".join(v.version for v in same)
    raise DatasetError(f"{source}: {ref.name} has no version {ref.version!r} (it has: {have})")
