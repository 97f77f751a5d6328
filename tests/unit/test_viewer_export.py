"""``bench view PATH --export out.html``: one self-contained, redacted file (read here as text; the
browser test opens it offline)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.viewer_pictures import HOME_PATH, SECRET, PictureJobs, make_picture_jobs

from benchflow.viewer.export import TRIAL_CAP, export_html, shorten_home


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> PictureJobs:
    return make_picture_jobs(tmp_path_factory.mktemp("pictures"))


@pytest.fixture(scope="module")
def html(jobs: PictureJobs, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("export") / "view.html"
    report = export_html(str(jobs.root), out)
    assert report.jobs == 7 and report.trials == report.trial_pages == 40 and report.size == out.stat().st_size
    return out.read_text()


def answers(html: str) -> dict[str, object]:
    block = re.search(r'<script type="application/json" id="bf-export">(.*?)</script>', html, re.DOTALL).group(1)
    data = json.loads(block)
    return {path + json.dumps(params, sort_keys=True): body for path, params, body in data["answers"]}


def test_no_secret_and_no_home_folder(html: str) -> None:
    assert SECRET not in html
    assert HOME_PATH not in html and str(Path.home()) + "/" not in html
    assert "~/projects/bench/notes.txt" in html  # the path is still there, shortened
    assert "***" in html  # masked, not dropped


def test_markup_in_data_cannot_close_the_block(html: str) -> None:
    block = re.search(r'id="bf-export">(.*?)</script>', html, re.DOTALL).group(1)
    assert "<" not in block and "\\u003cimg" in block


def test_only_its_own_inline_code_may_run(html: str) -> None:
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy and "unsafe" not in policy
    scripts = re.findall(r"<script>(.*?)</script>", html, re.DOTALL)
    assert len(scripts) == 6 and "uPlot" in "".join(scripts)
    for script in scripts:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing loaded from elsewhere


def test_it_holds_what_the_page_asks_for(html: str) -> None:
    data = answers(html)
    assert 'overview{}' in data and 'explain{}' in data
    job = data['job{"id": "acp-cheap"}']
    assert len(job["trials"]) == 8
    pareto = data['outcomes{"id": ".", "part": "pareto"}']["pareto"]
    assert len(pareto["points"]) == 5 and len(pareto["refused"]) == 1
    trial_id = job["trials"][0]["id"]
    assert data['trajectory' + json.dumps({"id": trial_id, "kind": "acp", "limit": "200", "offset": "0"},
                                          sort_keys=True)]["total"] == 3


def test_shorten_home() -> None:
    home = str(Path.home())
    assert shorten_home(f"cat {home}/a.txt") == "cat ~/a.txt"
    assert shorten_home("/home/ann/x and /Users/bob/y") == "~/x and ~/y"
    assert shorten_home("/homework/x /data/home/x") == "/homework/x /data/home/x"


def test_trial_cap(monkeypatch: pytest.MonkeyPatch, jobs: PictureJobs, tmp_path: Path) -> None:
    monkeypatch.setattr("benchflow.viewer.export.TRIAL_CAP", 3)
    report = export_html(str(jobs.root), tmp_path / "small.html")
    assert (report.trial_pages, report.trials) == (3, 40) and TRIAL_CAP > 3


def test_cli_export_and_bad_path(jobs: PictureJobs, tmp_path: Path) -> None:
    out = tmp_path / "cli.html"
    ran = subprocess.run([sys.executable, "-m", "benchflow.cli", "view", str(jobs.cheap), "--export", str(out)],
                         check=False, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and out.is_file() and "1 job(s), 8 trial page(s)" in ran.stdout
    bad = subprocess.run([sys.executable, "-m", "benchflow.cli", "view", str(tmp_path / "nothing"), "--export",
                          str(tmp_path / "x.html")], check=False, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "no such file or folder" in bad.stderr and not (tmp_path / "x.html").exists()
