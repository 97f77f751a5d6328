"""bench bundle masks every secret shape, also inside gzip/zlib/tar and UTF-16, and never expands a bomb.

Each test plants secret values in a job folder, bundles it, and searches the
zip for the values in every form a reader could recover: the raw bytes,
gzip/zlib-decompressed bytes, tar members, and UTF-16 decodings.
"""

from __future__ import annotations

import codecs
import gzip
import io
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest
from fixtures.jobgen import TrialSpec, write_job

from benchflow.results import bundle_redact
from benchflow.results.bundle import bundle
from benchflow.util.redact import redact_obj, redact_text

TRIAL = "leaky__0000beef"

ENV_AWS = "wJalrXUtnFEMIxK7MDENGxbPxRfiCYzEXAMPLE"
ENV_DB = "db-pw-Hunter2Hunter2"
TOKEN = "tok-value-8c1f0e77"
PASSWORD = "yaml-pw-S3cr3t!x"
BASIC = "dXNlcjpiYXNpYy1wYXNzLTQyNDI="
URL_PASS = "url-pass-7781zz"
GOOGLE = "ya29.a0AfH6SMBx3kz9QpL2mN8vR4tY7uW1eZ0c"
GITLAB = "glpat-Zx8Yw7Vu6Ts5Rq4Po3Nm"
JSON_OPENAI = "openai-value-1f2e3d4c5b6a"
JSON_CLIENT = "client-secret-value-9a8b7c"
ANTHROPIC = "sk-ant-api03-" + "Q9w8E7r6T5" * 4

TEXT = f"""AWS_SECRET_ACCESS_KEY={ENV_AWS}
export DB_PASSWORD="{ENV_DB}"
curl -d token={TOKEN} https://example.test
password: {PASSWORD}
Authorization: Basic {BASIC}
git clone https://bob:{URL_PASS}@git.example.test/repo.git
google={GOOGLE}
gitlab {GITLAB}
config = {{"openai_api_key": "{JSON_OPENAI}", "client_secret": "{JSON_CLIENT}"}}
key {ANTHROPIC}
"""
SECRETS = [ENV_AWS, ENV_DB, TOKEN, PASSWORD, BASIC, URL_PASS, GOOGLE, GITLAB, JSON_OPENAI, JSON_CLIENT, ANTHROPIC]


def _views(data: bytes, depth: int = 0) -> list[bytes]:
    """Every byte form of ``data`` a reader could recover (decompressed, tar members, UTF-16 as UTF-8)."""
    out = [data]
    for codec in ("utf-16", "utf-16-le", "utf-16-be"):
        out.append(data.decode(codec, "ignore").encode())
    if depth > 3:
        return out
    inner = None
    if data[:2] == b"\x1f\x8b":
        inner = gzip.decompress(data)
    else:
        try:
            inner = zlib.decompress(data)
        except zlib.error:
            pass
    if inner is not None:
        out += _views(inner, depth + 1)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            for member in tar.getmembers():
                if member.isfile():
                    out += _views(tar.extractfile(member).read(), depth + 1)
    except (tarfile.TarError, EOFError, zlib.error, OSError):
        pass
    return out


def _zip_views(path: Path) -> list[bytes]:
    with zipfile.ZipFile(path) as archive:
        return [view for name in archive.namelist() for view in _views(archive.read(name))]


def _assert_no_secret(path: Path, secrets: list[str]) -> None:
    views = _zip_views(path)
    for secret in secrets:
        for encoding in ("utf-8", "utf-16-le", "utf-16-be"):
            needle = secret.encode(encoding)
            assert not any(needle in view for view in views), f"{secret!r} ({encoding}) is in the bundle"


def _job(tmp_path: Path, files: dict[str, bytes | str]) -> Path:
    return write_job(tmp_path, "job", [TrialSpec("leaky", 1.0, suffix="0000beef", files=files)])


def _tar_gz(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_every_shape_is_masked_in_plain_text_files(tmp_path):
    job = _job(tmp_path, {"agent/session.log": TEXT, "evidence/workspace/app/.env": TEXT,
                          "artifacts/settings.json": f'{{"openai_api_key": "{JSON_OPENAI}", '
                                                      f'"client_secret": "{JSON_CLIENT}", "max_tokens": 5}}',
                          "artifacts/events.jsonl": f'{{"nested": {{"openai_api_key": "{JSON_OPENAI}"}}}}\n'})
    out = tmp_path / "b.zip"
    report = bundle(job, out)
    _assert_no_secret(out, SECRETS)
    files = {f.path: f for f in report.files}
    assert files[f"{TRIAL}/agent/session.log"].masked >= len(SECRETS)
    with zipfile.ZipFile(out) as archive:
        settings = archive.read(f"job/{TRIAL}/artifacts/settings.json").decode()
    assert '"max_tokens": 5' in settings  # counts stay


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"])
def test_utf16_text_is_decoded_redacted_and_kept_utf16(tmp_path, encoding):
    job = _job(tmp_path, {"artifacts/notes.txt": TEXT.encode(encoding)})
    out = tmp_path / "b.zip"
    report = bundle(job, out)
    _assert_no_secret(out, SECRETS)
    with zipfile.ZipFile(out) as archive:
        kept = archive.read(f"job/{TRIAL}/artifacts/notes.txt")
    assert "AWS_SECRET_ACCESS_KEY=***" in kept.decode(encoding)
    assert next(f for f in report.files if f.path.endswith("notes.txt")).redacted


def test_gzip_and_zlib_content_is_redacted_and_recompressed(tmp_path):
    job = _job(tmp_path, {"agent/log.txt.gz": gzip.compress(TEXT.encode()),
                          "agent/blob.z": zlib.compress(TEXT.encode()),
                          "agent/wide.txt.gz": gzip.compress(codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"))})
    out = tmp_path / "b.zip"
    bundle(job, out)
    _assert_no_secret(out, SECRETS)
    with zipfile.ZipFile(out) as archive:
        assert b"DB_PASSWORD=" in gzip.decompress(archive.read(f"job/{TRIAL}/agent/log.txt.gz"))
        assert b"DB_PASSWORD=" in zlib.decompress(archive.read(f"job/{TRIAL}/agent/blob.z"))


def test_a_compressed_workspace_tar_is_repacked_redacted(tmp_path):
    workspace = _tar_gz({"app/.env": TEXT.encode(), "app/data.json.gz": gzip.compress(TEXT.encode()),
                         "app/main.py": b"print('hello')\n"})
    job = _job(tmp_path, {"evidence/workspace.tar.gz": workspace})
    out = tmp_path / "b.zip"
    report = bundle(job, out)
    _assert_no_secret(out, SECRETS)
    with zipfile.ZipFile(out) as archive, \
            tarfile.open(fileobj=io.BytesIO(archive.read(f"job/{TRIAL}/evidence/workspace.tar.gz"))) as tar:
        assert tar.extractfile("app/main.py").read() == b"print('hello')\n"
    assert next(f for f in report.files if f.path.endswith("workspace.tar.gz")).masked >= len(SECRETS)


def test_binary_holding_a_utf16_secret_is_left_out(tmp_path):
    blob = b"\x7fELF" + bytes(range(256)) * 4 + f"key={ANTHROPIC}".encode("utf-16-le") + b"\x00" * 64
    job = _job(tmp_path, {"artifacts/app.bin": blob})
    out = tmp_path / "b.zip"
    report = bundle(job, out)
    _assert_no_secret(out, [ANTHROPIC])
    assert {"path": f"{TRIAL}/artifacts/app.bin", "reason": "binary file holding a secret-looking value"} \
        in report.left_out


@pytest.mark.parametrize("name", ["evidence/workspace.tar.gz", "agent/huge.log.gz", "agent/huge.z"])
def test_a_compression_bomb_is_left_out_without_expanding_it(tmp_path, monkeypatch, name):
    monkeypatch.setattr(bundle_redact, "MAX_EXPANDED_BYTES", 1 << 20)
    zeros = b"\0" * (8 << 20)
    payload = {"evidence/workspace.tar.gz": lambda: _tar_gz({"bomb.bin": zeros}),
               "agent/huge.log.gz": lambda: gzip.compress(zeros), "agent/huge.z": lambda: zlib.compress(zeros)}[name]()
    job = _job(tmp_path, {name: payload, "agent/ok.txt": f"token={TOKEN}\n"})
    out = tmp_path / "b.zip"
    report = bundle(job, out)
    left = {row["path"]: row["reason"] for row in report.left_out}
    assert "expands past 1 MiB" in left[f"{TRIAL}/{name}"]
    assert f"{TRIAL}/agent/ok.txt" in {f.path for f in report.files}
    with zipfile.ZipFile(out) as archive:
        assert f"job/{TRIAL}/{name}" not in archive.namelist()
    _assert_no_secret(out, [TOKEN])


def test_a_link_to_a_host_file_is_not_bundled(tmp_path):
    host = tmp_path / "host-secret.txt"
    host.write_text(f"plain words {PASSWORD[::-1]}\n")
    job = _job(tmp_path, {"agent/ok.txt": "fine\n"})
    (job / TRIAL / "agent" / "link.txt").symlink_to(host)
    out = tmp_path / "b.zip"
    report = bundle(job, out)
    _assert_no_secret(out, [PASSWORD[::-1]])
    assert {"path": f"{TRIAL}/agent/link.txt", "reason": "not a regular file"} in report.left_out


def test_names_that_are_not_secrets_keep_their_values():
    text = "max_tokens=1024 total_tokens: 55 password_file=/run/pw author: Ann sort: key=id token_type: bearer"
    assert redact_text(text) == text
    assert redact_obj({"max_tokens": "5", "token_type": "bearer", "tokenizer": "gpt2"}) == \
        {"max_tokens": "5", "token_type": "bearer", "tokenizer": "gpt2"}
    assert redact_obj({"openai_api_key": "v1", "clientSecret": "v2", "DB_PASSWORD": "v3"}) == \
        {"openai_api_key": "***", "clientSecret": "***", "DB_PASSWORD": "***"}
