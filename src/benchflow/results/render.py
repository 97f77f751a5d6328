"""Plain-text renderings of the result documents (the CLI prints them; nothing here prints).

Tables are plain fixed-width text: a 10,000-row job renders in milliseconds,
which a rich table does not.
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any, Iterable, Sequence

from pydantic import BaseModel

from .documents import Comparison, JobDocument, TrialDocument, TrialSummary
from .review_metrics import review_lines


def to_json(document: BaseModel | dict[str, Any] | list[Any]) -> str:
    """Strict JSON (NaN/Inf become null), indented, with a trailing newline."""
    if isinstance(document, BaseModel):
        return document.model_dump_json(indent=2) + "\n"  # pydantic writes NaN/Inf as null
    data = document
    try:
        return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError:
        return json.dumps(_finite(data), indent=2, ensure_ascii=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells)


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def outcomes_line(d: dict[str, Any]) -> str:
    failed = d["scored"] - d["passed"]
    return (f"Outcomes: {d['scored']} scored ({d['passed']} passed, {failed} failed), {d['unscored']} unscored, "
            f"{d['execution_errors']} errored, {d['assessment_errors']} verifier errors"
            + (f", {d['interrupted']} unfinished" if d.get("interrupted") else ""))


def denominators_lines(d: dict[str, Any], solve: dict[str, Any] | None = None) -> list[str]:
    lines = [outcomes_line(d),
             f"Pass rate: {pct(d['pass_rate_scored'])} of scored, {pct(d['pass_rate_attempted'])} of attempted "
             f"({d['attempted']}), {pct(d['pass_rate_clean'])} clean; mean reward {num(d['mean_reward'])}"]
    if solve and solve.get("score") is not None:
        lines.append(score_line(solve))
    return lines


def score_line(solve: dict[str, Any], label: str = "Score") -> str:
    interval = solve.get("interval")
    span = f" (95% interval {pct(interval['low'])}–{pct(interval['high'])} over {interval['tasks']} tasks)" \
        if interval else ""
    ks = ", ".join(f"pass@{k} {pct(v)}" for k, v in solve["pass_at_k"].items() if v is not None)
    hats = ", ".join(f"pass^{k} {pct(v)}" for k, v in solve["pass_hat_k"].items() if v is not None and k != "1")
    return (f"{label}: {pct(solve['score'])}{span}; solve rate {pct(solve['solve_rate'])} of {solve['trials']} "
            f"trials; {ks}" + (f"; {hats}" if hats else ""))


def trial_table(trials: list[TrialSummary]) -> str:
    """The trials' table; a ``review`` column (rubric decision and reward · integrity verdict) when any has one."""
    from .review import cell

    rows = trial_rows(trials)
    if not any(t.review or t.integrity for t in trials):
        return table(TRIAL_HEADERS, rows)
    return table((*TRIAL_HEADERS, "review"), [[*row, cell(t.review, t.integrity)] for row, t in zip(rows, trials)])


def trial_rows(trials: Iterable[TrialSummary]) -> list[list[Any]]:
    return [[t.name, t.outcome + (f" ({t.control})" if t.control else ""), num(t.reward, 2) if t.reward is not None
             else "-", t.error_category or t.verifier_error_category or "", num(t.duration_sec, 1),
             t.n_tool_calls, t.total_tokens] for t in trials]


TRIAL_HEADERS = ("trial", "outcome", "reward", "category", "seconds", "tools", "tokens")


def render_job(doc: JobDocument) -> str:
    s = doc.settings
    lines = [f"Job {doc.name}  ({doc.path})" + ("  [running]" if doc.running else ""),
             "  ".join(f"{k}: {s[k]}" for k in ("agent", "model", "sandbox", "started_at") if s.get(k))]
    lines += denominators_lines(doc.denominators, doc.solve_rates)
    if doc.controls_excluded:
        lines.append(f"Controls left out: {doc.controls_excluded} (--include-controls counts them)")
    categories = {**doc.error_categories, **doc.verifier_error_categories}
    if categories:
        lines.append("Why not scored: " + ", ".join(f"{k} {v}" for k, v in categories.items())
                     + "  (bench explain CODE)")
    for group in doc.groups:
        label = ", ".join(f"{k}={v}" for k, v in group["group"].items())
        lines.append(f"[{label}] " + outcomes_line(group["denominators"]))
    lines += [f"note: {n}" for n in doc.notes]
    lines += ["", trial_table(doc.trials)]
    for trial in doc.trials:
        if trial.steps:
            lines.append(f"{trial.name} steps: " + " · ".join(step_cells(trial.steps)))
        if trial.turns:
            lines.append(f"{trial.name} turns: " + " · ".join(turn_cells(trial.turns)))
        if trial.simulated_user:
            lines.append(f"{trial.name} simulated user: {user_text(trial.simulated_user)}")
    return "\n".join(line for line in lines if line is not None) + "\n"


def step_cells(steps: list[dict[str, Any]]) -> list[str]:
    """``01 scaffold passed 1.00``, ``02 build gated 0.50 (min 1.00)``, ``03 polish not run``."""
    out = []
    for step in steps:
        cell = f"{step['index']:02d} {step['name']} {str(step['status']).replace('_', ' ')}"
        if step.get("reward") is not None:
            cell += f" {num(step['reward'], 2)}"
        if step.get("status") == "gated" and step.get("min_reward") is not None:
            cell += f" (min {num(step['min_reward'], 2)})"
        out.append(cell)
    return out


def turn_cells(turns: list[dict[str, Any]]) -> list[str]:
    """``01 writer (claude-agent-acp) finished``, ``02 reviewer (codex-acp) failed``, ``03 editor not run``."""
    out = []
    for turn in turns:
        agent = f" ({turn['agent']})" if turn.get("agent") else ""
        out.append(f"{turn['index']:02d} {turn['role']}{agent} {str(turn['status']).replace('_', ' ')}")
    return out


def user_text(user: dict[str, Any]) -> str:
    """``2 of 3 rounds (model scripted), stopped: satisfied``."""
    return (f"{user.get('rounds')} of {user.get('max_rounds')} rounds (model {user.get('model')}), "
            f"stopped: {user.get('stopped_by') or '-'}")


def turn_table(turns: list[dict[str, Any]]) -> str:
    """One row per turn of a scene trial, the simulated user's rounds in the last column."""
    rows = [[f"{t['index']:02d}", t.get("scene"), t.get("role"), t.get("agent") or "-", t.get("model") or "-",
             t.get("status"), _dash(t.get("n_tool_calls")), _dash(t.get("total_tokens")), num(t.get("seconds"), 1),
             "-" if t.get("user_rounds") is None else f"{t['user_rounds']} ({t.get('user_stopped_by') or '-'})",
             t.get("folder")] for t in turns]
    return table(("turn", "scene", "role", "agent", "model", "status", "tools", "tokens", "seconds", "user rounds",
                  "folder"), rows)


def render_trial(doc: TrialDocument) -> str:
    t = doc.summary
    lines = [f"Trial {doc.name}  ({doc.path})", f"task: {t.task_name}  agent: {t.agent}  model: {t.model}",
             f"outcome: {t.outcome}  reward: {num(t.reward, 3)}  execution: {t.execution}  assessment: {t.assessment}",
             f"started: {t.started_at}  finished: {t.finished_at}  seconds: {num(t.duration_sec, 1)}  "
             f"tool calls: {t.n_tool_calls}  tokens: {t.total_tokens}"]
    if t.error:
        lines.append(f"error [{t.error_category}]: {t.error}")
    if t.verifier_error:
        lines.append(f"verifier error [{t.verifier_error_category}]: {t.verifier_error}")
    if t.error_category or t.verifier_error_category:
        lines.append(f"see: bench explain {t.verifier_error_category or t.error_category}")
    if t.steps:
        lines.append("steps: " + " · ".join(step_cells(t.steps)))
    if t.turns:
        lines += ["turns:", *("  " + row for row in turn_table(t.turns).splitlines())]
        lines += [f"turn {turn['index']:02d} error [{turn.get('error_category')}]: {turn['error']}"
                  for turn in t.turns if turn.get("error")]
    if t.simulated_user:
        lines.append(f"simulated user: {user_text(t.simulated_user)}")
    for talk in doc.conversations:
        where = "" if talk["folder"] == "." else f" ({talk['folder']})"
        for r in talk.get("rounds") or []:
            lines.append(f"user round {r.get('round')}{where}: {_one_line(r.get('reply'))}")
    if t.review or t.integrity:
        from .review import integrity_text, review_text

        if t.review:
            lines.append(f"review: {review_text(t.review)}  ({t.review['current']}; the reward above is the "
                         "verifier's, unchanged)")
        if t.integrity:
            lines.append(f"integrity: {integrity_text(t.integrity)}  (integrity/claim_verdict.json)")
    if doc.regrade:
        lines.append(f"regrade: {json.dumps(doc.regrade)[:300]}")
    lines += [f"note: {n}" for n in doc.notes]
    lines.append("files: " + ", ".join(doc.files[:50]) + (" …" if len(doc.files) > 50 else ""))
    return "\n".join(lines) + "\n"


def _dash(value: Any) -> Any:
    return "-" if value is None else value


def _one_line(text: Any, cap: int = 160) -> str:
    """``text`` on one line, control characters (a reply may hold terminal escapes) shown as spaces."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in str(text or "")).split())
    return flat if len(flat) <= cap else flat[: cap - 1] + "…"


def _settings_lines(c: Comparison) -> list[str]:
    """What differs between the sides, before any number (the first thing to read)."""
    if not c.settings_diff:
        return ["Settings: the paired tasks ran with the same settings"]
    lines = ["Settings that differ (read these before the numbers):"]
    for d in c.settings_diff:
        declared = " (declared with --vary)" if d["setting"] in c.vary else ""
        lines.append(f"  {d['setting']}{declared}: A {', '.join(map(str, d['a'])) or '-'} | "
                     f"B {', '.join(map(str, d['b'])) or '-'} ({d['tasks']} task(s))")
    return lines


def _paired_test_lines(c: Comparison) -> list[str]:
    t = c.paired_test
    if not t or not t["tasks"]:
        return []
    pf, rw = t["pass_fail"], t["reward"]
    ci = f" [{num(rw['ci95'][0])}, {num(rw['ci95'][1])}]" if rw["ci95"] else ""
    lines = [f"Paired test over {t['tasks']} task(s): solved by A only {pf['solved_by_a_only']}, by B only "
             f"{pf['solved_by_b_only']}; McNemar exact p = {pf['p_value']:.4g}; mean delta {num(rw['mean_delta'])}"
             f"{ci} (95%, paired bootstrap, seed {rw['seed']})"]
    for side, label in (("to_b", "Flipped to B (A failed, B solved)"), ("to_a", "Flipped to A (A solved, B failed)")):
        if t["flipped"][side]:
            lines.append(f"{label}: {', '.join(t['flipped'][side])}")
    for side in ("a", "b"):
        out = t["not_the_agent"][side]
        if out:
            kinds = sorted({o["category"] or "no score, no error" for o in out})
            lines.append(f"Left out of both denominators ({side.upper()}, not the agent's doing): {len(out)} "
                         f"trial(s): {', '.join(kinds)}")
    for side in ("a", "b"):
        if c.error_shares.get(side):
            lines.append(f"Errors {side.upper()}: " + ", ".join(f"{k} {pct(v)}" for k, v in c.error_shares[side].items()))
    return lines


def render_comparison(c: Comparison) -> str:
    s = c.summary
    lines = [f"A: {c.a.label}  ({c.a.path})", f"B: {c.b.label}  ({c.b.path})", *_settings_lines(c),
             f"Tasks: {s['tasks']} ({s['paired']} paired, {s['only_a']} only A, {s['only_b']} only B); "
             f"both scored {s['both_scored']}: B higher {s['b_higher']}, lower {s['b_lower']}, same "
             f"{s['same_reward']}; mean delta {num(s['mean_delta'])}",
             "Paired A: " + outcomes_line(c.a_paired), "Paired B: " + outcomes_line(c.b_paired)]
    for side in ("a", "b"):
        ks = ", ".join(f"pass@{k} {pct(v)}" for k, v in c.pass_at_k[side]["pass_at_k"].items())
        lines.append(f"Paired {side.upper()}: {ks}")
    lines += _paired_test_lines(c)
    if c.vary:
        lines.append("Declared to vary: " + ", ".join(c.vary))
    headers = ["task"] + (["group"] if c.by else []) + ["status", "n_a", "n_b", "reward_a", "reward_b", "delta",
                                                         "differs"]
    rows = []
    for r in c.rows:
        differs = ",".join(ch["setting"] for ch in r.checks if ch["match"] is False)
        group = [",".join(f"{v}" for v in (r.group or {}).values())] if c.by else []
        rows.append([r.task, *group, r.status, r.n_a, r.n_b, num(r.reward_a), num(r.reward_b), num(r.delta), differs])
    lines += ["", table(headers, rows)]
    return "\n".join(lines) + "\n"


def render_metrics(report: Any) -> str:
    lines = [f"Jobs: {len(report.jobs)} under {report.path}"]
    if report.controls_excluded:
        lines.append(f"Controls left out: {report.controls_excluded} (--include-controls counts them)")
    for entry in report.settings:
        setting = ", ".join(f"{k}={v}" for k, v in entry.setting.items() if v is not None)
        solve = entry.solve_rates
        lines += ["", f"[{setting}]  jobs: {len(entry.jobs)}", *denominators_lines(entry.denominators)]
        if solve["trials"]:
            lines.append(score_line(solve, "Score (every trial, unscored = fail)"))
        if solve.get("scored_only") and solve["scored_only"]["trials"]:
            lines.append(score_line(solve["scored_only"], f"Scored only (n={solve['scored_only']['trials']})"))
        lines += [f"caveat: {c}" for c in solve["caveats"]]
        lines.append(f"mean tool calls {num(entry.mean_tool_calls, 1)}, mean seconds {num(entry.mean_duration_sec, 1)}"
                     f", tokens {entry.total_tokens or 0}, cost ${num(entry.cost_usd, 2)}")
        lines += review_lines(entry.review, entry.integrity)
    if report.by_agent:
        lines += ["", table(("agent", "attempted", "scored", "passed", "pass rate"),
                            [[g["group"]["agent"], g["denominators"]["attempted"], g["denominators"]["scored"],
                              g["denominators"]["passed"], pct(g["denominators"]["pass_rate_scored"])]
                             for g in report.by_agent])]
    return "\n".join(lines) + "\n"


def render_list(job_list: Any) -> str:
    rows = [[j.name, j.agent, j.model, j.trials, j.denominators["scored"], j.denominators["passed"],
             pct(j.denominators["pass_rate_scored"]), num(j.denominators["mean_reward"]),
             (j.started_at or "")[:19] + (" running" if j.running else "")] for j in job_list.jobs]
    if not rows:
        return f"No jobs under {job_list.path}\n"
    return table(("job", "agent", "model", "trials", "scored", "passed", "pass rate", "mean reward", "started"),
                 rows) + "\n"


def trials_csv(trials: Iterable[TrialSummary]) -> str:
    fields = list(TrialSummary.model_fields)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    for trial in trials:
        row = trial.model_dump(mode="json")  # nested cells (rewards, steps, turns, …) as JSON text
        writer.writerow({k: json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v
                         for k, v in row.items()})
    return out.getvalue()
