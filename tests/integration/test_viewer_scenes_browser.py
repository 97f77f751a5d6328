"""``bench view`` in headless Chromium: a scene trial's Turns tab lists each turn, a turn's link opens that
turn's own trajectory (with a way back), and the Simulated user tab shows the rounds."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.scene_trial import scene_job
from tests.integration.test_viewer_browser import browser_context, page, serve  # noqa: F401 - fixtures


def test_turns_tab_links_each_turns_trajectory_and_the_user_tab_shows_rounds(page, serve, tmp_path: Path) -> None:  # noqa: F811
    viewer = serve(scene_job(tmp_path))
    page.goto(viewer.url + "#/trial?id=scene-task__aaaa0001&tab=turns")
    page.wait_for_selector("#turns")
    assert page.locator("#turns tbody tr").count() == 3
    assert "codex-acp" in page.locator("#turn-02").inner_text() and "failed" in page.locator("#turn-02").inner_text()
    assert page.locator("#turn-03 a").count() == 0  # not run: nothing to open
    page.locator("#turn-01 a", has_text="trajectory").click()
    page.wait_for_selector("#acp-events .event")
    assert "Turn 01 · writer" in page.locator("#turn-header").inner_text()
    page.locator("#back-to-trial").click()
    page.wait_for_selector("#turns")
    page.locator('button[data-tab="user"]').click()
    page.wait_for_selector("#simulated-user .round")
    assert "door_code: 4417" in page.locator('#simulated-user .round[data-round="1"]').inner_text()
    assert page.errors == []
