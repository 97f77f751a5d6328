"""An unexpected exception in a trial: a broken transport is retried as infra, a bug is not."""

from __future__ import annotations

import pytest
import requests

from benchflow.errors import InfraError
from benchflow.jobs.retry import is_retryable
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
