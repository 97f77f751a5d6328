"""What a BenchFlow sandbox spec asks Modal for (``modal.Sandbox.create`` keywords), and the refusals."""

from __future__ import annotations

import pytest

from benchflow.errors import SandboxUnavailable
from benchflow.sandbox import SandboxSpec, get_backend
from benchflow.sandbox.modal.backend import create_kwargs, credentials, gpu_request

TAGS = {"benchflow.owned": "true", "benchflow.backend": "modal", "benchflow.job": "j"}


def spec(**fields) -> SandboxSpec:
    return SandboxSpec(**{"name": "t", "environment_dir": None, "cache_key": "k", **fields})


def test_resources_are_request_and_limit() -> None:
    asked = create_kwargs(spec(cpus=1.5, memory_mb=3000), TAGS, timeout_sec=3600)
    assert (asked["cpu"], asked["memory"], asked["timeout"]) == ((1.5, 1.5), (3000, 3000), 3600)


def test_tiny_resources_are_raised_to_modals_floor() -> None:
    asked = create_kwargs(spec(cpus=0.01, memory_mb=16), TAGS, timeout_sec=60)
    assert (asked["cpu"], asked["memory"]) == ((0.125, 0.125), (128, 128))


@pytest.mark.parametrize("mode, blocked", [("no-network", True), ("public", False)])
def test_network_mode_is_block_network(mode: str, blocked: bool) -> None:
    assert create_kwargs(spec(network_mode=mode), TAGS, timeout_sec=60)["block_network"] is blocked


def test_tags_and_env_are_passed_as_given() -> None:
    asked = create_kwargs(spec(env={"A": "1"}), TAGS, timeout_sec=60)
    assert asked["tags"] == TAGS and asked["env"] == {"A": "1"}
    assert create_kwargs(spec(), TAGS, timeout_sec=60)["env"] is None
    assert "gpu" not in create_kwargs(spec(), TAGS, timeout_sec=60)


@pytest.mark.parametrize("count, types, expected", [
    (0, None, None), (1, None, "any"), (2, ["A100"], "A100:2"), (0, ["H100"], "H100"), (1, ["L4", "T4"], "L4"),
])
def test_gpu_request(count: int, types: list[str] | None, expected: str | None) -> None:
    assert gpu_request(count, types) == expected


def test_no_token_is_one_line_naming_both_variables(monkeypatch) -> None:
    monkeypatch.delenv("MODAL_TOKEN_ID", raising=False)
    monkeypatch.setenv("MODAL_TOKEN_SECRET", "s")
    with pytest.raises(SandboxUnavailable) as caught:
        credentials()
    message = str(caught.value)
    assert "MODAL_TOKEN_ID" in message and "MODAL_TOKEN_SECRET" in message and "\n" not in message
    ok, why = get_backend("modal").available()
    assert not ok and why == message
    assert not get_backend("modal").configured()
    assert get_backend("modal").leftovers() == [], "an unconfigured Modal has nothing to list"


def test_what_a_modal_sandbox_cannot_do_is_refused_before_anything_is_made(monkeypatch, tmp_path) -> None:
    import asyncio

    from benchflow.errors import CapabilityError

    monkeypatch.setenv("MODAL_TOKEN_ID", "i")
    monkeypatch.setenv("MODAL_TOKEN_SECRET", "s")
    backend = get_backend("modal")
    caps = backend.capabilities
    assert caps.network_for("allowlist") is None and not caps.host_mounts and not caps.multi_service
    assert caps.gpus and caps.snapshots and not caps.retained_snapshots
    for refused in (spec(network_mode="allowlist"), spec(mounts={"/m": tmp_path}),
                    spec(compose_file=tmp_path / "docker-compose.yaml")):
        with pytest.raises(CapabilityError):
            asyncio.run(backend.create(refused).build())


def test_gpu_tasks_default_to_modal_only_when_it_is_set_up(monkeypatch) -> None:
    from benchflow.sandbox import default_backend

    monkeypatch.delenv("MODAL_TOKEN_ID", raising=False)
    name, why, _ = default_backend(needs_gpus=True)
    assert name != "modal" and "GPUs" not in why, "without a token the usual default stays (the card refuses)"


def test_a_spec_carries_the_tasks_gpus(tmp_path) -> None:
    from types import SimpleNamespace

    from benchflow.sandbox.from_task import spec_for_task
    from benchflow.tasks.config import SandboxConfig

    cfg = SandboxConfig(gpus=2, gpu_types=["H100", "A100"])
    task = SimpleNamespace(name="g", config=SimpleNamespace(sandbox=cfg), digest=lambda: "d", compose_env={},
                           paths=SimpleNamespace(environment_dir=tmp_path, dockerfile=tmp_path / "Dockerfile",
                                                 compose_file=None))
    made = spec_for_task(task)
    assert (made.gpus, made.gpu_types) == (2, ("H100", "A100"))
    assert create_kwargs(made, TAGS, timeout_sec=60)["gpu"] == "H100:2"
