"""``bench view PATH --export out.html``: the viewer as one self-contained, redacted HTML file.

The file holds the page's scripts and styles inline, plus every answer the
page would ask the server for (the same documents the live viewer serves, in
a ``<script type="application/json" id="bf-export">`` block the page reads
instead of calling ``/api``). So it opens offline from ``file://`` and makes no
request at all; its Content-Security-Policy allows only its own inline scripts
and styles (by hash) and no connection.

Every string in the data goes through :func:`benchflow.util.redact.redact_obj`
(secret shapes and secret-named fields masked) and then :func:`shorten_home`
(home folders shown as ``~``). A large folder is bounded: the first
:data:`TRIAL_CAP` trials get their own page with the first
:data:`EVENT_PAGE` events of each trajectory; the rest appear in the job
tables and the charts only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.util.atomic import write_text
from benchflow.util.redact import redact_obj

from .app import STATIC_DIR, Viewer, explain_catalogue
from .outcomes import PARTS
from .sources import is_trial, resolve_source

TRIAL_CAP = 300
EVENT_PAGE = 200
"""The live page asks for trajectory pages of 200 events (trial.js PAGE)."""
STYLES = ("vendor/uPlot.min.css", "app.css")
SCRIPTS = ("dom.js", "vendor/uPlot.iife.min.js", "charts.js", "tabs.js", "trial.js", "app.js")
_HOME_RE = re.compile(r"(?<![\w.~-])(?:/home/[^/\s\"'<>]+|/Users/[^/\s\"'<>]+|/root)(?=/|\b|$)")


@dataclass(frozen=True)
class ExportReport:
    path: Path
    size: int
    jobs: int
    trials: int
    trial_pages: int


def shorten_home(text: str) -> str:
    """``/home/ann/x`` → ``~/x`` (also ``/Users/…``, ``/root`` and this user's own home folder)."""
    home = os.path.expanduser("~").rstrip("/")
    if home:
        text = re.sub(re.escape(home) + r"(?=/|\b|$)", "~", text)
    return _HOME_RE.sub("~", text)


def _clean(value: Any) -> Any:
    """Redacted, home folders shortened (keys are kept: they are field names or our ids)."""
    if isinstance(value, str):
        return shorten_home(value)
    if isinstance(value, dict):
        return {key: _clean(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clean(item) for item in value]
    return value


class _Answers:
    """The API answers the exported page may ask for: ``[path, params, body]`` entries."""

    def __init__(self) -> None:
        self.entries: list[list[Any]] = []

    def add(self, path: str, params: dict[str, Any], body: Any) -> None:
        self.entries.append([path, {k: str(v) for k, v in params.items()}, _clean(redact_obj(body))])


def _trial_pages(viewer: Viewer, answers: _Answers, trial: Path) -> None:
    ident = viewer.source.ident(trial)
    doc = viewer.trial_document(trial)
    answers.add("trial", {"id": ident}, doc)
    for kind in ("acp", "llm"):
        answers.add("trajectory", {"id": ident, "kind": kind, "offset": 0, "limit": EVENT_PAGE},
                    viewer.trajectory_page(trial, kind, 0, EVENT_PAGE))
    for turn in (doc.get("summary") or {}).get("turns") or []:  # the pages the Turns tab links to
        if turn.get("id"):
            _trial_pages(viewer, answers, viewer.source.resolve(turn["id"]))


def collect(target: str) -> tuple[list[list[Any]], ExportReport]:
    """Every answer for ``target``; the report's ``path`` is the source (the caller sets the file)."""
    source = resolve_source(target)
    viewer = Viewer(source)
    answers = _Answers()
    overview = viewer.overview_document()
    answers.add("overview", {}, overview)
    catalogue = explain_catalogue()
    answers.add("explain", {}, catalogue)
    codes: set[str] = set()
    trials: list[Path] = []
    total = 0
    for path in source.jobs():
        ident = source.ident(path)
        doc = viewer.job_document(path)
        answers.add("job", {"id": ident}, doc)
        total += len(doc["trials"])
        for row in doc["trials"]:
            codes.update(c for c in (row.get("error_category"), row.get("verifier_error_category")) if c)
            if row.get("id") is not None and len(trials) < TRIAL_CAP and is_trial(Path(row["path"])):
                trials.append(Path(row["path"]))
    jobs = source.jobs()
    if jobs:
        idents = ["."] + [source.ident(path) for path in jobs] if len(jobs) > 1 else [source.ident(jobs[0])]
        for ident in idents:
            whole = viewer.outcomes_document([ident], PARTS)
            common = {k: v for k, v in whole.items() if k not in PARTS}
            for part in PARTS:
                answers.add("outcomes", {"id": ident, "part": part}, {**common, part: whole[part]})
    if source.kind in ("trial", "trajectory"):
        trials = [source.root]
        total = 1
    for trial in trials:
        _trial_pages(viewer, answers, trial)
    for code in sorted(codes & set(catalogue)):
        answers.add("explain", {"code": code}, catalogue[code])
    report = ExportReport(path=source.root, size=0, jobs=len(jobs), trials=total, trial_pages=len(trials))
    return answers.entries, report


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def render(entries: list[list[Any]]) -> str:
    """The HTML page: inline styles and scripts (allowed by hash), and the answers as inert JSON."""
    styles = [(STATIC_DIR / name).read_text(encoding="utf-8") for name in STYLES]
    scripts = [(STATIC_DIR / name).read_text(encoding="utf-8") for name in SCRIPTS]
    for name, text in zip(SCRIPTS, scripts):
        if "</script" in text.lower():
            raise ValueError(f"static/{name} contains '</script' and cannot be inlined")
    style = "\n".join(styles)
    data = json.dumps({"kind": "benchflow.viewer-export", "schema_version": 1, "answers": entries},
                      ensure_ascii=False, allow_nan=False).replace("<", "\\u003c")
    policy = ("default-src 'none'; script-src " + " ".join(_digest(s) for s in scripts)
              + f"; style-src {_digest(style)}; img-src data:; connect-src 'none'; base-uri 'none'; "
              "form-action 'none'")
    body = "\n".join(f"<script>{script}</script>" for script in scripts)
    return ("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<meta name=\"referrer\" content=\"no-referrer\">\n"
            "<title>BenchFlow viewer (export)</title>\n"
            f"<style>{style}</style>\n</head>\n<body>\n"
            "<header class=\"topbar\"><a class=\"brand\" href=\"#/\">BenchFlow viewer</a>"
            "<span id=\"source\" class=\"muted\"></span><span class=\"muted\">exported, redacted</span></header>\n"
            "<div id=\"confirm-bar\" class=\"confirm-bar\" hidden></div>\n"
            "<main id=\"main\"><p class=\"muted\">Loading…</p></main>\n"
            f"<script type=\"application/json\" id=\"bf-export\">{data}</script>\n{body}\n</body>\n</html>\n")


def export_html(target: str, out: str | Path) -> ExportReport:
    """Write the export of ``target`` (trial, job, folder of jobs or trajectory file) to ``out``.

    Raises:
        UserError: ``target`` is not something the viewer can show.
    """
    entries, report = collect(target)
    html = render(entries)
    out = Path(out)
    write_text(out, html)
    return ExportReport(path=out, size=len(html.encode()), jobs=report.jobs, trials=report.trials,
                        trial_pages=report.trial_pages)
