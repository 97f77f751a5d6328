"""The hub's HTML: an index of dataset versions and a page per version (tasks + leaderboard).

Server-rendered, self-contained (no script, no outside requests); every
value from the database is escaped. Long lists are paged (``?tasks_page=``,
``?runs_page=``, 100 and 50 rows a page), so a 10,000-task version or a
1,000-run leaderboard costs one small query per page.
"""

from __future__ import annotations

from html import escape
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse

from . import store
from .names import DatasetRef

TASKS_PER_PAGE = 100
RUNS_PER_PAGE = 50
_STYLE = """body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:70rem;color:#222}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1.5rem}th,td{text-align:left;padding:.3rem .6rem;
border-bottom:1px solid #ddd}th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
code{font-size:.85em}.meta dt{font-weight:600}.meta dd{margin:0 0 .4rem}nav a{margin-right:1rem}"""


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    html = (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body><p><a href='/'>BenchFlow Hub</a></p>{body}</body></html>")
    return HTMLResponse(html, status_code=status)


def _int(request: Request, name: str) -> int:
    try:
        return max(1, int(request.query_params.get(name, "1")))
    except ValueError:
        return 1


def _pager(result: store.Page, param: str, other: str) -> str:
    if result.pages <= 1:
        return ""
    links = []
    if result.page > 1:
        links.append(f"<a rel=prev href='?{param}={result.page - 1}{other}'>previous</a>")
    links.append(f"page {result.page} of {result.pages}")
    if result.page < result.pages:
        links.append(f"<a rel=next href='?{param}={result.page + 1}{other}'>next</a>")
    return f"<nav class={param}>{' '.join(links)}</nav>"


def _num(value: Any, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


async def index(request: Request) -> HTMLResponse:
    page = _int(request, "page")
    result = await run_in_threadpool(store.datasets_page, request.app.state.hub.engine, page, 100)
    rows = "".join(
        f"<tr><td><a href='/datasets/{escape(r['org'])}/{escape(r['name'])}/{escape(r['version'])}'>"
        f"{escape(r['org'])}/{escape(r['name'])}@{escape(r['version'])}</a></td>"
        f"<td>{escape(r['description'] or '')}</td><td class=num>{r['n_tasks']}</td>"
        f"<td>{escape(r['published_at'])}</td></tr>" for r in result.rows)
    body = (f"<h1>Datasets</h1><table id=datasets><thead><tr><th>Version</th><th>Description</th><th>Tasks</th>"
            f"<th>Published</th></tr></thead><tbody>{rows}</tbody></table>{_pager(result, 'page', '')}")
    return _page("BenchFlow Hub", body)


def _leaderboard_rows(rows: list[dict[str, Any]], start: int) -> str:
    out = []
    for rank, r in enumerate(rows, start=start):
        interval = ("—" if r["interval_low"] is None
                    else f"{r['interval_low']:.3f}–{r['interval_high']:.3f}")
        out.append(
            f"<tr><td class=num>{rank}</td><td>{escape(r['agent'] or '—')}</td><td>{escape(r['model'] or '—')}</td>"
            f"<td>{escape(r['label'] or r['job_name'])}</td><td class=num>{_num(r['solve_rate'], '.3f')}</td>"
            f"<td class=num>{_num(r['score'], '.3f')}</td><td class=num>{interval}</td>"
            f"<td class=num>{r['tasks']}</td><td class=num>{r['trials']}</td>"
            f"<td class=num>{_num(r['total_tokens'], ',')}</td><td class=num>{_num(r['cost_usd'], '.4f')}</td>"
            f"<td>{escape(r['pushed_at'])}</td></tr>")
    return "".join(out)


async def dataset_page(request: Request) -> HTMLResponse:
    p = request.path_params
    ref = DatasetRef(p["org"], p["name"], p["version"])
    engine = request.app.state.hub.engine
    row = await run_in_threadpool(store.dataset, engine, ref)
    if row is None:
        return _page("Not found", f"<h1>{escape(str(ref))}</h1><p>No such dataset version on this hub.</p>", 404)
    tasks_page, runs_page = _int(request, "tasks_page"), _int(request, "runs_page")
    tasks = await run_in_threadpool(store.tasks_page, engine, row["id"], tasks_page, TASKS_PER_PAGE)
    board = await run_in_threadpool(store.leaderboard_page, engine, row["id"], runs_page, RUNS_PER_PAGE)
    meta = "".join(f"<dt>{label}</dt><dd>{escape(str(row[key]))}</dd>" for key, label in (
        ("description", "Description"), ("license", "License"), ("kind", "Kind"), ("source_repo", "Source"),
        ("source_commit", "Commit"), ("exporter", "Exporter"), ("published_at", "Published")) if row.get(key))
    task_rows = "".join(f"<tr><td>{escape(t['name'])}</td><td><code>{escape(t['digest'])}</code></td>"
                        f"<td><a href='/api/datasets/{escape(ref.path)}/tasks/{escape(t['name'])}.tar.gz'>tar.gz</a>"
                        f"</td></tr>" for t in tasks.rows)
    lb_head = ("<tr><th>#</th><th>Agent</th><th>Model</th><th>Run</th><th>Solve rate</th><th>Score</th>"
               "<th>95% interval</th><th>Tasks</th><th>Trials</th><th>Tokens</th><th>Cost (USD)</th>"
               "<th>Pushed</th></tr>")
    lb_body = _leaderboard_rows(board.rows, (runs_page - 1) * RUNS_PER_PAGE + 1) or (
        "<tr><td colspan=12>No runs pushed yet (bench hub push JOB_DIR --dataset "
        f"{escape(str(ref))}).</td></tr>")
    body = (f"<h1>{escape(str(ref))}</h1><dl class=meta>{meta}</dl>"
            f"<h2>Leaderboard</h2><table id=leaderboard><thead>{lb_head}</thead><tbody>{lb_body}</tbody></table>"
            f"{_pager(board, 'runs_page', f'&tasks_page={tasks_page}')}"
            f"<h2>Tasks ({row['n_tasks']})</h2><table id=tasks><thead><tr><th>Task</th><th>Digest</th>"
            f"<th>Archive</th></tr></thead><tbody>{task_rows}</tbody></table>"
            f"{_pager(tasks, 'tasks_page', f'&runs_page={runs_page}')}")
    return _page(str(ref), body)
