"""An unexpected exception in a trial: a broken transport is retried as infra, a bug is not."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import requests

from benchflow.errors import CapabilityError, InfraError, SandboxError
from benchflow.jobs.phases import TrialState, setup_failure
from benchflow.jobs.retry import deterministic_reason, is_retryable
from benchflow.sandbox.session import SessionSetupError
from benchflow.jobs.trial import unexpected_category


class DeadEngine(ConnectionError):
    pass


@pytest.mark.parametrize("exc", [DeadEngine("Connection refused"), InfraError("sandbox is gone"),
                                 requests.exceptions.ConnectionError("('Connection aborted.',)"),
                                 RuntimeError("Connection reset by peer"), TimeoutError()])
def test_transport_failures_are_infra_and_retried(exc):
    category = unexpected_category(exc)
    assert category == "infra_failure"
    assert is_retryable({"error_category": category, "error": str(exc)})


@pytest.mark.parametrize("exc", [KeyError("model not found"), AttributeError("'NoneType' has no attribute 'socket'"),
                                 ValueError("file not found in manifest")])
def test_bugs_are_other_and_not_retried(exc):
    category = unexpected_category(exc)
    assert category == "other"
    assert not is_retryable({"error_category": category, "error": str(exc)})


@pytest.mark.parametrize("exc, reason", [
    (CapabilityError("network mode 'public' is not enforced here"), "refused"),
    (SandboxError("slirp4netns is not installed (apt-get install slirp4netns)", deterministic=True), "refused"),
    (SandboxError("engine hiccup"), "start_failed")])
def test_a_sandbox_that_refuses_the_same_way_every_time_is_attempted_once(exc, reason):
    req = SimpleNamespace(ca_bundle=None, attempt=1,
                          task=SimpleNamespace(config=SimpleNamespace(sandbox=SimpleNamespace(build_timeout_sec=600.0))))
    state = TrialState()
    assert setup_failure(req, SessionSetupError("start", exc), state)
    assert state.sandbox_startup_info["reason"] == reason
    result = {"rewards": None, "error": state.error, "error_category": state.error_category,
              "sandbox_startup_info": state.sandbox_startup_info}
    assert is_retryable(result) == (reason == "start_failed")
    assert (deterministic_reason(result) is None) == (reason == "start_failed")
