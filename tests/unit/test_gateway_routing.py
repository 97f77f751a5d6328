"""Providers from the environment, per-trial URLs/keys, pricing and the record line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchflow.errors import ConfigError
from benchflow.gateway.pricing import price_call, price_source
from benchflow.gateway.recorder import Exchange, render
from benchflow.gateway.routes import KEY_PREFIX, TrialRoute, path_segment
from benchflow.gateway.upstream import Upstreams
from benchflow.gateway.usage import CallUsage

REAL_OPENAI = "sk-proj-REALopenaiKEY0123456789abcdef"
REAL_ANTHROPIC = "sk-ant-api03-REALanthropicKEY0123456789"


def test_from_env_finds_configured_providers_with_default_urls():
    ups = Upstreams.from_env({"OPENAI_API_KEY": REAL_OPENAI, "ANTHROPIC_API_KEY": REAL_ANTHROPIC,
                              "VLLM_API_KEY": "local-without-url", "PATH": "/bin"})
    assert sorted(u.name for u in ups) == ["anthropic", "openai"]
    assert ups.get("openai").base_url == "https://api.openai.com/v1"
    assert ups.get("anthropic").base_url == "https://api.anthropic.com"
    assert set(ups.secrets()) == {REAL_OPENAI, REAL_ANTHROPIC}


def test_from_env_local_server_needs_only_a_url():
    ups = Upstreams.from_env({"VLLM_BASE_URL": "http://127.0.0.1:8000/v1/", "OLLAMA_BASE_URL": "http://ollama:11434/v1"})
    assert ups.get("vllm").base_url == "http://127.0.0.1:8000/v1"
    assert ups.get("vllm").api_key is None
    assert ups.get("ollama") is not None


def test_from_env_rejects_a_base_url_that_is_not_http():
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL"):
        Upstreams.from_env({"OPENAI_BASE_URL": "api.openai.com/v1"})


def test_mount_matching_and_upstream_url():
    ups = Upstreams.from_env({"OPENAI_API_KEY": REAL_OPENAI, "OPENAI_BASE_URL": "http://up:1/v1",
                              "ANTHROPIC_API_KEY": REAL_ANTHROPIC})
    upstream, rest = ups.match("/openai/v1/chat/completions")
    assert (upstream.name, rest) == ("openai", "/chat/completions")
    url, headers = upstream.prepare(rest, "", "authorization")
    assert url == "http://up:1/v1/chat/completions"
    assert headers == {"authorization": f"Bearer {REAL_OPENAI}"}
    upstream, rest = ups.match("/anthropic/v1/messages")
    assert upstream.prepare(rest, "beta=true", "authorization") == (
        "https://api.anthropic.com/v1/messages?beta=true", {"x-api-key": REAL_ANTHROPIC})
    assert ups.match("/openai/v2/chat") is None
    assert ups.match("/gemini/v1beta/models") is None


def test_gemini_key_goes_where_the_agent_put_it():
    gemini = Upstreams.from_env({"GEMINI_API_KEY": "AIzaREALgeminiKEY0123456789abcdefghijk"}).get("gemini")
    url, headers = gemini.prepare("/v1beta/models/m:generateContent", "key=sk-benchflow-x&alt=sse", "query")
    assert url == ("https://generativelanguage.googleapis.com/v1beta/models/m:generateContent"
                   "?alt=sse&key=AIzaREALgeminiKEY0123456789abcdefghijk")
    assert headers == {}
    _, headers = gemini.prepare("/v1beta/models/m:generateContent", "", "x-goog-api-key")
    assert headers == {"x-goog-api-key": "AIzaREALgeminiKEY0123456789abcdefghijk"}
    _, headers = gemini.prepare("/v1beta/openai/chat/completions", "", "authorization")
    assert headers == {"authorization": "Bearer AIzaREALgeminiKEY0123456789abcdefghijk"}


def test_model_picks_its_provider():
    ups = Upstreams.from_env({"OPENAI_API_KEY": REAL_OPENAI, "ANTHROPIC_API_KEY": REAL_ANTHROPIC,
                              "OPENROUTER_API_KEY": "sk-or-v1-REALrouterKEY0123456789"})
    assert ups.for_model("claude-sonnet-4-5")[0].name == "anthropic"
    assert ups.for_model("gpt-5")[0].name == "openai"
    assert ups.for_model("openrouter/anthropic/claude-sonnet-4") == (ups.get("openrouter"), "anthropic/claude-sonnet-4")
    assert ups.for_model("mystery-model") is None
    single = Upstreams.from_env({"VLLM_BASE_URL": "http://127.0.0.1:8000/v1"})
    assert single.for_model("Qwen/Qwen3-8B") == (single.get("vllm"), "Qwen/Qwen3-8B")


def test_agent_env_points_every_provider_at_the_gateway(tmp_path: Path):
    ups = Upstreams.from_env({"OPENAI_API_KEY": REAL_OPENAI, "ANTHROPIC_API_KEY": REAL_ANTHROPIC,
                              "GEMINI_API_KEY": "AIzaREALgeminiKEY0123456789abcdefghijk"})
    route = TrialRoute("regex-log__ab12cd34", tmp_path / "llm.jsonl", ups, "http://127.0.0.1:4000")
    assert route.key.startswith(KEY_PREFIX)
    env = route.agent_env(model="gemini-2.5-flash")
    base = "http://127.0.0.1:4000/__benchflow/regex-log__ab12cd34"
    assert env["ANTHROPIC_BASE_URL"] == f"{base}/anthropic"
    assert env["OPENAI_BASE_URL"] == f"{base}/openai/v1"
    assert env["GOOGLE_GEMINI_BASE_URL"] == f"{base}/gemini"
    assert env["BENCHFLOW_PROVIDER_BASE_URL"] == f"{base}/gemini/v1beta/openai"
    assert env["BENCHFLOW_PROVIDER_MODEL"] == "gemini-2.5-flash"
    assert {env[k] for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY")} == {route.key}
    assert not any(secret in value for value in env.values() for secret in ups.secrets())
    inside = route.agent_env(gateway_url="http://127.0.0.1:9")
    assert inside["OPENAI_BASE_URL"] == "http://127.0.0.1:9/__benchflow/regex-log__ab12cd34/openai/v1"
    assert "BENCHFLOW_PROVIDER_NAME" not in inside


def test_path_segment_is_url_safe_and_distinct():
    assert path_segment("task__ab12cd34") == "task__ab12cd34"
    odd = [path_segment(t) for t in ("a/b c", "a b/c", "..", "ü")]
    assert all(s and "/" not in s and " " not in s and s not in (".", "..") for s in odd)
    assert len(set(odd)) == len(odd)


def test_known_model_is_priced_and_cache_reads_are_cheaper():
    fresh = price_call("claude-sonnet-4-5", CallUsage(input_tokens=10_000), "anthropic")
    cached = price_call("claude-sonnet-4-5", CallUsage(cache_read_tokens=10_000), "anthropic")
    assert fresh.cost_usd and cached.cost_usd and 0 < cached.cost_usd < fresh.cost_usd
    assert fresh.price_source == price_source()
    assert price_source().startswith("genai-prices ")


def test_unknown_model_or_local_provider_is_never_guessed():
    assert price_call("fake-model-xyz", CallUsage(input_tokens=100), "openai").cost_usd is None
    local = price_call("gpt-4o", CallUsage(input_tokens=100), "")
    assert (local.cost_usd, local.price_source) == (None, None)


def test_record_line_redacts_keys_and_parses_bodies(tmp_path: Path):
    exchange = Exchange(
        path=tmp_path / "llm.jsonl",
        request={"timestamp": "t0", "method": "POST", "path": "/v1/chat/completions",
                 "headers": {"authorization": "Bearer sk-benchflow-TRIALKEY0123456789", "x-trace": "ok"},
                 "body": json.dumps({"model": "m", "messages": [{"role": "user",
                                                                 "content": f"my key is {REAL_OPENAI}"}]}).encode()},
        response={"timestamp": "t1", "status_code": 401, "headers": {},
                  "body": b'{"error": {"message": "bad key CUSTOMSECRETVALUE"}}'},
        duration_ms=12.3456, metadata={"request_model": "m"}, secrets=("CUSTOMSECRETVALUE",),
    )
    line = render(exchange)
    record = json.loads(line)
    assert line.endswith("\n") and "\n" not in line[:-1]
    assert record["schema_version"] == 1
    assert record["request"]["body"]["model"] == "m"
    assert record["response"]["status_code"] == 401
    assert record["request"]["headers"]["x-trace"] == "ok"
    for secret in ("TRIALKEY", REAL_OPENAI, "CUSTOMSECRETVALUE"):
        assert secret not in line


def test_recorder_keeps_call_order_when_a_large_exchange_goes_to_the_thread(tmp_path: Path):
    from benchflow.gateway.recorder import INLINE_BYTES, Recorder

    recorder = Recorder()
    path = tmp_path / "llm.jsonl"
    sizes = [10, INLINE_BYTES * 2, 10, 10, INLINE_BYTES * 3, 10]
    for index, size in enumerate(sizes):
        recorder.submit(Exchange(path=path, request={"body": b'{"n": %d}' % index}, response={"status_code": 200},
                                 duration_ms=1.0, size=size))
    recorder.flush()
    recorder.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["request"]["body"]["n"] for line in lines] == list(range(len(sizes)))


@settings(max_examples=60)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40),
       st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-", min_size=12, max_size=40))
def test_record_line_never_holds_a_real_key(prefix, key):
    exchange = Exchange(path=Path("unused.jsonl"),
                        request={"headers": {"x-api-key": key}, "body": json.dumps({"note": prefix + key}).encode()},
                        response={"status_code": 500, "body": f"upstream says {key}{prefix}".encode()},
                        duration_ms=0.0, metadata={"echo": [key]}, secrets=(key,))
    assert key not in render(exchange)
