"""Regressions in the task.md reader/writer found by round-trip fuzzing (helper-2's reports)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchflow.tasks.document import parse_task_md
from benchflow.tasks.task_md_writer import render_task_md


def test_trailing_block_scalar_keeps_its_final_newline() -> None:
    text = "---\nname: demo\nnotes: |\n  first\n  second\n---\n\nDo it.\n"
    frontmatter, body = parse_task_md(text)
    assert frontmatter["notes"] == "first\nsecond\n"
    assert body == "Do it.\n"


def test_block_scalar_that_is_not_last_is_unchanged() -> None:
    text = "---\nnotes: |\n  first\n  second\nname: demo\n---\nbody\n"
    assert parse_task_md(text)[0] == {"notes": "first\nsecond\n", "name": "demo"}


@pytest.mark.parametrize("value", ["a\x85b", "line1\nline2\x85x\n", "a\u2028b\nc", "x\u2029\n", "tab\r\nend"])
def test_unicode_line_breaks_survive_a_round_trip(value: str) -> None:
    text = render_task_md({"note": value, "nested": {"items": [value]}}, "Do it.")
    assert parse_task_md(text)[0] == {"note": value, "nested": {"items": [value]}}
    assert "\x85" not in text.split("---")[1]  # written escaped, not raw


_TEXT = st.text(alphabet=st.sampled_from(list("ab :#-'\"|é\t\n\r\x85\u2028\u2029")), max_size=12)


@settings(max_examples=300, deadline=None)
@given(first=_TEXT, last=_TEXT)
def test_any_string_round_trips(first: str, last: str) -> None:
    frontmatter = {"first": first, "deep": {"list": [first, last]}, "last": last}
    assert parse_task_md(render_task_md(frontmatter, "body"))[0] == frontmatter
