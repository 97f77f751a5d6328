"""A failed agent install: the cause from its log in the one-line error, the --ca-bundle fix when the
log shows a certificate failure, and no retry when the install script exited non-zero."""

from __future__ import annotations

from pathlib import Path

from benchflow.agents.install_errors import install_cause, install_failure_message, is_deterministic
from benchflow.categories import classify_error
from benchflow.jobs.retry import is_retryable

NPM_TLS_LOG = """Step 1/4 : FROM benchflow/python:3.11-bookworm
 ---> 5e1f0c
Step 4/4 : RUN ["/bin/sh", "-c", "bash /tmp/benchflow-install.sh"]
 ---> Running in 8a7b6c5d4e3f
npm error code UNABLE_TO_GET_ISSUER_CERT_LOCALLY
npm error errno UNABLE_TO_GET_ISSUER_CERT_LOCALLY
npm error request to https://registry.npmjs.org/@agentclientprotocol%2fclaude-agent-acp failed, reason: unable to get local issuer certificate
npm error A complete log of this run can be found in: /root/.npm/_logs/2026-01-01T00_00_00_000Z-debug-0.log
ERROR: The command '/bin/sh -c bash /tmp/benchflow-install.sh' returned a non-zero code: 1
"""
ENGINE_ERROR = ("hello-claude-agent-acp: image build failed: The command '/bin/sh -c if command -v bash >/dev/null "
                "2>&1; then bash /tmp/benchflow-install.sh; fi' returned a non-zero code: 1")


def test_the_cause_is_the_certificate_line_not_the_engines_bookkeeping():
    assert install_cause(NPM_TLS_LOG) == ("npm error request to https://registry.npmjs.org/@agentclientprotocol%2f"
                                          "claude-agent-acp failed, reason: unable to get local issuer certificate")
    pip = "Collecting openhands==1.16.0\nERROR: Could not find a version that satisfies the requirement openhands==9\n"
    assert install_cause(pip).startswith("ERROR: Could not find a version")
    assert install_cause("") == ""


def test_message_is_one_line_with_cause_exit_code_and_fix():
    message = install_failure_message("claude-agent-acp", ENGINE_ERROR, NPM_TLS_LOG, None)
    assert "\n" not in message
    assert message.startswith("Agent claude-agent-acp install failed: the install exited with code 1: npm error "
                              "request to https://registry.npmjs.org/")
    assert "rerun with --ca-bundle host" in message and message.endswith("(see agent/install-stdout.txt)")
    assert classify_error(message) == "install_failure"
    trusted = install_failure_message("claude-agent-acp", ENGINE_ERROR, NPM_TLS_LOG, Path("/etc/ssl/ca.pem"))
    assert "--ca-bundle" not in trusted  # a bundle was given: the hint would be wrong


def test_plain_failure_names_its_last_line_and_no_hint():
    log = "installing my-agent\nmy-agent: build step failed: missing libfoo\n"
    message = install_failure_message("x", "x: RUN bash /tmp/benchflow-install.sh failed with exit code 7", log, None)
    assert message == ("Agent x install failed: the install exited with code 7: my-agent: build step failed: "
                       "missing libfoo (see agent/install-stdout.txt)")


def test_a_deterministic_install_failure_is_not_retried_a_timeout_is():
    failed = install_failure_message("x", ENGINE_ERROR, NPM_TLS_LOG, None)
    assert is_deterministic(failed)
    assert not is_retryable({"rewards": None, "error": failed, "error_category": "install_failure"})
    timed_out = install_failure_message("x", "x: image build timed out after 900s (sandbox.build_timeout_sec)",
                                        "npm http fetch GET 200 https://registry.npmjs.org/x\n", None)
    assert not is_deterministic(timed_out) and "timed out after 900s" in timed_out
    assert is_retryable({"rewards": None, "error": timed_out, "error_category": "install_failure"})
