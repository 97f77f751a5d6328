"""``bench run`` and ``bf.run`` build their RunSpec through one function, with the same precedence."""

from __future__ import annotations

import pytest

from benchflow.errors import ConfigError
from benchflow.jobs.config_file import build_run_spec
from benchflow.jobs.public import make_spec


def test_config_then_options_then_flags(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("agent: nop\nconcurrency: 3\ninclude: ['a-*']\njobs_dir: from-config\n")
    spec = make_spec("tasks/", config=str(config), agent="oracle", exclude=["a-2"])
    assert (spec.agent, spec.concurrency, spec.jobs_dir) == ("oracle", 3, "from-config")
    assert spec.selection.include == ["a-*"] and spec.selection.exclude == ["a-2"]
    cli = build_run_spec(config, fields={"agent": "oracle", "selection.exclude": ["a-2"], "targets": ["tasks/"],
                                         "concurrency": None})
    assert cli.model_dump() == spec.model_dump()


def test_bad_values_name_their_source(tmp_path):
    with pytest.raises(ConfigError, match=r"^bf.run\(\): unknown key 'concurrenci' \(did you mean 'concurrency'\?\)"):
        make_spec("tasks/", concurrenci=2)
    with pytest.raises(ConfigError, match=r"^bench run: concurrency: "):
        build_run_spec(None, fields={"concurrency": "many"}, source="bench run")


def test_capture_tokens_reaches_the_gateway_config(monkeypatch):
    from benchflow.gateway import GatewayConfig
    from benchflow.jobs import model_access

    seen = {}

    class Recording:
        def __init__(self, config: GatewayConfig) -> None:
            seen["capture_tokens"] = config.capture_tokens

        async def start(self) -> None:
            raise RuntimeError("stop here")

    monkeypatch.delenv("BENCHFLOW_CAPTURE_TOKENS", raising=False)
    monkeypatch.setattr("benchflow.gateway.Gateway", Recording)
    import asyncio

    for flag in (True, False):
        spec = make_spec("tasks/", capture_tokens=flag)
        with pytest.raises(RuntimeError, match="stop here"):
            asyncio.run(model_access.ModelAccess.start(spec))
        assert seen["capture_tokens"] is flag
