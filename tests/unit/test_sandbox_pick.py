"""``sandbox.first_that_can``: the sandbox a check without --sandbox judges a task against is the first,
in the registry's order, that works here and whose capabilities can run it; a cloud is asked only
when the user set it up."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

import benchflow.sandbox as registry
from benchflow.sandbox import Capabilities


@dataclass
class FakeBackend:
    capabilities: Capabilities
    works: bool = True
    set_up: bool = False
    asked: list[str] = field(default_factory=list)

    def available(self) -> tuple[bool, str]:
        self.asked.append("available")
        return self.works, "works" if self.works else "does not answer"

    def configured(self) -> bool:
        return self.set_up


@pytest.fixture
def backends(monkeypatch):
    table = {
        "first": FakeBackend(Capabilities()),
        "second": FakeBackend(Capabilities(gpus=True)),
        "gpu-cloud": FakeBackend(Capabilities(gpus=True)),
        "other": FakeBackend(Capabilities(gpus=True, multi_service=True)),
    }
    monkeypatch.setattr(registry, "DEFAULT_ORDER", ("first", "second"))
    monkeypatch.setattr(registry, "GPU_DEFAULT", "gpu-cloud")
    monkeypatch.setattr(registry, "names", lambda: list(table))
    monkeypatch.setattr(registry, "get_backend", table.__getitem__)
    return table


def needs(capability: str):
    return lambda _name, backend: getattr(backend.capabilities, capability)


def test_the_default_order_comes_first(backends):
    assert registry.first_that_can(lambda _n, _b: True)[0] == "first"
    assert registry.first_that_can(needs("gpus"))[0] == "second"


def test_one_that_does_not_work_here_is_passed_over(backends):
    backends["second"].works = False
    assert registry.first_that_can(needs("gpus"), needs_gpus=True)[0] == "gpu-cloud"


def test_a_backend_not_set_up_is_never_asked(backends):
    assert registry.first_that_can(needs("multi_service")) is None
    assert backends["other"].asked == []
    backends["other"].set_up = True
    name, why = registry.first_that_can(needs("multi_service"))
    assert name == "other" and "works" in why


def test_capabilities_are_judged_before_availability(backends):
    registry.first_that_can(needs("gpus"))
    assert backends["first"].asked == []
