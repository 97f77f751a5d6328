"""The container options every Docker sandbox gets, and the pids-limit setting's validation."""

from __future__ import annotations

import pytest

from benchflow.errors import ConfigError, UserError
from benchflow.sandbox.docker_setup import DEFAULT_PIDS_LIMIT, PIDS_LIMIT_ENV, hardening


def test_every_container_gets_no_new_privileges_a_capability_allow_list_and_a_pids_limit(monkeypatch):
    monkeypatch.delenv(PIDS_LIMIT_ENV, raising=False)
    options = hardening()
    assert options["security_opt"] == ["no-new-privileges"]
    assert options["cap_drop"] == ["ALL"]
    assert not {"MKNOD", "NET_RAW", "SETFCAP", "SETPCAP", "SYS_ADMIN", "SYS_PTRACE"} & set(options["cap_add"])
    assert {"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID"} <= set(options["cap_add"])
    assert options["pids_limit"] == DEFAULT_PIDS_LIMIT


def test_pids_limit_setting(monkeypatch):
    monkeypatch.setenv(PIDS_LIMIT_ENV, "512")
    assert hardening()["pids_limit"] == 512
    for bad in ("lots", "-1", "10"):
        monkeypatch.setenv(PIDS_LIMIT_ENV, bad)
        with pytest.raises(ConfigError) as caught:
            hardening()
        assert isinstance(caught.value, UserError)
        message = str(caught.value)
        assert PIDS_LIMIT_ENV in message and "at least 64" in message and "\n" not in message
