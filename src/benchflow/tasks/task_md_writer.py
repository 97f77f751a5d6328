"""The canonical ``task.md`` text that ``bench tasks normalize``, ``bench import`` and ``bench new`` write.

Kept apart from :mod:`.document` (the reader): a run reads tasks and never writes one, and the
reader need not load PyYAML at all when its frontmatter cache knows the text.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

FLOW_LIST_WIDTH = 72


class _Dumper(yaml.SafeDumper):
    """Canonical YAML: insertion order, short scalar lists in flow style, block text."""


def _short_scalar_list(items: list[Any]) -> bool:
    if not all(isinstance(x, (str, int, float, bool)) or x is None for x in items):
        return False
    rendered = yaml.dump(items, Dumper=yaml.SafeDumper, default_flow_style=True, width=10_000,
                         allow_unicode=True).strip()
    return len(rendered) <= FLOW_LIST_WIDTH and "\n" not in rendered


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=_short_scalar_list(data))


# Characters a YAML reader treats as line breaks (or folds to spaces) unless they are escaped.
_YAML_BREAKS = re.compile("[\r\x85\u2028\u2029]")


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    if _YAML_BREAKS.search(data):
        style: str | None = '"'  # only double quotes escape them, so they read back unchanged
    else:
        style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def _represent_tuple(dumper: yaml.SafeDumper, data: tuple[Any, ...]) -> yaml.Node:
    return _represent_list(dumper, list(data))


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_tuple)
_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: dict[str, Any]) -> str:
    if not data:
        return ""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=100)


def render_task_md(frontmatter: dict[str, Any], body: str) -> str:
    """The canonical ``task.md`` text: ``---``, YAML, ``---``, a blank line, the body."""
    text = body.lstrip("\n")
    if text and not text.endswith("\n"):
        text += "\n"
    return f"---\n{dump_yaml(frontmatter)}---\n\n{text}"
