"""A task's frontmatter parsed once is read back on the next run without PyYAML, exactly as parsed."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import pytest

from benchflow.tasks import frontmatter_cache
from benchflow.tasks.document import parse_task_md
from tests.conftest import ROOT as REPO

TASK_MD = ("---\nschema_version: '1.3'\nagent: {timeout_sec: 60}\nverifier: {timeout_sec: 30.5}\n"
           "metadata: {tags: [a, b], ok: true, none: null, count: 3}\n---\n\nDo it.\n")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHFLOW_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _entries(cache):
    return sorted((cache / frontmatter_cache.FOLDER).rglob("*.json"))


def test_a_second_process_parses_the_same_frontmatter_without_yaml(tmp_path, private_cache):
    (tmp_path / "task.md").write_text(TASK_MD)
    code = ("import json, sys\n"
            "from benchflow.tasks.document import parse_task_md\n"
            f"data, body = parse_task_md(open({str(tmp_path / 'task.md')!r}).read())\n"
            "print(json.dumps([data, body, 'yaml' in sys.modules]))")
    env = {"PATH": "/usr/bin:/bin", "BENCHFLOW_CACHE": str(private_cache)}
    first, second = (json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                                               env=env, check=True).stdout) for _ in range(2))
    assert first[2] is True and second[2] is False
    assert first[:2] == second[:2] == list(parse_task_md(TASK_MD))
    assert first[0]["verifier"]["timeout_sec"] == 30.5 and first[0]["agent"]["timeout_sec"] == 60


def test_a_cached_parse_keeps_every_type():
    fresh = parse_task_md(TASK_MD)[0]
    again = parse_task_md(TASK_MD)[0]
    assert len(_entries(frontmatter_cache.cache_root())) == 1
    assert again == fresh
    assert type(again["agent"]["timeout_sec"]) is int and type(again["verifier"]["timeout_sec"]) is float
    assert again["metadata"]["ok"] is True and again["metadata"]["none"] is None


@pytest.mark.parametrize("frontmatter", ["created: 2024-01-02\n", "codes: {1: one}\n", "x: .nan\n",
                                         "flags: [1, true, 1.0]\nwhen: 2024-01-02\n"])
def test_what_json_would_change_is_never_kept(frontmatter, private_cache):
    text = f"---\n{frontmatter}---\nbody\n"
    first = parse_task_md(text)[0]
    assert _entries(private_cache) == []
    second = parse_task_md(text)[0]
    assert repr(second) == repr(first)
    if "created" in first:
        assert first["created"] == dt.date(2024, 1, 2)


def test_a_frontmatter_holding_a_secret_is_never_copied(private_cache):
    text = ("---\nagent:\n  env: {ANTHROPIC_API_KEY: sk-ant-api03-" + "x" * 40 + "}\n---\nbody\n")
    for _ in range(2):
        assert parse_task_md(text)[0]["agent"]["env"]["ANTHROPIC_API_KEY"].startswith("sk-ant-api03-")
    assert _entries(private_cache) == []
    parse_task_md("---\nagent: {env: {MODE: fast}}\n---\nbody\n")
    assert len(_entries(private_cache)) == 1


def test_json_that_would_turn_one_type_into_another_is_not_kept(private_cache):
    frontmatter_cache.keep("a: 1\n", {"a": [1, True, 1.0]})  # fine: JSON keeps all three apart
    frontmatter_cache.keep("b: x\n", {1: "x"})  # an int key would come back as text
    assert [json.loads(p.read_text())["text"] for p in _entries(private_cache)] == ["a: 1\n"]


def test_a_damaged_or_foreign_entry_is_parsed_again(private_cache):
    parse_task_md(TASK_MD)
    [entry] = _entries(private_cache)
    entry.write_text("{not json")
    assert parse_task_md(TASK_MD)[0]["agent"] == {"timeout_sec": 60}
    kept = json.loads(entry.read_text())
    entry.write_text(json.dumps({**kept, "text": "other: 1\n", "data": {"other": 1}}))  # not this text's
    assert parse_task_md(TASK_MD)[0]["agent"] == {"timeout_sec": 60}


def test_a_yaml_error_is_reported_every_time():
    from benchflow.errors import TaskError

    for _ in range(2):
        with pytest.raises(TaskError, match="task.md line 4: YAML error"):
            parse_task_md("---\na: 1\nb: [unclosed\n---\nbody\n")


def test_a_cache_that_cannot_be_written_still_parses(private_cache):
    private_cache.write_text("a file where the cache folder should be")
    assert parse_task_md(TASK_MD)[0]["schema_version"] == "1.3"
    assert parse_task_md(TASK_MD)[0]["schema_version"] == "1.3"
