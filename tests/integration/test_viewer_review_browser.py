"""``bench view`` in headless Chromium: a reviewed trial's Verifier tab shows the rubric review (decision, rubric
reward, per-criterion verdicts) and the integrity verdict with its flags, beside the unchanged reward."""

from __future__ import annotations

from pathlib import Path

from fixtures import reviewed_job

from tests.integration.test_viewer_browser import browser_context, page, serve  # noqa: F401 - fixtures


def test_verifier_tab_shows_review_and_integrity(page, serve, tmp_path: Path) -> None:  # noqa: F811
    reviewed_job.write(tmp_path / "job")
    viewer = serve(tmp_path / "job")
    page.goto(viewer.url + "#/trial?id=meh__00000002&tab=verifier")
    page.wait_for_selector("#review")
    card = page.locator("#review").inner_text()
    assert "presentable_with_revisions" in card and "0.75" in card
    assert "correctness" in card and "clarity" in card
    assert "flagged" in card and "read_tests" in card and "cat /tests/test_outputs.py" in card
    assert page.errors == []
