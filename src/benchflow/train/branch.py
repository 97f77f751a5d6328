"""``--format branch-tree``: one row per branch child of every branched trial, and ``--pairs``.

A branched trial (``bench branch``) holds ``tree.json`` and, per child,
``branches/<fork>/children/<node>/observation.json`` plus the child's
trajectory. A child's conversation is its last model call answered 200
(``trajectory/llm_trajectory.jsonl``), else its ACP trajectory (user prompts
and agent messages). The row splits it into ``prefix`` (the messages every
sibling of the fork shares, from the first) and ``continuation`` (the rest).
``advantage`` is the child's reward minus the mean reward of its scored
siblings (:func:`benchflow.branch.view.advantage`), over every sibling, not
only the rows written.

Children skipped (counted in the manifest as ``skipped_<reason>``): not
finished (``unfinished_child``), oracle children unless ``--include-oracle``
(``oracle_child``: their only message is the solution script's exit code),
an agent or verifier error (``terminal_error``), below ``--min-reward``, no
conversation ending in an assistant message (``no_answer``).

``--pairs``: one row per two written siblings whose rewards differ (chosen =
the higher), with ``margin`` = the difference; only siblings whose first user
message is the same unless ``--pairs-any-request``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from benchflow.branch.view import advantage
from benchflow.errors import UserError
from benchflow.jobs.layout import TrialPaths
from benchflow.records import Unreadable, read_record
from benchflow.records.branch import Observation, TreeRecord

from . import rules
from .chat import conversation
from .redaction import redact
from .source import last_model_call, trial_folders

ORACLE = "oracle"


@dataclass
class Child:
    """One child of a fork, read back: its observation and its conversation (None when unreadable)."""

    node: str
    path: str
    observation: Observation | None
    messages: list[dict[str, Any]] | None
    tools: list[dict[str, Any]]


def branched(source: Path) -> Iterator[tuple[TrialPaths, str]]:
    """(trial, trial relative to ``source``) for every branched trial; UserError when there is none."""
    found = False
    for trial, _, rel in trial_folders(source):
        if (trial.root / "tree.json").is_file():
            found = True
            yield trial, rel
    if not found:
        raise UserError(f"--format branch-tree: no branch records under {source} (no <trial>/tree.json; "
                        "they are written by bench branch)")


def _acp_messages(path: Path) -> list[dict[str, Any]] | None:
    if not path.is_file():
        return None
    messages: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind = event.get("type") if isinstance(event, dict) else None
        role = {"user_message": "user", "agent_message": "assistant"}.get(kind)
        if role and isinstance(event.get("text"), str):
            messages.append({"role": role, "content": event["text"]})
        elif kind == ORACLE:  # the solution script ran: its exit code is the only answer
            messages.append({"role": "assistant", "content": f"{event.get('command') or 'the solution'} "
                             f"exited with code {event.get('return_code')}"})
    return messages


def _conversation(folder: Path, prompts: list[str], counts: rules.Counts, do_redact: bool):
    """(messages, tools) of one child: its last 200 model call, else its ACP trajectory (led by the
    child's prompts when it records none, as the oracle's does)."""
    messages, tools = None, []
    llm = folder / "trajectory" / "llm_trajectory.jsonl"
    if llm.is_file():
        _, _, exchange = last_model_call(llm)
        found = conversation(exchange) if exchange is not None else None
        if found is not None:
            messages, tools = found
            messages = rules.apply(messages, counts, trim=False)
    if messages is None:
        messages = _acp_messages(folder / "trajectory" / "acp_trajectory.jsonl")
        if messages is not None and not any(m["role"] == "user" for m in messages):
            messages = [{"role": "user", "content": p} for p in prompts if isinstance(p, str)] + messages
    if messages is not None and do_redact:
        messages, tools = redact(messages), redact(tools)
    return messages, tools


def _read_children(trial: TrialPaths, tree: TreeRecord, fork_children: list[str], counts: rules.Counts,
                   do_redact: bool, notes: list[str]) -> list[Child]:
    children = []
    for node_id in fork_children:
        node = tree.node(node_id)
        path = node.path if node else ""
        obs = None
        if node is not None:
            try:
                obs = read_record(Observation, trial.root / path / "observation.json", notes=notes)
            except Unreadable as exc:
                notes.append(str(exc))
        prompts = (obs.request.get("prompts") if obs else None) or []
        messages, tools = _conversation(trial.root / path, prompts, counts, do_redact) if node else (None, [])
        children.append(Child(node_id, path, obs, messages, tools))
    return children


def shared_prefix(conversations: list[list[dict[str, Any]]]) -> int:
    """How many leading messages every conversation shares (0 with fewer than two)."""
    if len(conversations) < 2:
        return 0
    n = 0
    for column in zip(*conversations):
        if any(m != column[0] for m in column[1:]):
            break
        n += 1
    return min(n, min(len(c) for c in conversations) - 1)


def _first_user(messages: list[dict[str, Any]]) -> Any:
    return next((m.get("content") for m in messages if m.get("role") == "user"), None)


def _skip(child: Child, agent: str | None, o: Any) -> str | None:
    obs = child.observation
    if obs is None or not obs.is_finished:
        return "unfinished_child"
    if agent == ORACLE and not o.include_oracle:
        return "oracle_child"
    if obs.error or obs.verifier_error:
        return "terminal_error"
    if o.min_reward is not None and (obs.reward is None or obs.reward < o.min_reward):
        return "below_min_reward"
    if not child.messages or child.messages[-1].get("role") != "assistant":
        return "no_answer"
    return None


def trial_rows(trial: TrialPaths, rel: str, o: Any, stats: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """("row" | "pair", row) for one branched trial."""
    try:
        tree = read_record(TreeRecord, trial.root / "tree.json", notes=stats.notes)
    except Unreadable as exc:
        stats.notes.append(str(exc))
        tree = None
    if tree is None:
        stats.skipped["unreadable"] += 1
        return
    for fork in tree.forks:
        children = _read_children(trial, tree, fork.children, stats.counts, o.redact, stats.notes)
        rewards = {c.node: c.observation.reward if c.observation else None for c in children}
        cut = shared_prefix([c.messages for c in children if c.messages])
        written: list[dict[str, Any]] = []
        for child in children:
            stats.rollouts_seen += 1
            reason = _skip(child, tree.agent, o)
            if reason:
                stats.skipped[reason] += 1
                continue
            obs = child.observation
            prefix, continuation = child.messages[:cut], child.messages[cut:]
            row = {"task_name": tree.task_name, "agent": tree.agent, "model": tree.model, "trial": rel,
                   "fork": fork.id, "parent_node": fork.parent_node, "at_prompt": fork.at_prompt,
                   "node": child.node, "source_path": f"{rel}/{child.path}", "request": obs.request,
                   "status": obs.status, "prefix": prefix, "continuation": continuation,
                   "tools": child.tools, "reward": obs.reward,
                   "advantage": advantage(obs.reward, [r for n, r in rewards.items() if n != child.node])}
            row = {k: v for k, v in row.items() if v is not None or k in ("reward", "advantage", "parent_node")}
            written.append(row)
            yield "row", row
        for a, b in combinations(written, 2):
            if a["reward"] is None or b["reward"] is None or a["reward"] == b["reward"]:
                continue
            if not o.pairs_any_request and (_first_user(a["prefix"] + a["continuation"])
                                            != _first_user(b["prefix"] + b["continuation"])):
                continue
            chosen, rejected = (a, b) if a["reward"] > b["reward"] else (b, a)
            yield "pair", {"task_name": tree.task_name, "agent": tree.agent, "model": tree.model, "trial": rel,
                           "fork": fork.id, "prefix": chosen["prefix"],
                           "chosen": chosen["continuation"], "rejected": rejected["continuation"],
                           "chosen_node": chosen["node"], "rejected_node": rejected["node"],
                           "chosen_reward": chosen["reward"], "rejected_reward": rejected["reward"],
                           "margin": round(chosen["reward"] - rejected["reward"], 6)}
