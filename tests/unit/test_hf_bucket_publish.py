"""``bench run --publish-bucket``: the request mapping onto huggingface_hub's bucket API.

The Hub's buckets take files through its Xet storage protocol, which no test double here speaks, so these
tests stop at the library's calls: which bucket is made, which files go where, and that they are the
redacted ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchflow.errors import ConfigError, UserError
from benchflow.hf import client
from benchflow.hf.publish import publish_job, publish_request
from tests.fixtures.jobgen import TrialSpec, write_job

FAKE_KEY = "sk-ant-api03-" + "Q9w8E7r6T5" * 4


class RecordingApi:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.sent: dict[str, bytes] = {}

    def create_bucket(self, bucket_id: str, *, exist_ok: bool = False) -> None:
        self.calls.append(("create_bucket", (bucket_id, exist_ok)))

    def batch_bucket_files(self, bucket_id: str, *, add: list[tuple[str, str]]) -> None:
        self.calls.append(("batch_bucket_files", bucket_id))
        self.sent.update({dest: Path(src).read_bytes() for src, dest in add})


def test_the_job_goes_to_the_bucket_redacted_under_prefix_and_job(tmp_path: Path, monkeypatch) -> None:
    job = write_job(tmp_path, "job-7", [TrialSpec("hello", 1.0, suffix="0000cafe", acp_events=[
        {"type": "user_message", "text": f"key {FAKE_KEY}"}])], summary={"agent": "oracle"})
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    api = RecordingApi()
    monkeypatch.setattr(client, "api", lambda **_: api)
    request = publish_request(None, bucket="acme/eval-artifacts", prefix="runs/2026")
    report = publish_job(job, request)
    assert report.error is None and report.bucket == "acme/eval-artifacts"
    assert api.calls == [("create_bucket", ("acme/eval-artifacts", True)), ("batch_bucket_files", "acme/eval-artifacts")]
    assert "runs/2026/job-7/bundle.json" in api.sent
    assert "runs/2026/job-7/hello__0000cafe/trajectory/acp_trajectory.jsonl" in api.sent
    assert all(FAKE_KEY.encode() not in data for data in api.sent.values())
    assert report.files == len(api.sent)


def test_bucket_flags_are_checked_before_the_run(monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="--publish-bucket: set HF_TOKEN"):
        publish_request(None, bucket="acme/b")
    with pytest.raises(UserError, match="not a Hugging Face repo id"):
        publish_request(None, bucket="no-slash")
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    with pytest.raises(ConfigError, match="needs --publish-hf"):
        publish_request(None, bucket="acme/b", eval_model="a/m", eval_dataset="a/d", eval_task="t")
    assert publish_request(None) is None
