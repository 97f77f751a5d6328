"""The hub's storage pieces: migrations, tokens, task archives, record schemas."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from benchflow.errors import UserError
from benchflow.hub import migrations, models
from benchflow.hub.archives import BadArchive, archive_digest, pack
from benchflow.hub.database import engine_for
from benchflow.hub.ingest import schema_error
from benchflow.hub.names import parse_ref
from benchflow.hub.tokens import create_token, user_for
from benchflow.tasks.digest import task_digest

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "reward-pass"


@pytest.fixture
def engine(tmp_path: Path):
    engine = engine_for(f"sqlite:///{tmp_path / 'hub.sqlite3'}")
    yield engine
    engine.dispose()


def test_a_fresh_database_is_upgraded_to_exactly_the_models(engine) -> None:
    assert migrations.upgrade(engine) == [step for step, _, _ in migrations.STEPS]
    assert migrations.upgrade(engine) == []  # already there: nothing runs
    found = inspect(engine)
    for table in models.metadata.sorted_tables:
        assert {c["name"] for c in found.get_columns(table.name)} == set(table.columns.keys()), table.name


def test_a_database_newer_than_this_code_is_refused(engine) -> None:
    migrations.upgrade(engine)
    with engine.begin() as conn:
        conn.execute(text("UPDATE hub_schema_version SET version = 99"))
    with pytest.raises(UserError, match="schema step 99, newer than this BenchFlow knows"):
        migrations.upgrade(engine)


def test_tokens_are_stored_hashed(engine, tmp_path: Path) -> None:
    migrations.upgrade(engine)
    token = create_token(engine, "alice")
    second = create_token(engine, "alice")
    assert user_for(engine, token)[1] == user_for(engine, second)[1] == "alice"
    assert user_for(engine, token + "x") is None and user_for(engine, None) is None
    engine.dispose()
    assert token.encode() not in (tmp_path / "hub.sqlite3").read_bytes()


def test_an_archive_carries_the_task_digest(tmp_path: Path) -> None:
    out = tmp_path / "task.tar.gz"
    with out.open("wb") as handle:
        pack(TASK, handle)
    assert archive_digest(out) == task_digest(TASK)
    again = io.BytesIO()
    pack(TASK, again)
    assert again.getvalue() == out.read_bytes()  # reproducible bytes


def _tar(tmp_path: Path, member: tarfile.TarInfo, data: bytes = b"") -> Path:
    out = tmp_path / "bad.tar.gz"
    with tarfile.open(out, "w:gz") as tar:
        tar.addfile(member, io.BytesIO(data) if member.isfile() else None)
    return out


@pytest.mark.parametrize(("kind", "name", "message"), [
    (tarfile.SYMTYPE, "link", "not a regular file or folder"),
    (tarfile.REGTYPE, "../escape.txt", "points outside the task folder"),
    (tarfile.REGTYPE, "/etc/passwd", "points outside the task folder"),
    (tarfile.CHRTYPE, "dev", "not a regular file or folder"),
])
def test_a_hostile_archive_is_refused(tmp_path: Path, kind: bytes, name: str, message: str) -> None:
    member = tarfile.TarInfo(name)
    member.type = kind
    member.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
    with pytest.raises(BadArchive, match=message):
        archive_digest(_tar(tmp_path, member))


def test_not_a_tar_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not gzip at all")
    with pytest.raises(BadArchive, match="not a readable tar.gz"):
        archive_digest(junk)


def test_schema_errors_name_the_field() -> None:
    assert schema_error("result", {"schema_version": 1, "task_name": "t"}) is None
    assert schema_error("result", {"schema_version": 1, "task_name": "t", "n_tool_calls": "many"}).startswith("n_tool_calls: 'many'")
    assert "'task_name' is a required property" in schema_error("result", {"schema_version": 1, "agent": "x"})


@pytest.mark.parametrize("spec", ["mini@1.0", "acme/mini", "acme/mini@", "a/b/c@1", "acme/../x@1"])
def test_a_dataset_name_must_be_org_name_version(spec: str) -> None:
    with pytest.raises(UserError, match="org/name@version"):
        parse_ref(spec)
    assert str(parse_ref("acme/mini@1.0")) == "acme/mini@1.0"


def test_a_capture_left_unverified_is_verified_when_the_hub_starts_again(engine, tmp_path: Path) -> None:
    import hashlib
    import zipfile

    from benchflow.hub import store
    from benchflow.hub.app import Hub, verify_pending
    from benchflow.hub.blobs import FilesystemBlobStore

    migrations.upgrade(engine)
    create_token(engine, "alice")
    line = b'{"type": "agent_message", "text": "done"}\n'
    capture = tmp_path / "capture.zip"
    with zipfile.ZipFile(capture, "w") as archive:
        archive.writestr("manifest.json", '{"kind": "benchflow.trajectory-capture", "files": [{"path": '
                         f'"trajectory/a.jsonl", "sha256": "{hashlib.sha256(line).hexdigest()}"}}]}}')
        archive.writestr("trajectory/a.jsonl", line)
    key = "sha256:" + hashlib.sha256(capture.read_bytes()).hexdigest()
    hub = Hub(engine=engine, blobs=FilesystemBlobStore(tmp_path / "blobs"))
    hub.blobs.put_file(key, capture)
    assert store.add_capture(engine, digest=key, user_id=1, blob_key=key, size=1)
    assert verify_pending(hub) == 1
    assert store.capture(engine, key)["status"] == "verified"
    assert verify_pending(hub) == 0


def test_an_existing_database_runs_only_the_new_steps(engine, monkeypatch: pytest.MonkeyPatch) -> None:
    migrations.upgrade(engine)
    create_token(engine, "alice")

    def later(conn) -> None:  # noqa: ANN001 - what a later release's step looks like
        conn.execute(text("ALTER TABLE users ADD COLUMN display_name VARCHAR(200)"))

    step = migrations.LATEST + 1
    monkeypatch.setattr(migrations, "STEPS", [*migrations.STEPS, (step, "users.display_name", later)])
    monkeypatch.setattr(migrations, "LATEST", step)
    assert migrations.upgrade(engine) == [step]
    assert migrations.upgrade(engine) == []
    with engine.connect() as conn:
        assert conn.execute(text("SELECT name, display_name FROM users")).all() == [("alice", None)]
        assert migrations.current_version(conn) == step


def test_a_step_1_database_gets_the_control_columns_and_keeps_its_entries(engine) -> None:
    with engine.begin() as conn:
        migrations.current_version(conn)  # makes hub_schema_version, as a first start did
        migrations._step_1(conn)
        conn.execute(text("INSERT INTO hub_schema_version (version) VALUES (1)"))
        conn.execute(text("INSERT INTO users (id, name, created_at) VALUES (1, 'alice', 'now')"))
        conn.execute(text("INSERT INTO runs (id, job_name, pusher_id, pushed_at, bundle_key, n_trials) "
                          "VALUES (1, 'j', 1, 'now', 'k', 2)"))
        conn.execute(text("INSERT INTO leaderboard_entries (run_id, agent, tasks, trials) VALUES (1, 'oracle', 2, 2)"))
    assert migrations.upgrade(engine) == [2]
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT agent, control, control_deviations FROM leaderboard_entries")).all()
    assert rows == [("oracle", None, None)]  # entries pushed before the step name no control
