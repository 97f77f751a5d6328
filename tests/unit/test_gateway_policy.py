"""Which requests and headers the gateway forwards (benchflow.gateway.policy)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchflow.gateway.policy import MODEL_CALLS, classify, upstream_headers
from benchflow.gateway.usage import CHAT, COMPLETIONS, COUNT_TOKENS, GEMINI, MESSAGES, MODELS, RESPONSES

ALLOWED = [
    ("POST", "/chat/completions", CHAT),
    ("POST", "/v1beta/openai/chat/completions", CHAT),
    ("POST", "/completions", COMPLETIONS),
    ("POST", "/responses", RESPONSES),
    ("POST", "/responses/compact", RESPONSES),
    ("POST", "/v1/messages?beta=true", MESSAGES),
    ("POST", "/v1beta/models/gemini-2.5-flash:generateContent", GEMINI),
    ("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", GEMINI),
    ("POST", "/v1/messages/count_tokens?beta=true", COUNT_TOKENS),
    ("POST", "/responses/input_tokens", COUNT_TOKENS),
    ("POST", "/v1beta/models/gemini-2.5-flash:countTokens", COUNT_TOKENS),
    ("GET", "/models", MODELS),
    ("GET", "/v1/models/", MODELS),
    ("GET", "/v1beta/models/gemini-2.5-flash", MODELS),
]


@pytest.mark.parametrize(("method", "rest", "kind"), ALLOWED)
def test_model_apis_and_their_lookups_are_allowed(method, rest, kind):
    assert classify(method, rest) == kind
    assert (kind in MODEL_CALLS) is (kind not in (COUNT_TOKENS, MODELS))


REFUSED = [
    ("POST", "/batches"), ("POST", "/files"), ("GET", "/files/file-1/content"), ("DELETE", "/files/file-1"),
    ("POST", "/fine_tuning/jobs"), ("POST", "/embeddings"), ("POST", "/vector_stores"), ("POST", "/assistants"),
    ("POST", "/threads/runs"), ("POST", "/uploads"), ("POST", "/images/generations"), ("POST", "/audio/speech"),
    ("POST", "/moderations"), ("GET", "/organization/costs"), ("POST", "/realtime/sessions"),
    ("GET", "/chat/completions"), ("GET", "/responses/resp_1"), ("DELETE", "/responses/resp_1"),
    ("POST", "/responses/resp_1/cancel"), ("POST", "/v1/messages/batches"), ("GET", "/v1/files"),
    ("POST", "/v1beta/models/gemini-embedding-001:embedContent"), ("POST", "/v1beta/cachedContents"),
    ("POST", "/v1beta/tunedModels"), ("POST", "/models"), ("DELETE", "/models/ft-mine"),
    # tricks that would steer an allowed-looking path elsewhere on the provider
    ("POST", "/chat/completions/../../files"), ("POST", "/files/x/chat/completions"),
    ("POST", "/v1beta/models/..%2Ffiles:generateContent"), ("POST", "/v1beta/models/..:generateContent"),
    ("POST", "/v1beta/models/x/../../files:generateContent"), ("POST", "/chat%2Fcompletions"),
    ("POST", "//chat/completions"), ("POST", "/chat/completions//"),
]


@pytest.mark.parametrize(("method", "rest"), REFUSED)
def test_everything_else_is_refused(method, rest):
    assert classify(method, rest) is None


@given(st.sampled_from(["/batches", "/files", "/fine_tuning", "/embeddings", "/vector_stores", "/v1/files"]),
       st.text(alphabet="abc/._-:%", max_size=12))
def test_account_apis_are_refused_whatever_follows(prefix, tail):
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        assert classify(method, prefix + tail) is None


def test_billing_identity_and_credential_headers_are_dropped():
    sent = [("authorization", "Bearer sk-benchflow-x"), ("x-api-key", "k"), ("x-goog-api-key", "k"),
            ("openai-organization", "org-agent"), ("openai-project", "proj-agent"), ("chatgpt-account-id", "a"),
            ("x-goog-user-project", "p"), ("cookie", "s=1"), ("host", "h"), ("content-length", "3"),
            ("anthropic-dangerous-direct-browser-access", "true"), ("anthropic-organization-id", "o"),
            ("anthropic-version", "2023-06-01"), ("openai-beta", "assistants=v2"), ("user-agent", "agent/1"),
            ("content-type", "application/json")]
    assert upstream_headers(sent) == {"anthropic-version": "2023-06-01", "openai-beta": "assistants=v2",
                                      "user-agent": "agent/1", "content-type": "application/json"}


def test_anthropic_betas_beyond_a_model_call_are_removed():
    sent = [("anthropic-beta", "interleaved-thinking-2025-05-14, files-api-2025-04-14,MCP-client-2025-04-04"),
            ("anthropic-beta", "context-management-2025-06-27,code-execution-2025-08-25,skills-2025-10-02"),
            ("anthropic-beta", "web-fetch-2025-09-10,message-batches-2024-09-24,oauth-2025-04-20")]
    assert upstream_headers(sent) == {"anthropic-beta": "interleaved-thinking-2025-05-14,context-management-2025-06-27"}
    assert upstream_headers([("anthropic-beta", "files-api-2025-04-14")]) == {}
