"""The shared start-up stages: one line each, and everything after a failure is skipped."""

from __future__ import annotations

from benchflow.jobs.stages import STAGES, Stage, finish


def test_a_failure_skips_every_later_stage_even_a_given_model_call() -> None:
    stages = finish([Stage("install", "FAIL", detail="install_failure: apt-get\nexited 100")],
                    model_call=Stage("first model call", "ok", 1.0))
    assert [s.name for s in stages] == list(STAGES)
    assert [s.line() for s in stages] == ["FAIL install_failure: apt-get exited 100", "skipped", "skipped", "skipped"]
    assert [s.failed for s in stages] == [True, False, False, False]


def test_passing_stages_end_with_the_model_call_given() -> None:
    done = [Stage("install", "ok", 12.34), Stage("launch", "ok", 0.5), Stage("handshake", "ok", 0.5, "protocol 1")]
    stages = finish(done, model_call=Stage("first model call", "not exercised", detail="no prompt is sent"))
    assert [s.line() for s in stages] == ["ok 12.3s", "ok 0.5s", "ok 0.5s (protocol 1)",
                                          "not exercised (no prompt is sent)"]
    assert not any(s.failed for s in stages)
