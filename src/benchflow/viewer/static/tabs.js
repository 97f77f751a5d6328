/* BenchFlow viewer: the Pareto, Outcomes and Training tabs, drawn from one benchflow.outcomes/1 document
 * (GET /api/outcomes?id=…&part=…, aggregated on the server). Every chart has a table with its numbers. */
"use strict";

(function () {
  const {el, api, fmt, link, badge} = BF;
  const OUTCOMES = ["passed", "failed", "errored", "verifier_errored", "unscored"];
  const TASK_ROWS = 200;

  function outcomes(ids, part) {
    return api("outcomes", {id: ids, part});
  }

  function stat(value, label, cls) {
    return el("div", {class: "stat " + (cls || "")}, el("div", {class: "n", text: value}), el("div", {class: "l", text: label}));
  }

  function table(id, headers, rows) {
    return el("table", {class: "data", id},
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", {class: h.num ? "num" : "", text: h.label || h})))),
      el("tbody", {}, rows));
  }

  function trialLink(row) {
    return row.id ? el("a", {href: link("trial", {id: row.id}), text: row.task_name}) : el("span", {text: row.task_name});
  }

  function interval(low, high) {
    return low === null || low === undefined ? "—" : fmt.pct(low) + " – " + fmt.pct(high);
  }

  /* ---- Pareto ------------------------------------------------------------------ */
  BF.paretoTab = async function paretoTab(ids) {
    const doc = await outcomes(ids, "pareto");
    const p = doc.pareto;
    const method = "95% bootstrap over tasks, " + p.interval.samples + " resamples, a fixed seed per point";
    const sections = p.task_sets.map((taskSet) => {
      const points = p.points.filter((pt) => (pt.setting.task_set || "(no task set recorded)") === taskSet);
      const front = p.frontier[taskSet] || {};
      const number = (pt) => p.points.indexOf(pt) + 1;
      const chartPoints = (field, axisKey) => points.map((pt) => ({
        n: number(pt), x: pt[field], y: pt.pass_rate, low: pt.interval ? pt.interval.low : null,
        high: pt.interval ? pt.interval.high : null, control: pt.control,
        frontier: (front[axisKey] || []).includes(pt.id)}));
      const describe = (axisKey, unit) => {
        const names = (front[axisKey] || []).map((id) => points.find((pt) => pt.id === id)).map((pt) => "#" + number(pt) + " " + pt.label);
        return "Pass rate against mean " + unit + " per task for " + points.length + " settings on " + taskSet +
          ". Frontier: " + (names.length ? names.join("; ") : "none") + ".";
      };
      const rows = points.map((pt) => el("tr", {"data-point": pt.id, class: (pt.dominated.cost || pt.dominated.time) ? "dominated" : ""},
        el("td", {class: "num", text: String(number(pt))}),
        el("td", {class: "setting-cell"}, pt.label, pt.control ? " " : null, pt.control ? badge("control " + pt.control, "kind") : null),
        el("td", {class: "num", text: fmt.num(pt.tasks)}), el("td", {class: "num", text: fmt.num(pt.trials)}),
        el("td", {class: "num pass-rate", text: fmt.pct(pt.pass_rate)}),
        el("td", {class: "num", text: pt.interval ? interval(pt.interval.low, pt.interval.high) : "— (one task)"}),
        el("td", {class: "num", text: fmt.usd(pt.mean_cost_usd)}), el("td", {class: "num", text: fmt.secs(pt.mean_duration_sec)}),
        el("td", {class: "frontier", text: frontierText(pt, "cost")}), el("td", {class: "frontier", text: frontierText(pt, "time")}),
        el("td", {class: "muted", text: pt.notes.join("; ")})));
      return el("section", {class: "card pareto-set"},
        el("h2", {text: "Task set: " + taskSet}),
        el("div", {class: "side-by-side"},
          BF.paretoChart({points: chartPoints("mean_cost_usd", "cost"), xLabel: "mean cost per task (USD)",
                          xFormat: (v) => "$" + (+v).toPrecision(2), alt: describe("cost", "cost"),
                          caption: "Pass rate vs mean cost per task (" + method + "). Filled: on the frontier; hollow: dominated; diamond: control run."}),
          BF.paretoChart({points: chartPoints("mean_duration_sec", "time"), xLabel: "mean wall time per task (s)",
                          xFormat: (v) => fmt.secs(v), alt: describe("time", "wall time"),
                          caption: "Pass rate vs mean wall time per task (" + method + ")."})),
        table("pareto-table", ["#", "Setting", {label: "Tasks", num: true}, {label: "Trials", num: true},
                               {label: "Pass rate", num: true}, {label: "95% interval", num: true},
                               {label: "Cost / task", num: true}, {label: "Time / task", num: true},
                               "Frontier (cost)", "Frontier (time)", "Notes"], rows));
    });
    const refused = p.refused.length ? el("div", {class: "card", id: "pareto-refused"}, el("h2", {text: "Not drawn"}),
      el("ul", {}, p.refused.map((r) => el("li", {}, el("strong", {text: r.label}), ": " + r.reason)))) : null;
    return el("div", {id: "pareto"},
      el("p", {class: "muted", text: "Each agent + model setting is one point: its pass rate (mean over tasks of each task's solve rate) " +
                                     "with a " + method + ", against the mean cost and mean wall time per task. Settings are compared only " +
                                     "on the same task set."}),
      p.notes.length ? el("ul", {class: "notes"}, p.notes.map((n) => el("li", {text: n}))) : null,
      p.points.length ? null : el("p", {text: "No finished trial to draw."}),
      sections, refused);
  };

  function frontierText(pt, axisKey) {
    const d = pt.dominated[axisKey];
    return d === true ? "dominated" : d === false ? "on frontier" : "—";
  }

  /* ---- Outcomes ------------------------------------------------------------------ */
  BF.outcomesTab = async function outcomesTab(ids, jobs) {
    const doc = await outcomes(ids, "outcomes");
    const o = doc.outcomes;
    const all = jobs || doc.jobs;
    let picker = null;
    if (all.length > 1) {  // a folder: all jobs pooled (every setting together), or one job
      const select = el("select", {id: "outcomes-job", "aria-label": "which job"},
        el("option", {value: ".", text: "all " + all.length + " jobs pooled (every setting together)"}),
        all.map((j) => el("option", {value: j.id, text: j.name})));
      select.value = [].concat(ids)[0];
      select.addEventListener("change", async () => {
        const node = await BF.outcomesTab(select.value, all);
        select.closest("#outcomes").replaceWith(node);
      });
      picker = el("div", {class: "filters"}, el("label", {}, "Outcomes of ", select));
    }
    const counts = el("div", {class: "stats", id: "outcome-counts"},
      OUTCOMES.map((name) => stat(fmt.num(o.counts[name]), name.replace("_", " "), name)));
    return el("div", {id: "outcomes"}, picker,
      el("div", {class: "card"}, el("h2", {text: "Outcomes of " + fmt.num(o.finished) + " finished trials"}), counts,
        Object.keys(o.error_categories).length ? el("p", {class: "muted", text: "Error categories: " +
          Object.entries(o.error_categories).map(([c, n]) => c + " × " + n).join(", ")}) : null),
      timelineCard(o.timeline),
      histogramCard(o.reward_histogram),
      tasksCard(o),
      el("div", {class: "side-by-side"}, topCard("Slowest trials", "slowest", o.slowest, (r) => fmt.secs(r.duration_sec)),
        topCard("Most expensive trials", "most-expensive", o.most_expensive, (r) => fmt.usd(r.cost_usd))));
  };

  function clock(start, seconds) {
    return seconds < 3600 ? "+" + fmt.secs(seconds) : "+" + (seconds / 3600).toFixed(1) + " h";
  }

  function timelineCard(tl) {
    if (!tl.bins.length) return el("div", {class: "card"}, el("h2", {text: "Timeline"}), el("p", {class: "muted", text: "No trial recorded when it finished."}));
    const x = tl.bins.map((b) => b.t);
    const categories = [...new Set(tl.bins.flatMap((b) => Object.keys(b.categories)))].sort();
    const byOutcome = OUTCOMES.map((name) => ({label: name.replace("_", " "), color: BF.COLORS[name], values: tl.bins.map((b) => b.outcomes[name])}));
    const byCategory = categories.map((c, i) => ({label: c, color: BF.COLORS.categories[i % BF.COLORS.categories.length],
                                                  values: tl.bins.map((b) => b.categories[c] || 0)}));
    const holder = el("div");
    const alt = (kind, series) => "Trials finishing per " + fmt.secs(tl.bin_sec) + " since " + tl.start + ", stacked by " + kind + ": " +
      series.map((s) => s.label + " " + s.values.reduce((a, b) => a + b, 0)).join(", ") + ".";
    const draw = (mode) => {
      const series = mode === "category" ? byCategory : byOutcome;
      holder.replaceChildren(series.length ? BF.stackedBars({x, series, xLabel: "time since start", yLabel: "trials finished",
        xFormat: (v) => clock(tl.start, v), alt: alt(mode, series)}) : el("p", {class: "muted", text: "No trial has an error category."}));
    };
    const select = el("select", {id: "timeline-stack", "aria-label": "stack the timeline by"},
      el("option", {value: "outcome", text: "stack by outcome"}), el("option", {value: "category", text: "stack by error category"}));
    select.addEventListener("change", () => draw(select.value));
    draw("outcome");
    const rows = tl.bins.filter((b) => OUTCOMES.some((n) => b.outcomes[n])).map((b) => el("tr", {},
      el("td", {text: clock(tl.start, b.t)}), OUTCOMES.map((n) => el("td", {class: "num", text: String(b.outcomes[n])})),
      el("td", {text: Object.entries(b.categories).map(([c, n]) => c + " × " + n).join(", ")})));
    return el("div", {class: "card", id: "timeline"},
      el("h2", {text: "Trials finishing over time"}),
      el("div", {class: "filters"}, select, el("span", {class: "muted", text: "bins of " + fmt.secs(tl.bin_sec) + ", from " + tl.start +
        (tl.undated ? "; " + tl.undated + " trial(s) without a finish time are left out" : "")})),
      holder,
      el("details", {}, el("summary", {text: "The numbers"}), table("timeline-table",
        ["Finished by"].concat(OUTCOMES.map((n) => ({label: n.replace("_", " "), num: true}))).concat(["Error categories"]), rows)));
  }

  function histogramCard(h) {
    const labels = h.counts.map((_, i) => h.edges[i].toFixed(1) + "–" + h.edges[i + 1].toFixed(1));
    const x = h.counts.map((_, i) => i);
    const alt = "Reward histogram of " + h.scored + " scored trials: " + labels.map((l, i) => l + ": " + h.counts[i]).join(", ") +
      (h.unscored ? "; " + h.unscored + " unscored" : "") + ".";
    return el("div", {class: "card", id: "reward-histogram"},
      el("h2", {text: "Rewards"}),
      h.scored ? BF.stackedBars({x, series: [{label: "trials", color: BF.COLORS.accent, values: h.counts}], xLabel: "reward",
                                 yLabel: "trials", xFormat: (v) => (Number.isInteger(v) && labels[v] ? labels[v] : ""), alt, height: 220})
        : el("p", {class: "muted", text: "No scored trial."}),
      el("p", {class: "muted", text: h.scored + " scored" + (h.unscored ? ", " + h.unscored + " unscored (no reward; not in the histogram)" : "")}));
  }

  function tasksCard(o) {
    const tbody = el("tbody");
    const more = el("button", {class: "btn", hidden: o.tasks.length <= TASK_ROWS, text: "Show all " + o.tasks.length});
    const show = (all) => {
      tbody.replaceChildren(...(all ? o.tasks : o.tasks.slice(0, TASK_ROWS)).map((t) => {
        const bar = el("div", {class: "rate-track"}, el("div", {class: "rate-interval"}), el("div", {class: "rate-dot"}));
        bar.firstChild.style.left = (100 * t.low) + "%";
        bar.firstChild.style.width = (100 * (t.high - t.low)) + "%";
        bar.lastChild.style.left = (100 * t.rate) + "%";
        return el("tr", {}, el("td", {class: "task-cell", text: t.task}), el("td", {class: "num", text: t.passed + " / " + t.n}),
          el("td", {class: "num", text: fmt.pct(t.rate)}), el("td", {class: "num", text: interval(t.low, t.high)}),
          el("td", {class: "rate-cell", "aria-hidden": "true"}, bar));
      }));
      more.hidden = all || o.tasks.length <= TASK_ROWS;
    };
    more.addEventListener("click", () => show(true));
    show(false);
    return el("div", {class: "card", id: "task-rates"},
      el("h2", {text: "Solve rate per task"}),
      el("p", {class: "muted", text: o.tasks_total + " tasks, lowest first; 95% Wilson interval over each task's trials." +
        (o.tasks_total > o.tasks.length ? " The first " + o.tasks.length + " are listed." : "")}),
      el("table", {class: "data", id: "task-rates-table"}, el("thead", {}, el("tr", {},
        ["Task", "Solved", "Rate", "95% interval", "0 – 100%"].map((h, i) => el("th", {class: i && i < 4 ? "num" : "", text: h})))), tbody),
      more);
  }

  function topCard(title, id, rows, value) {
    return el("div", {class: "card"}, el("h2", {text: title}),
      rows.length ? table(id + "-table", ["Task", "Job", "Outcome", {label: title.startsWith("Slowest") ? "Duration" : "Cost", num: true}],
        rows.map((r) => el("tr", {}, el("td", {class: "task-cell"}, trialLink(r)), el("td", {text: r.job || "—"}),
          el("td", {}, badge(r.outcome)), el("td", {class: "num", text: value(r)}))))
        : el("p", {class: "muted", text: "Nothing recorded."}));
  }

  /* ---- Training ------------------------------------------------------------------ */
  BF.trainingTab = async function trainingTab(ids) {
    const doc = await outcomes(ids, "training");
    const t = doc.training;
    const s = t.summary;
    const reasons = Object.entries(s.reasons);
    return el("div", {id: "training"},
      el("div", {class: "card"}, el("h2", {text: "Training readiness"}),
        el("div", {class: "stats", id: "training-summary"},
          stat(fmt.num(s.training_grade) + " / " + fmt.num(s.rollouts), "training-grade rollouts", s.training_grade === s.rollouts && s.rollouts ? "passed" : "failed"),
          stat(fmt.num(s.groups), "groups (" + t.group_by.join(", ") + ")"),
          stat(fmt.num(s.groups_with_variance), "groups with reward variance", "passed"),
          stat(fmt.num(s.groups_without_variance), "groups with equal rewards", s.groups_without_variance ? "errored" : ""),
          stat(fmt.num(s.groups_too_small), "groups under 2 scored")),
        el("p", {class: "muted", text: "Training-grade: every model call captured prompt token ids, sampled token ids and logprobs, and each " +
          "prompt extends the previous call's prompt and sampled tokens (as bench train token-coverage checks). GRPO learns only from " +
          "groups whose rewards differ."}),
        reasons.length ? el("ul", {class: "notes", id: "training-reasons"}, reasons.map(([r, n]) => el("li", {text: n + " rollout(s): " + r}))) : null),
      el("div", {class: "card"}, el("h2", {text: "Groups"}),
        el("p", {class: "muted", text: t.groups_total + " groups" + (t.groups_total > t.groups.length ? "; the first " + t.groups.length + " listed" : "") +
          ", equal rewards first."}),
        table("groups-table", ["Task", "Agent", "Model", "Job", {label: "Size", num: true}, {label: "Scored", num: true},
                               {label: "Mean", num: true}, {label: "Std", num: true}, {label: "Spread", num: true}, "Variance"],
          t.groups.map((g) => el("tr", {}, el("td", {class: "task-cell", text: g.task}), el("td", {text: g.agent || "—"}),
            el("td", {text: g.model || "—"}), el("td", {text: g.job || "—"}), el("td", {class: "num", text: String(g.size)}),
            el("td", {class: "num", text: String(g.scored)}), el("td", {class: "num", text: fmt.num(g.mean)}),
            el("td", {class: "num", text: fmt.num(g.std)}), el("td", {class: "num", text: fmt.num(g.spread)}),
            el("td", {}, badge(g.has_variance ? "varies" : g.scored < 2 ? "too small" : "all equal", g.has_variance ? "passed" : "errored")))))),
      el("div", {class: "card"}, el("h2", {text: "Rollouts"}),
        el("p", {class: "muted", text: t.rollouts_total + " rollouts" + (t.rollouts_total > t.rollouts.length ? "; the first " + t.rollouts.length + " listed" : "") +
          ", not training-grade first."}),
        table("rollouts-table", ["Task", "Job", {label: "Reward", num: true}, {label: "Model calls", num: true},
                                 {label: "With prompt ids", num: true}, {label: "With sampled ids", num: true},
                                 {label: "With logprobs", num: true}, "Training-grade", "Why not"],
          t.rollouts.map((r) => el("tr", {}, el("td", {class: "task-cell"}, trialLink(r)), el("td", {text: r.job || "—"}),
            el("td", {class: "num", text: fmt.num(r.reward)}), el("td", {class: "num", text: String(r.calls)}),
            el("td", {class: "num", text: String(r.with_prompt_token_ids)}),
            el("td", {class: "num", text: String(r.with_sampled_token_ids)}), el("td", {class: "num", text: String(r.with_logprobs)}),
            el("td", {}, badge(r.training_grade ? "yes" : "no", r.training_grade ? "passed" : "failed")),
            el("td", {class: "muted", text: r.reasons.join("; ")}))))));
  };
})();
