"""task.md parsing, sections and canonical rendering (contracts §1.3, §1.6)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchflow.errors import TaskError
from benchflow.tasks import parse_task_md, render_task_md, split_sections


def test_parse_splits_frontmatter_and_body():
    fm, body = parse_task_md("---\nagent: {timeout_sec: 5}\n---\n\n\nDo it.\n")
    assert fm == {"agent": {"timeout_sec": 5}}
    assert body == "Do it.\n"


def test_crlf_is_normalized():
    fm, body = parse_task_md("---\r\na: 1\r\n---\r\nbody\r\n")
    assert fm == {"a": 1} and body == "body\n"


def test_empty_frontmatter_is_an_empty_mapping():
    assert parse_task_md("---\n---\nx") == ({}, "x")


def test_missing_frontmatter_names_the_fix():
    with pytest.raises(TaskError, match=r"task.md: must start with YAML frontmatter"):
        parse_task_md("# Title\n\nDo it.\n")


def test_unclosed_frontmatter():
    with pytest.raises(TaskError, match="never closed"):
        parse_task_md("---\na: 1\n")


def test_yaml_error_reports_the_file_line():
    text = "---\nagent:\n  timeout_sec: 5\n bad: [1, 2\n---\nDo it.\n"
    with pytest.raises(TaskError) as info:
        parse_task_md(text)
    message = str(info.value)
    assert message.startswith("task.md line ")
    assert "YAML error" in message
    line = int(message.split("line ")[1].split(":")[0])
    assert 2 <= line <= 5  # the broken lines are 2-4 of the file


def test_frontmatter_must_be_a_mapping():
    with pytest.raises(TaskError, match="must be a mapping"):
        parse_task_md("---\n- a\n- b\n---\nx")


def test_sections_prompt_roles_scenes_persona():
    body = ("Preamble text.\n\n## prompt\n\nThe real prompt.\n\n## role:reviewer\nCheck it.\n\n"
            "## Scene:review\nScene text.\n\n## user-persona\nA busy user.\n")
    parts = split_sections(body)
    assert parts["instruction"] == "The real prompt."
    assert parts["roles"] == {"reviewer": "Check it."}
    assert parts["scenes"] == {"review": "Scene text."}
    assert parts["user_persona"] == "A busy user."


def test_without_headings_the_body_is_the_prompt():
    assert split_sections("\n  Just do it.\n\n# Notes\n")["instruction"] == "Just do it.\n\n# Notes"


def test_without_prompt_section_the_preamble_is_the_prompt():
    assert split_sections("Before.\n## role:a\nA\n")["instruction"] == "Before."


def test_duplicate_section_is_an_error():
    with pytest.raises(TaskError, match="appears twice"):
        split_sections("## prompt\na\n## PROMPT\nb\n")


def test_escaped_headings_stay_inside_the_prompt():
    parts = split_sections("## prompt\nSee:\n\\## role:x\nmore\n")
    assert parts["instruction"] == "See:\n## role:x\nmore"
    assert parts["roles"] == {}


def test_render_is_canonical():
    text = render_task_md({"schema_version": "1.3", "metadata": {"tags": ["a", "b"]},
                           "agent": {"timeout_sec": 300.0}}, "## prompt\n\nHi")
    assert text == ("---\nschema_version: '1.3'\nmetadata:\n  tags: [a, b]\nagent:\n  timeout_sec: 300.0\n"
                    "---\n\n## prompt\n\nHi\n")


def test_render_long_lists_in_block_style():
    items = [f"item-number-{i}" for i in range(10)]
    text = render_task_md({"metadata": {"tags": items}}, "x")
    assert "  - item-number-0\n" in text


scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30))
keys = st.text("abcdefghijklmnopqrstuvwxyz_-", min_size=1, max_size=12)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(keys, inner, max_size=4)),
                      max_leaves=12)
bodies = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                 max_size=200).map(lambda s: s.lstrip("\n"))


@settings(max_examples=150, deadline=None)
@given(frontmatter=st.dictionaries(keys, values, max_size=6), body=bodies)
def test_render_then_parse_round_trips(frontmatter, body):
    parsed, parsed_body = parse_task_md(render_task_md(frontmatter, body))
    assert parsed == frontmatter
    expected = body if not body or body.endswith("\n") else body + "\n"
    assert parsed_body == expected
