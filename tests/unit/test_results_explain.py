"""The explain catalogue covers every category the engine can write; lookups and close matches."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import benchflow.errors as errors
from benchflow.categories import AGENT_CATEGORIES, VERIFIER_CATEGORIES
from benchflow.results import explain


def _error_categories() -> set[str]:
    """Categories of every BenchError subclass: those imported here (the run engine's included), and every class
    body in the package that sets ``category = "..."``, read from the source so the set does not depend on which
    modules the tests before this one happened to load (a sandbox-side script runs when imported)."""
    import benchflow.branch.spec  # noqa: F401  (BranchSpecError)
    import benchflow.jobs.api  # noqa: F401  (defines RunRefused, Interrupted)
    import benchflow.results.compare  # noqa: F401  (SettingMismatchError)
    import benchflow.train.convert  # noqa: F401  (RowCountMismatch)

    found = set()
    stack = [errors.BenchError]
    while stack:
        cls = stack.pop()
        found.add(cls.category)
        stack.extend(cls.__subclasses__())
    for path in Path(errors.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            for stmt in node.body if isinstance(node, ast.ClassDef) else []:
                target = stmt.targets[0] if isinstance(stmt, ast.Assign) else getattr(stmt, "target", None)
                value = getattr(stmt, "value", None)
                if isinstance(target, ast.Name) and target.id == "category" and isinstance(value, ast.Constant) \
                        and isinstance(value.value, str):
                    found.add(value.value)
    return found


def test_every_category_has_an_entry():
    codes = {entry.code for entry in explain.catalogue()}
    missing = (set(AGENT_CATEGORIES) | set(VERIFIER_CATEGORIES) | _error_categories()) - codes
    assert not missing
    for name in ("pipe_closed:exit", "no_verdict", "agent_integration:agent_auth", "agent_integration:agent_model",
                 "agent_integration:agent_install"):
        assert name in codes


def test_entries_are_complete_and_unique():
    entries = explain.catalogue()
    keys = [k.lower() for e in entries for k in (e.code, *e.aliases)]
    assert len(keys) == len(set(keys))
    for entry in entries:
        assert entry.label and entry.happened and entry.next and entry.fault in ("task", "agent", "infrastructure", "setup")


def test_alias_and_placeholders():
    entry = explain.lookup("r212", job="jobs/run-1")
    assert entry.code == "provider_auth" and entry.fault == "setup"
    assert "bench doctor" in entry.next and "jobs/run-1" in entry.next and "{job}" not in entry.next
    assert "{task}" in explain.lookup("verifier_failure").next


def test_unknown_code_lists_close_matches():
    with pytest.raises(explain.UnknownCode) as info:
        explain.lookup("verifer_failure")
    assert info.value.exit_code == 2 and "verifier_failure" in str(info.value)


@pytest.mark.parametrize("result, code", [
    ({"rewards": {"reward": 1.0}}, None),
    ({"rewards": None, "verifier_error_category": "verifier_timeout", "error_category": "timeout"}, "verifier_timeout"),
    ({"rewards": {"reward": 0.0}, "error_category": "timeout"}, "timeout"),
    ({"rewards": None, "error_category": "pipe_closed", "transport_error_info": {"process_exit_code": 137}},
     "pipe_closed:exit"),
    ({"rewards": None, "error_category": "agent_integration", "integration_failure_info": {"cause": "agent_model"}},
     "agent_integration:agent_model"),
    ({"rewards": None}, "no_verdict"),
])
def test_code_for_a_result(result, code):
    assert explain.code_for(result) == code
    if code:
        explain.lookup(code)


def test_explain_a_trial_folder(tmp_path):
    from fixtures.jobgen import TrialSpec, write_trial

    job = tmp_path / "job"
    bad = write_trial(job, TrialSpec("t", None, verifier_error="Verifier timed out after 60s",
                                     verifier_error_category="verifier_timeout"))
    code, entry = explain.explain_trial(bad)
    assert code == "verifier_timeout" and entry.code == "verifier_timeout"
    assert explain.explain_trial(write_trial(job, TrialSpec("ok", 1.0))) == (None, None)
    with pytest.raises(errors.UserError):
        explain.explain_trial(write_trial(job, TrialSpec("running", finished=False)))


def test_code_for_a_0_7_result_without_categories():
    assert explain.code_for({"rewards": None, "error": "Agent idle for 600s"}) == "idle_timeout"
    assert explain.code_for({"rewards": None, "verifier_error": "Verifier timed out"}) == "verifier_timeout"
