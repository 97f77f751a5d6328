"""The declared environment state of a task (``environment.toml``/``.yaml``) and the capture's integrity
check: what ``--snapshot-layers environment|both`` reads and refuses."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from benchflow.branch.env_state import StateDeclarationError, declared_state, restore
from benchflow.errors import SandboxError


def test_a_task_without_a_manifest_or_without_state_declares_none(tmp_path: Path) -> None:
    assert declared_state(tmp_path) is None
    (tmp_path / "environment.toml").write_text('[environment]\nname = "x"\nimage = "y"\n')
    assert declared_state(tmp_path) is None


@pytest.mark.parametrize("name, text", [
    ("environment.toml", '[environment]\nstate = { kind = "sqlite", paths = ["/app/*.db", "/srv/a.sqlite"] }\n'),
    ("environment.yaml", "environment:\n  state: {kind: sqlite, paths: [/app/*.db, /srv/a.sqlite]}\n"),
])
def test_sqlite_state_is_read_from_toml_or_yaml(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    state = declared_state(tmp_path)
    assert state is not None and (state.kind, state.paths) == ("sqlite", ("/app/*.db", "/srv/a.sqlite"))


@pytest.mark.parametrize("state, field", [
    ('{ kind = "postgres", paths = ["/a.db"] }', "environment.state.kind"),
    ('{ kind = "sqlite", paths = [] }', "environment.state.paths"),
    ('{ kind = "sqlite", paths = ["app.db"] }', "environment.state.paths"),
    ('"sqlite"', "environment.state"),
])
def test_a_malformed_state_names_the_file_and_the_field(tmp_path: Path, state: str, field: str) -> None:
    (tmp_path / "environment.toml").write_text(f"[environment]\nstate = {state}\n")
    with pytest.raises(StateDeclarationError) as caught:
        declared_state(tmp_path)
    message = str(caught.value)
    assert str(tmp_path / "environment.toml") in message and field in message and "\n" not in message


def test_an_unreadable_manifest_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "environment.toml").write_text("[environment\n")
    with pytest.raises(StateDeclarationError, match="environment.toml: not readable as toml"):
        declared_state(tmp_path)


class _Untouchable:
    """A sandbox that must not be used: the capture is refused before anything is put back."""

    async def exec(self, *args, **kwargs):
        raise AssertionError("the sandbox was used")


def test_a_capture_that_differs_from_its_manifest_is_refused(tmp_path: Path) -> None:
    (tmp_path / "environment.toml").write_text('[environment]\nstate = { kind = "sqlite", paths = ["/a.db"] }\n')
    state = declared_state(tmp_path)
    folder = tmp_path / "state"
    (folder / "files").mkdir(parents=True)
    (folder / "files/0").write_bytes(b"changed")
    entry = {"path": "/a.db", "stored": "files/0", "sha256": hashlib.sha256(b"captured").hexdigest(), "size": 8,
             "mode": "644", "uid": 0, "gid": 0}
    (folder / "manifest.json").write_text(json.dumps({"files": [entry]}))
    with pytest.raises(SandboxError, match="does not match its manifest"):
        asyncio.run(restore(_Untouchable(), state, folder))
    (folder / "manifest.json").unlink()
    with pytest.raises(SandboxError, match="no readable capture"):
        asyncio.run(restore(_Untouchable(), state, folder))
