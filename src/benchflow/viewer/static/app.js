/* BenchFlow viewer: router, jobs list, job page, compare, explain, and the --confirm bar.
 * The trial page lives in trial.js; helpers in dom.js. */
"use strict";

(function () {
  const {el, api, fmt, link, badge, kv} = BF;
  const main = document.getElementById("main");
  let overview = null;

  const OUTCOMES = ["passed", "failed", "errored", "verifier_errored", "unscored"];
  const COLUMNS = [
    {key: "task_name", label: "Task"},
    {key: "reward", label: "Reward", num: true},
    {key: "outcome", label: "Status"},
    {key: "error_category", label: "Error category"},
    {key: "duration_sec", label: "Duration", num: true},
    {key: "n_tool_calls", label: "Tool calls", num: true},
    {key: "total_tokens", label: "Tokens", num: true},
    {key: "cost_usd", label: "Cost", num: true},
  ];
  const ROW_CAP = 500;

  function parseHash() {
    const hash = location.hash.replace(/^#\/?/, "");
    const [route, query] = hash.split("?", 2);
    return {route: route || "", params: new URLSearchParams(query || "")};
  }

  async function render() {
    const {route, params} = parseHash();
    try {
      if (!overview) overview = await api("overview");
      document.getElementById("source").textContent = overview.kind + ": " + overview.root;
      renderConfirmBar();
      const view = await route_(route, params);
      main.replaceChildren(view);
    } catch (err) {
      main.replaceChildren(BF.errorBox(err.message || err));
    }
  }

  function route_(route, params) {
    if (route === "job") return jobPage(params);
    if (route === "trial") return BF.trialPage(params, overview);
    if (route === "compare") return comparePage(params);
    if (route === "explain") return explainPage(params);
    if (overview.trial !== null) return BF.trialPage(new URLSearchParams({id: overview.trial}), overview);
    if (overview.jobs.length === 1) return jobPage(new URLSearchParams({id: overview.jobs[0].id}));
    return jobsPage(params);
  }

  /* ---- tabs over a page: the first is the page's own content, the others draw /api/outcomes --------- */
  const PICTURE_TABS = [
    {key: "pareto", label: "Pareto", render: (ids) => BF.paretoTab(ids)},
    {key: "outcomes", label: "Outcomes", render: (ids) => BF.outcomesTab(ids)},
    {key: "training", label: "Training", render: (ids) => BF.trainingTab(ids)},
  ];

  function viewTabs(route, params, first, ids) {
    const tabs = [first].concat(PICTURE_TABS.map((t) => ({key: t.key, label: t.label, render: () => t.render(ids)})));
    const bar = el("div", {class: "tabs view-tabs", role: "tablist"});
    const panel = el("div", {id: "view-panel", role: "tabpanel"});
    let shown = 0;
    async function show(key) {
      const tab = tabs.find((t) => t.key === key) || tabs[0];
      const ticket = ++shown;
      const here = Object.fromEntries(params.entries());
      here.view = tab === tabs[0] ? "" : tab.key;
      BF.replaceParams(route, here);
      bar.replaceChildren(...tabs.map((t) => el("button", {class: t === tab ? "active" : "", "data-view": t.key, role: "tab",
                                                           "aria-selected": t === tab ? "true" : "false", text: t.label,
                                                           onclick: () => show(t.key)})));
      panel.replaceChildren(el("p", {class: "muted", text: "Loading…"}));
      try {
        const node = await tab.render();
        if (ticket === shown) panel.replaceChildren(node);
      } catch (err) {
        if (ticket === shown) panel.replaceChildren(BF.errorBox(err.message || err));
      }
    }
    show(params.get("view") || first.key);
    return el("div", {}, bar, panel);
  }

  /* ---- folder of jobs ------------------------------------------------------- */
  function jobsPage(params) {
    return el("div", {},
      el("h1", {text: "Jobs"}), el("p", {class: "muted", text: overview.jobs.length + " jobs under " + overview.root}),
      ratingsCards(overview.ratings || []),
      viewTabs("", params || new URLSearchParams(), {key: "jobs", label: "Jobs", render: () => jobsList()}, "."));
  }

  function jobsList() {
    const picked = new Set();
    const button = el("button", {class: "btn", id: "compare-selected", disabled: true, text: "Compare the two selected"});
    button.addEventListener("click", () => {
      const [a, b] = [...picked];
      location.hash = link("compare", {a, b});
    });
    const rows = overview.jobs.map((job) => {
      const box = el("input", {type: "checkbox"});
      box.addEventListener("change", () => {
        if (box.checked) picked.add(job.id); else picked.delete(job.id);
        button.disabled = picked.size !== 2;
      });
      const d = job.denominators || {};
      return el("tr", {},
        el("td", {}, box),
        el("td", {class: "task-cell"}, el("a", {href: link("job", {id: job.id}), text: job.id})),
        el("td", {text: job.settings.agent || "—"}), el("td", {text: job.settings.model || "—"}),
        el("td", {class: "num", text: fmt.num(job.n_trials)}), el("td", {class: "num", text: fmt.num(d.passed)}),
        el("td", {class: "num", text: fmt.pct(d.pass_rate_attempted)}),
        el("td", {class: "num", text: fmt.num(d.mean_reward)}));
    });
    const head = el("tr", {}, ["", "Job", "Agent", "Model", "Trials", "Passed", "Pass rate", "Mean reward"]
      .map((label) => el("th", {text: label})));
    return el("div", {},
      el("div", {class: "filters"}, button),
      el("table", {class: "data", id: "jobs-table"}, el("thead", {}, head), el("tbody", {}, rows)));
  }

  /* ---- one job ---------------------------------------------------------------- */
  async function jobPage(params) {
    const id = params.get("id") || "";
    const job = await api("job", {id});
    const state = {
      failed: params.get("failed") === "1", cat: params.get("cat") || "", q: params.get("q") || "",
      sort: params.get("sort") || "", desc: params.get("desc") === "1", all: false,
    };
    const counts = Object.fromEntries(OUTCOMES.map((o) => [o, 0]));
    for (const trial of job.trials) counts[trial.outcome] = (counts[trial.outcome] || 0) + 1;
    const d = job.denominators || {};
    const s = job.settings || {};

    const tbody = el("tbody");
    const shown = el("span", {class: "muted", id: "shown-count"});
    const more = el("button", {class: "btn", hidden: true});
    const head = el("tr");
    const failedBox = el("input", {type: "checkbox", id: "filter-failed"});
    failedBox.checked = state.failed;
    const catSelect = el("select", {id: "filter-category"}, el("option", {value: "", text: "any error category"}),
      allCategories(job).map((c) => el("option", {value: c, text: c})));
    catSelect.value = state.cat;
    const search = el("input", {type: "search", id: "filter-text", placeholder: "Filter by task, error, status…"});
    search.value = state.q;

    function update() {
      const here = {id, failed: state.failed ? 1 : "", cat: state.cat, q: state.q, sort: state.sort, desc: state.desc ? 1 : ""};
      BF.replaceParams("job", here);
      BF.lastJob = {id, href: link("job", here)};  // the trial page's way back keeps these filters
      const rows = sortRows(filterRows(job.trials, state), state);
      const visible = state.all ? rows : rows.slice(0, ROW_CAP);
      tbody.replaceChildren(...visible.map((t) => trialRow(t, job)));
      shown.textContent = "Showing " + visible.length + " of " + rows.length + " matching (" + job.trials.length + " trials)";
      more.hidden = visible.length === rows.length;
      more.textContent = "Show all " + rows.length;
      head.replaceChildren(...COLUMNS.map((col) => {
        const th = el("th", {class: (col.num ? "num " : "") + (state.sort === col.key ? "sorted" + (state.desc ? " desc" : "") : ""),
                              "data-key": col.key, text: col.label});
        th.addEventListener("click", () => {
          state.desc = state.sort === col.key ? !state.desc : false;
          state.sort = col.key;
          update();
        });
        return th;
      }));
    }
    failedBox.addEventListener("change", () => { state.failed = failedBox.checked; update(); });
    catSelect.addEventListener("change", () => { state.cat = catSelect.value; update(); });
    search.addEventListener("input", () => { state.q = search.value; update(); });
    more.addEventListener("click", () => { state.all = true; update(); });

    const chips = el("div", {class: "chips"}, Object.entries(job.error_categories || {}).concat(
      Object.entries(job.verifier_error_categories || {})).map(([cat, n]) => {
      const chip = el("button", {class: "chip" + (state.cat === cat ? " active" : ""), text: cat + " × " + n});
      chip.addEventListener("click", () => { catSelect.value = state.cat = state.cat === cat ? "" : cat; update(); });
      return chip;
    }));
    update();
    const crumbs = overview.kind === "jobs" ? el("div", {class: "crumbs"}, el("a", {href: "#/", text: "← all jobs"})) : null;
    const trialsView = el("div", {},
      el("div", {class: "card"}, el("h2", {text: "Outcomes"}),
        el("div", {class: "stats", id: "outcomes-counts"}, OUTCOMES.map((o) => stat(fmt.num(counts[o]), o.replace("_", " "), o))),
        chips.childElementCount ? el("div", {}, el("h2", {text: "Error categories"}), chips) : null,
        job.notes && job.notes.length ? el("ul", {class: "notes"}, job.notes.map((n) => el("li", {text: n}))) : null),
      el("div", {class: "filters"},
        el("label", {}, failedBox, " Failures only"), catSelect, search, shown),
      el("table", {class: "data", id: "trials-table"}, el("thead", {}, head), tbody),
      more);
    return el("div", {},
      crumbs,
      el("h1", {text: job.name}, job.running ? " " : null, job.running ? badge("running", "pending") : null),
      el("div", {class: "grid"},
        el("div", {class: "card"}, el("h2", {text: "Settings"}), kv([
          ["Agent", s.agent], ["Model", s.model], ["Sandbox", s.sandbox], ["Task set", s.tasks_dir || s.dataset_name],
          ["Dataset version", s.dataset_version], ["Effort", s.reasoning_effort], ["Started", s.started_at],
          ["Folder", job.path]])),
        el("div", {class: "card"}, el("h2", {text: "Score"}), el("div", {class: "stats", id: "score"},
          stat(fmt.pct(d.pass_rate_attempted), "pass rate (attempted)"), stat(fmt.pct(d.pass_rate_scored), "pass rate (scored)"),
          stat(fmt.num(d.mean_reward), "mean reward"), stat(fmt.num(d.attempted), "attempted"),
          job.cost_usd !== null && job.cost_usd !== undefined ? stat(fmt.usd(job.cost_usd), "cost") : null))),
      ratingsCards((overview.ratings || []).filter((r) => r.jobs.includes(id))),
      viewTabs("job", params, {key: "trials", label: "Trials", render: () => trialsView}, id));
  }

  /* ---- preference ratings (ratings.v1.json from bench preferences rank) ------- */
  function ratingsCards(list) {
    return list.map((doc) => el("div", {class: "card ratings"},
      el("h2", {text: "Preferences by " + doc.by + (doc.provisional ? " (provisional)" : "")}),
      el("p", {class: "muted", text: doc.id + " · " + (doc.pairs ? doc.pairs.answered + " of " + doc.pairs.total + " pairs answered" : "")}),
      doc.tables.map((table) => el("div", {},
        el("div", {class: "muted", text: "Raters: " + (table.raters || []).join(", ") + " · " + fmt.num(table.votes) + " votes" +
          (table.agreement && table.agreement.raw !== null ? " · agreement " + fmt.num(table.agreement.raw) +
            (table.agreement.met === null ? "" : table.agreement.met ? " (met)" : " (below " + table.agreement.min + ")") : "")}),
        el("table", {class: "data ratings-table"},
          el("thead", {}, el("tr", {}, ["Arm", "Rating", "95% interval", "Games", "W", "L", "T"].map((h) => el("th", {text: h})))),
          el("tbody", {}, table.ratings.map((r) => el("tr", {},
            el("td", {text: r.name}), el("td", {class: "num", text: Math.round(r.rating)}),
            el("td", {class: "num", text: r.low === null ? "—" : Math.round(r.low) + " – " + Math.round(r.high)}),
            el("td", {class: "num", text: r.games}), el("td", {class: "num", text: r.wins}),
            el("td", {class: "num", text: r.losses}), el("td", {class: "num", text: r.ties})))))))));
  }

  function stat(value, label, cls) {
    return el("div", {class: "stat " + (cls || "")}, el("div", {class: "n", text: value}), el("div", {class: "l", text: label}));
  }

  function allCategories(job) {
    return Object.keys(Object.assign({}, job.error_categories || {}, job.verifier_error_categories || {})).sort();
  }

  function categoryOf(trial) {
    return trial.error_category || trial.verifier_error_category || "";
  }

  function filterRows(trials, state) {
    const q = state.q.trim().toLowerCase();
    return trials.filter((t) => {
      if (state.failed && t.outcome === "passed") return false;
      if (state.cat && t.error_category !== state.cat && t.verifier_error_category !== state.cat) return false;
      if (!q) return true;
      return [t.task_name, t.name, t.outcome, t.error, t.verifier_error, categoryOf(t)]
        .some((v) => v && String(v).toLowerCase().includes(q));
    });
  }

  function sortRows(rows, state) {
    if (!state.sort) return rows;
    const key = state.sort === "error_category" ? categoryOf : (t) => t[state.sort];
    const sign = state.desc ? -1 : 1;
    return rows.slice().sort((a, b) => {
      const x = key(a), y = key(b);
      if (x === y) return 0;
      if (x === null || x === undefined || x === "") return 1;  // blanks last either way
      if (y === null || y === undefined || y === "") return -1;
      return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * sign;
    });
  }

  /** An error category linking to its `bench explain` entry ({job}/{task} filled when given). */
  function categoryLink(cat, context) {
    if (!cat) return "";
    return el("a", {href: link("explain", Object.assign({code: cat}, context || {})), class: "category", text: cat});
  }
  BF.categoryLink = categoryLink;

  function trialRow(t, job) {
    const task = t.id !== null && t.id !== undefined
      ? el("a", {href: link("trial", {id: t.id}), text: t.task_name}) : el("span", {text: t.task_name});
    return el("tr", {"data-outcome": t.outcome},
      el("td", {class: "task-cell", title: t.name}, task, job.trials.some((o) => o !== t && o.task_name === t.task_name)
        ? el("div", {class: "muted", text: t.name}) : null),
      el("td", {class: "num", text: fmt.num(t.reward)}),
      el("td", {}, badge(t.outcome)),
      el("td", {title: t.error || t.verifier_error || ""}, categoryLink(categoryOf(t), {job: job.name, task: t.task_name})),
      el("td", {class: "num", text: fmt.secs(t.duration_sec)}),
      el("td", {class: "num", text: fmt.num(t.n_tool_calls)}),
      el("td", {class: "num", text: fmt.num(t.total_tokens)}),
      el("td", {class: "num", text: fmt.usd(t.cost_usd)}));
  }

  /* ---- compare two jobs ------------------------------------------------------ */
  async function comparePage(params) {
    const doc = await api("compare", {a: params.get("a") || "", b: params.get("b") || ""});
    const rows = doc.rows.map((r) => el("tr", {},
      el("td", {class: "task-cell", text: r.task}), el("td", {}, badge(r.status, r.status === "paired" ? "completed" : "")),
      el("td", {class: "num", text: fmt.num(r.reward_a)}), el("td", {class: "num", text: fmt.num(r.reward_b)}),
      el("td", {class: "num", text: fmt.num(r.delta)})));
    const side = (s) => el("div", {class: "card"}, el("h2", {}, el("a", {href: link("job", {id: s.id}), text: s.label})),
      kv([["Passed", fmt.num(s.denominators.passed)], ["Attempted", fmt.num(s.denominators.attempted)],
          ["Pass rate", fmt.pct(s.denominators.pass_rate_attempted)], ["Mean reward", fmt.num(s.denominators.mean_reward)]]));
    return el("div", {},
      el("div", {class: "crumbs"}, el("a", {href: "#/", text: "← all jobs"})),
      el("h1", {text: "Compare: " + doc.a.label + " vs " + doc.b.label}),
      settingsCard(doc),
      el("div", {class: "side-by-side"}, side(doc.a), side(doc.b)),
      pairedTestCard(doc),
      el("div", {class: "card"}, el("h2", {text: "Summary"}), kv(Object.entries(doc.summary).map(([k, v]) => [k, fmt.json(v)]))),
      doc.setting_mismatches.length ? el("div", {class: "card notes"}, el("h2", {text: "Setting mismatches"}),
        el("ul", {}, doc.setting_mismatches.map((m) => el("li", {text: m.task + ": " + m.setting + " differs — A " +
                                                              JSON.stringify(m.a) + " · B " + JSON.stringify(m.b)})))) : null,
      doc.caveats.length ? el("ul", {class: "notes"}, doc.caveats.map((c) => el("li", {text: c}))) : null,
      el("table", {class: "data", id: "compare-table"},
        el("thead", {}, el("tr", {}, ["Task", "Status", "Reward A", "Reward B", "Δ"].map((l) => el("th", {text: l})))),
        el("tbody", {}, rows)),
      el("h2", {text: "Pareto of the two"}), await BF.paretoTab([doc.a.id, doc.b.id]));
  }

  /* What differs between the sides comes before any number (the same order as `bench eval compare`). */
  function settingsCard(doc) {
    const diff = doc.settings_diff || [];
    return el("div", {class: "card", id: "compare-settings"}, el("h2", {text: "Settings that differ"}),
      diff.length ? el("ul", {}, diff.map((d) => el("li", {text: d.setting + (doc.vary.includes(d.setting) ? " (declared)" : "") +
                                                    ": A " + (d.a.join(", ") || "-") + " · B " + (d.b.join(", ") || "-") +
                                                    " (" + d.tasks + " task(s))"})))
        : el("p", {text: "The paired tasks ran with the same settings."}));
  }

  function pairedTestCard(doc) {
    const t = doc.paired_test;
    if (!t || !t.tasks) return null;
    const ci = t.reward.ci95 ? " [" + fmt.num(t.reward.ci95[0]) + ", " + fmt.num(t.reward.ci95[1]) + "]" : "";
    const left = (side) => t.not_the_agent[side].length + " trial(s)" +
      (t.not_the_agent[side].length ? ": " + [...new Set(t.not_the_agent[side].map((o) => o.category || "no score"))].join(", ") : "");
    return el("div", {class: "card", id: "compare-paired-test"}, el("h2", {text: "Paired test over " + t.tasks + " task(s)"}),
      kv([["Solved by A only / B only", t.pass_fail.solved_by_a_only + " / " + t.pass_fail.solved_by_b_only],
          ["McNemar exact p", String(Number(t.pass_fail.p_value.toPrecision(4)))],
          ["Mean delta (95%, paired bootstrap, seed " + t.reward.seed + ")", fmt.num(t.reward.mean_delta) + ci],
          ["Flipped to B", t.flipped.to_b.join(", ") || "-"], ["Flipped to A", t.flipped.to_a.join(", ") || "-"],
          ["Left out, not the agent's doing (A)", left("a")], ["Left out, not the agent's doing (B)", left("b")]]));
  }

  /* ---- bench explain catalogue ----------------------------------------------- */
  async function explainPage(params) {
    const code = params.get("code") || "";
    const catalogue = await api("explain");
    let entry = null;
    if (code) {
      try {
        entry = await api("explain", BF.exported ? {code} : {code, job: params.get("job") || "", task: params.get("task") || ""});
      } catch (err) {
        entry = {error: err.message || String(err)};
      }
    }
    const card = !code ? null : entry.error ? el("div", {class: "card", id: "explain-entry"}, el("p", {text: entry.error}))
      : el("div", {class: "card", id: "explain-entry"},
          el("h2", {}, entry.label, " ", badge(entry.fault + " problem", "kind")),
          kv([["What happened", entry.happened], ["What next", entry.next],
              ["Also known as", (entry.aliases || []).join(", ")]]));
    return el("div", {},
      el("div", {class: "crumbs"}, el("button", {class: "btn", text: "← back", onclick: () => history.back()})),
      el("h1", {text: code ? "bench explain " + code : "bench explain"}),
      card,
      el("h2", {text: "Every cause"}),
      el("table", {class: "data"}, el("thead", {}, el("tr", {}, ["Code", "What it means", "Whose problem"].map((l) => el("th", {text: l})))),
        el("tbody", {}, Object.values(catalogue).map((e) => el("tr", {},
          el("td", {}, el("a", {href: link("explain", {code: e.code}), text: e.code})),
          el("td", {text: e.label}), el("td", {text: e.fault}))))));
  }

  /* ---- --confirm bar ---------------------------------------------------------- */
  function renderConfirmBar() {
    const bar = document.getElementById("confirm-bar");
    if (!overview.confirm || bar.dataset.ready) return;
    bar.dataset.ready = "1";
    const status = el("span", {id: "confirm-status"});
    const approve = el("button", {class: "btn approve", id: "confirm-approve", text: "Approve & submit"});
    const reject = el("button", {class: "btn reject", id: "confirm-reject", text: "Not this one"});
    async function decide(decision) {
      approve.disabled = reject.disabled = true;
      try {
        const response = await fetch("/api/decision", {method: "POST", headers: {"Content-Type": "application/json"},
                                                        body: JSON.stringify({decision})});
        const body = await response.json();
        if (!response.ok) throw new Error(body.error || "HTTP " + response.status);
        status.textContent = "Decision sent: " + body.decision + ". The viewer has stopped; you can close this tab.";
      } catch (err) {
        status.textContent = "Could not send the decision: " + (err.message || err);
        approve.disabled = reject.disabled = false;
      }
    }
    approve.addEventListener("click", () => decide("approved"));
    reject.addEventListener("click", () => decide("rejected"));
    const summary = overview.confirm.redaction_summary;
    bar.replaceChildren(el("span", {class: "q", text: "Submit this trajectory?"}),
      summary ? el("span", {id: "redaction-summary", text: "Masked for you: " + summary}) : null,
      approve, reject, status);
    bar.hidden = false;
  }

  window.addEventListener("hashchange", render);
  if (window.matchMedia) window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", render);  // charts re-read the colours
  render();
})();
