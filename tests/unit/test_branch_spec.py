"""The --child syntax, the fork tree's rules, --checkpoints, and the readers' advantage."""

from __future__ import annotations

import pytest

from benchflow.branch.spec import (
    BranchSpec,
    BranchSpecError,
    ChildSpec,
    check_children,
    checkpoint_after,
    parse_checkpoints,
    parse_child,
)
from benchflow.branch.tree import new_tree
from benchflow.branch.view import advantage
from benchflow.errors import UserError


def test_prompt_takes_the_rest_of_the_option_commas_included() -> None:
    child = parse_child("label=hint,parent=base,prompt=Rename draft.txt, then stop, please")
    assert child == ChildSpec(label="hint", parent="base", prompt="Rename draft.txt, then stop, please")


def test_label_alone_runs_the_parents_remaining_prompts() -> None:
    assert parse_child("label=baseline") == ChildSpec(label="baseline")


def test_prompt_file_is_read(tmp_path) -> None:
    (tmp_path / "p.md").write_text("Fix it, carefully.")
    assert parse_child(f"label=a,prompt-file={tmp_path / 'p.md'}").prompt == "Fix it, carefully."


@pytest.mark.parametrize("text, says", [
    ("prompt=x", "label=NAME"),
    ("label=a,colour=red", "colour=red"),
    ("label=bad/name", "label=NAME"),
    ("label=a,prompt-file=/nonexistent/p.md", "cannot be read"),
    ("label=a,prompt=   ", "empty"),
])
def test_bad_children_are_one_line_user_errors(text: str, says: str) -> None:
    with pytest.raises(BranchSpecError) as info:
        parse_child(text)
    assert isinstance(info.value, UserError) and info.value.exit_code == 2
    assert says in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("children, says", [
    ([ChildSpec(label="a")], "at least two"),
    ([ChildSpec(label="a"), ChildSpec(label="a")], "given twice"),
    ([ChildSpec(label="a"), ChildSpec(label="b"), ChildSpec(label="c", parent="zz")], "names no --child"),
    ([ChildSpec(label="a"), ChildSpec(label="b"), ChildSpec(label="c", parent="a")], "nested fork needs"),
])
def test_tree_rules(children, says) -> None:
    with pytest.raises(BranchSpecError, match=says):
        check_children(children)


def test_nested_children_form_their_own_isolated_fork() -> None:
    spec = BranchSpec(tasks_dir="t", agent="oracle", children=[
        ChildSpec(label="a", prompt="x"), ChildSpec(label="b"),
        ChildSpec(label="a1", parent="a"), ChildSpec(label="a2", parent="a", prompt="y")])
    check_children(spec.children)
    tree = new_tree(spec, trial="t__1", task="t", sandbox="docker", prompts=["p1"])
    assert [(f.id, f.parent_node, f.children, f.isolated) for f in tree.forks] == [
        ("fork-0", None, ["a", "b"], False), ("fork-a", "a", ["a1", "a2"], True)]
    assert tree.node("a2").path == "branches/fork-a/children/a2"
    assert [n.prompt_source for n in tree.nodes] == ["child", "parent", "parent", "child"]


def test_defaults_follow_the_reference() -> None:
    assert BranchSpec(tasks_dir="t", agent="oracle").at_prompt == 0
    assert BranchSpec(tasks_dir="t", agent="x").at_prompt == 1
    assert BranchSpec(tasks_dir="t", agent="x", from_checkpoint="d").parent == "discard"
    assert BranchSpec(tasks_dir="t", agent="x").parent == "continue"
    assert BranchSpec(tasks_dir="t", concurrency=2).isolated


def test_checkpoints_syntax() -> None:
    assert parse_checkpoints("every-prompt") == "every-prompt"
    assert parse_checkpoints("prompt:3,1") == [1, 3]
    assert checkpoint_after([1, 3], 2) == [1]
    assert checkpoint_after("every-prompt", 3) == [1, 2, 3]
    for bad in ("prompt:0", "prompt:", "each"):
        with pytest.raises(BranchSpecError, match="every-prompt or prompt:N"):
            parse_checkpoints(bad)


def test_advantage_is_reward_minus_the_mean_of_scored_siblings() -> None:
    assert advantage(1.0, [0.0, 0.5]) == 0.75
    assert advantage(0.0, [None, 1.0]) == -1.0
    assert advantage(None, [1.0]) is None
    assert advantage(1.0, [None]) is None
