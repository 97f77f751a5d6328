"""The trainer rows' fast redaction masks exactly what the shared redactor masks."""

from __future__ import annotations

from benchflow.train import redaction
from benchflow.util import redact as shared

SAMPLES = [
    "plain text with nothing secret", "sk-ant-api03-" + "a" * 20, "key sk-proj-" + "b" * 24, "AIza" + "c" * 35,
    "ghp_" + "d" * 36, "github_pat_" + "e" * 40, "xoxb-" + "1" * 20, "hf_" + "f" * 34, "AKIA" + "G" * 16,
    "ASIA" + "H" * 16, "ya29." + "i" * 30, "glpat-" + "j" * 24, "gsk_" + "k" * 24, "xai-" + "l" * 24,
    "r8_" + "m" * 24, "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----",
    "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.c2lnbmF0dXJlMTIz", "https://user:hunter22@example.com/x",
    "Authorization: Bearer abcdefghijklmnop", "authorization: Basic dXNlcjpwYXNz", "--api-token s3cr3tvalue",
    '"x-api-key": "abcdefghijkl"', "DB_PASSWORD=hunter22", "password: hunter22", "export GITHUB_TOKEN=abc123def",
    "max_tokens=100", "token_type: bearer",
]


def test_every_shape_of_the_shared_redactor_is_covered() -> None:
    # A new pattern in util/redact.py must get its anchor in train/redaction.py (then bump this count).
    assert len(shared._SECRET_PATTERNS) == redaction.PATTERNS_COVERED
    for text in SAMPLES:
        assert redaction.redact(text) == shared.redact_obj(text), text
    messages = [{"role": "user", "content": text} for text in SAMPLES]
    messages.append({"role": "tool", "content": "ok", "api_key": "plainvalue"})
    assert redaction.redact(messages) == shared.redact_obj(messages)


def test_nothing_to_mask_is_returned_as_is() -> None:
    messages = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    assert redaction.redact(messages) is messages
