"""``bench view`` in headless Chromium: a branched trial's Branches tab shows its forks as a tree (nested fork
under its child) with each child's reward, and a child's link opens that child's own trajectory."""

from __future__ import annotations

from pathlib import Path

from fixtures.branch_trial import make_branched_trial

from tests.integration.test_viewer_browser import browser_context, page, serve  # noqa: F401 - fixtures


def test_branches_tab_draws_the_tree_and_links_each_childs_trajectory(page, serve, tmp_path: Path) -> None:  # noqa: F811
    make_branched_trial(tmp_path / "job")
    viewer = serve(tmp_path / "job")
    page.goto(viewer.url + "#/trial?id=t__ab12cd34&tab=branches")
    page.wait_for_selector("#branch-tree")
    top = page.locator("#branch-tree > ul > li.fork")
    assert top.count() == 1 and top.get_attribute("data-fork") == "fork-0"
    nested = page.locator('li.branch-child[data-node="good"] li.fork')
    assert nested.get_attribute("data-fork") == "fork-good"
    assert page.locator('li.branch-child[data-node="more"]').inner_text().count("reward 0.5") == 1
    page.locator('li.branch-child[data-node="more"] > a', has_text="trajectory").click()
    page.wait_for_selector("#acp-events .event")
    assert "prompt of more" in page.locator("#acp-events").inner_text()
    assert page.errors == []
