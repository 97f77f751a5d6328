/* BenchFlow viewer: the trial page (summary, ACP timeline, model calls, verifier, timing).
 * Trajectories are fetched one page at a time, so a 10k-event trial never becomes one giant DOM. */
"use strict";

(function () {
  const {el, api, fmt, link, badge, kv, textBlock} = BF;
  const PAGE = 200;
  const PHASES = ["environment_setup", "agent_setup", "agent_execution", "verifier"];

  BF.trialPage = async function trialPage(params, overview) {
    const id = params.get("id") || ".";
    const doc = await api("trial", {id});
    const totals = doc.totals || {acp: 0, llm: 0};
    const tabs = [
      {key: "acp", label: "Trajectory (" + fmt.num(totals.acp) + " events)", render: () => pagedList(id, "acp", totals.acp, acpEvent, params)},
      {key: "llm", label: "Model calls (" + fmt.num(totals.llm) + ")", render: () => pagedList(id, "llm", totals.llm, llmExchange, params)},
    ];
    if (doc.summary) {
      tabs.push({key: "verifier", label: "Verifier & reward", render: () => verifierTab(doc)},
        {key: "instruction", label: "Instruction", render: () => instructionTab(doc)},
        {key: "timing", label: "Timing", render: () => timingTab(doc)},
        {key: "record", label: "Config & result", render: () => recordTab(doc)});
    }
    const turns = (doc.summary && doc.summary.turns) || [];
    if (turns.length) tabs.push({key: "turns", label: "Turns (" + turns.length + ")", render: () => turnsTab(turns)});
    const talks = doc.conversations || [];
    if (talks.length) {
      const n = talks.reduce((sum, t) => sum + (t.rounds || []).length, 0);
      tabs.push({key: "user", label: "Simulated user (" + n + " rounds)", render: () => userTab(talks)});
    }
    if (doc.branches) {
      const n = doc.branches.forks.reduce((sum, f) => sum + f.children.length, 0);
      tabs.push({key: "branches", label: "Branches (" + n + ")", render: () => branchesTab(doc.branches)});
    }
    let active = params.get("tab") || (totals.acp || !doc.summary ? "acp" : "verifier");
    const panel = el("div", {id: "tab-panel"});
    const bar = el("div", {class: "tabs", role: "tablist"});
    function show(key) {
      active = tabs.some((t) => t.key === key) ? key : "acp";
      BF.replaceParams("trial", {id, tab: active});
      bar.replaceChildren(...tabs.map((t) => el("button", {class: t.key === active ? "active" : "", "data-tab": t.key,
                                                         text: t.label, onclick: () => show(t.key)})));
      panel.replaceChildren(tabs.find((t) => t.key === active).render());
    }
    show(active);
    return el("div", {}, crumbs(id, overview), header(doc), bar, panel);
  };

  function crumbs(id, overview) {
    const turn = id.match(/^(?:(.*)\/)?turns\/[^/]+$/);  // a scene turn's folder: back to its trial's turns
    if (turn) return el("div", {class: "crumbs"}, el("a", {href: link("trial", {id: turn[1] || ".", tab: "turns"}),
                                                           id: "back-to-trial", text: "← trial"}));
    if (overview.kind !== "job" && overview.kind !== "jobs") return null;
    const parent = id.includes("/") ? id.slice(0, id.lastIndexOf("/")) : ".";
    const href = BF.lastJob && BF.lastJob.id === parent ? BF.lastJob.href : link("job", {id: parent});
    return el("div", {class: "crumbs"}, el("a", {href, id: "back-to-job", text: "← job"}));
  }

  function header(doc) {
    const s = doc.summary;
    const t = doc.turn;
    if (!s && t) return el("div", {class: "card", id: "turn-header"},
      el("h1", {}, "Turn " + String(t.index).padStart(2, "0") + " · " + t.role + " ", badge(t.status.replace(/_/g, " "), TURN_BADGE[t.status])),
      el("div", {class: "muted", text: "scene " + t.scene + " · " + doc.path}),
      el("div", {class: "stats"}, stat(t.agent || "—", "agent"), stat(t.model || "—", "model"),
        stat(fmt.num(t.n_tool_calls), "tool calls"), stat(fmt.num(t.total_tokens), "tokens")),
      t.error ? el("p", {class: "error-text", text: "Error (" + (t.error_category || "other") + "): " + t.error}) : null);
    if (!s) return el("div", {class: "card"}, el("h1", {text: doc.name}), el("p", {class: "muted", text: doc.path}));
    return el("div", {class: "card", id: "trial-header"},
      el("h1", {}, s.task_name, " ", badge(s.outcome)),
      el("div", {class: "muted", text: s.name}),
      el("div", {class: "stats"},
        stat(fmt.num(s.reward), "reward"), stat(s.agent || "—", "agent"), stat(s.model || "—", "model"),
        stat(fmt.secs(s.duration_sec), "duration"), stat(fmt.num(s.n_tool_calls), "tool calls"),
        stat(fmt.num(s.total_tokens), "tokens"), stat(fmt.usd(s.cost_usd), "cost")),
      s.error ? el("p", {class: "error-text"}, "Agent error ", BF.categoryLink(s.error_category, {task: s.task_name}), ": ", s.error) : null,
      s.verifier_error ? el("p", {class: "error-text"}, "Verifier error ", BF.categoryLink(s.verifier_error_category, {task: s.task_name}),
                                  ": ", s.verifier_error) : null,
      doc.notes && doc.notes.length ? el("ul", {class: "notes"}, doc.notes.map((n) => el("li", {text: n}))) : null);
  }

  function stat(value, label) {
    return el("div", {class: "stat"}, el("div", {class: "n", text: value}), el("div", {class: "l", text: label}));
  }

  /* ---- paged trajectory -------------------------------------------------------- */
  function pagedList(id, kind, total, renderItem, params) {
    const list = el("div", {class: "events", id: kind + "-events"});
    const pagers = [el("div", {class: "pager"}), el("div", {class: "pager"})];
    if (!total) return el("p", {class: "muted", text: kind === "acp" ? "No ACP trajectory was recorded." : "No model calls were recorded."});
    let offset = Math.max(0, Math.min(total - 1, Number(params.get("at")) || 0));
    offset -= offset % PAGE;

    async function load(start) {
      offset = Math.max(0, Math.min(start, Math.floor((total - 1) / PAGE) * PAGE));
      BF.replaceParams("trial", {id, tab: kind, at: offset || ""});
      pagers.forEach(drawPager);
      list.replaceChildren(el("p", {class: "muted", text: "Loading…"}));
      try {
        const page = await api("trajectory", {id, kind, offset, limit: PAGE});
        list.replaceChildren(...page.events.map((item, i) => renderItem(item, offset + i + 1)));
      } catch (err) {
        list.replaceChildren(BF.errorBox(err.message || err));
      }
    }

    function drawPager(pager) {
      const last = Math.floor((total - 1) / PAGE) * PAGE;
      const jump = el("input", {type: "number", min: 1, max: total, placeholder: "go to #"});
      jump.addEventListener("change", () => { const n = Number(jump.value); if (n >= 1) load(n - 1 - ((n - 1) % PAGE)); });
      pager.replaceChildren(
        el("button", {text: "« First", disabled: offset === 0, onclick: () => load(0)}),
        el("button", {text: "‹ Previous", disabled: offset === 0, onclick: () => load(offset - PAGE)}),
        el("span", {class: "range", text: (offset + 1) + "–" + Math.min(total, offset + PAGE) + " of " + fmt.num(total)}),
        el("button", {text: "Next ›", disabled: offset >= last, onclick: () => load(offset + PAGE)}),
        el("button", {text: "Last »", disabled: offset >= last, onclick: () => load(last)}),
        jump);
    }

    load(offset);
    return el("div", {}, pagers[0], list, pagers[1]);
  }

  /* ---- ACP events --------------------------------------------------------------- */
  const ROLES = {user_message: "User", agent_message: "Agent", agent_thought: "Thought", tool_call: "Tool call",
                 agent_timeout: "Agent timeout", oracle: "Oracle", system_message: "System"};

  function acpEvent(ev, index) {
    const type = ev && typeof ev.type === "string" ? ev.type : "event";
    const known = Object.prototype.hasOwnProperty.call(ROLES, type);
    const box = el("div", {class: "event " + (known ? type : "other"), "data-type": type});
    const head = el("div", {class: "head"}, el("span", {class: "idx", text: "#" + index}),
                    el("span", {class: "role", text: known ? ROLES[type] : type}));
    box.append(head);
    if (type === "tool_call") {
      head.append(badge(ev.kind || "tool", "kind"), el("span", {class: "title", text: ev.title || ev.tool_call_id || ""}),
                  badge(ev.status || "unknown", ev.status));
      const input = firstOf(ev, ["raw_input", "rawInput", "input", "arguments"]);
      if (input !== undefined) box.append(el("div", {class: "label", text: "Input"}), textBlock(input, {label: "input"}));
      const output = contentText(ev.content);
      if (output) box.append(el("div", {class: "label", text: "Output"}), textBlock(output, {cls: "tool-output", label: "output"}));
      const raw = firstOf(ev, ["raw_output", "rawOutput", "output"]);
      if (raw !== undefined) box.append(el("div", {class: "label", text: output ? "Raw output" : "Output"}),
                                        textBlock(raw, {cls: "tool-output", label: "output", collapse: Boolean(output)}));
    } else if (type === "agent_timeout") {
      box.append(kv([["Reason", ev.reason], ["Budget", ev.timeout_sec !== undefined ? ev.timeout_sec + " s" : null],
                     ["Pending tool calls", (ev.pending_tool_call_ids || []).join(", ")]]));
    } else if (type === "oracle") {
      box.append(kv([["Command", ev.command], ["Return code", ev.return_code]]), textBlock(ev.stdout || "", {label: "stdout"}));
    } else if (ev && ev.text !== undefined) {
      box.append(el("div", {class: "body"}, textBlock(ev.text, {cls: "text"})));
    } else {
      box.append(textBlock(ev));
    }
    return box;
  }

  function firstOf(obj, keys) {
    for (const key of keys) if (obj && obj[key] !== undefined && obj[key] !== null) return obj[key];
    return undefined;
  }

  /** Text of ACP / chat content: a string, content blocks, diffs, tool results. */
  function contentText(content) {
    if (content === null || content === undefined) return "";
    if (typeof content === "string") return content;
    if (!Array.isArray(content)) content = [content];
    return content.map((block) => {
      if (typeof block === "string") return block;
      if (!block || typeof block !== "object") return String(block);
      if (block.type === "content" && block.content) return contentText(block.content);
      if (block.type === "diff") return "--- " + (block.path || "") + "\n" + (block.oldText ? "- " + block.oldText + "\n" : "") +
                                        "+ " + (block.newText || "");
      if (block.type === "terminal") return "[terminal " + (block.terminalId || "") + "]";
      if (block.type === "tool_use") return "→ " + (block.name || "tool") + " " + fmt.json(block.input);
      if (block.type === "tool_result") return contentText(block.content);
      if (typeof block.text === "string") return block.text;
      if (typeof block.thinking === "string") return "(thinking) " + block.thinking;
      return fmt.json(block);
    }).join("\n");
  }

  /* ---- LLM exchanges ------------------------------------------------------------- */
  function llmExchange(ex, index) {
    const req = (ex && ex.request) || {};
    const res = (ex && ex.response) || {};
    const body = req.body || {};
    const rbody = res.body || {};
    const usage = rbody.usage || {};
    const meta = ex.metadata || {};
    const tin = firstOf(usage, ["prompt_tokens", "input_tokens"]);
    const tout = firstOf(usage, ["completion_tokens", "output_tokens"]);
    const total = firstOf(usage, ["total_tokens"]) ?? (tin !== undefined || tout !== undefined ? (tin || 0) + (tout || 0) : undefined);
    const ok = res.status_code >= 200 && res.status_code < 300;
    const messages = body.messages || body.input || [];
    const box = el("div", {class: "event llm", "data-type": "llm"},
      el("div", {class: "head"}, el("span", {class: "idx", text: "#" + index}),
        el("span", {class: "role", text: (req.method || "POST") + " " + (req.path || "")}),
        el("span", {class: "title", text: meta.provider_model || body.model || meta.request_model || ""}),
        badge(String(res.status_code ?? "no response"), ok ? "completed" : "failed"),
        el("span", {class: "muted", text: ex.duration_ms !== undefined ? fmt.num(ex.duration_ms, 0) + " ms" : ""}),
        el("span", {class: "tokens", text: "tokens in " + fmt.num(tin) + " · out " + fmt.num(tout) + " · total " + fmt.num(total)})));
    if (body.system) box.append(el("div", {class: "label", text: "System"}), textBlock(contentText(body.system), {collapse: true, label: "system"}));
    if (Array.isArray(messages) && messages.length) {
      const text = messages.map((m) => "[" + (m.role || m.type || "?") + "]\n" + contentText(m.content !== undefined ? m.content : m)).join("\n\n");
      box.append(el("div", {class: "label", text: "Request: " + messages.length + " messages"}), textBlock(text, {collapse: true, label: "messages"}));
    }
    box.append(el("div", {class: "label", text: "Response"}), textBlock(responseText(rbody), {label: "response"}));
    return box;
  }

  function responseText(rbody) {
    if (Array.isArray(rbody.choices) && rbody.choices.length) {
      return rbody.choices.map((c) => {
        const msg = c.message || c.delta || {};
        const calls = (msg.tool_calls || []).map((t) => "→ " + ((t.function || {}).name || "tool") + " " + ((t.function || {}).arguments || ""));
        return [contentText(msg.content), ...calls].filter(Boolean).join("\n");
      }).join("\n---\n");
    }
    if (rbody.content !== undefined) return contentText(rbody.content);
    if (rbody.output !== undefined) return contentText(rbody.output);
    return fmt.json(rbody);
  }

  /* ---- verifier, instruction, timing, record -------------------------------------- */
  function verifierTab(doc) {
    const s = doc.summary;
    const original = el("div", {class: "card", id: "reward-original"}, el("h2", {text: doc.regrade ? "Original" : "Reward"}),
      kv([["Reward", fmt.num(s.reward)], ["Outcome", badge(s.outcome)], ["Verifier error", s.verifier_error]]),
      s.rewards ? details("Reward keys", s.rewards) : null,
      doc.reward_details !== null && doc.reward_details !== undefined ? details("Reward breakdown", doc.reward_details) : null);
    const top = doc.regrade
      ? el("div", {class: "side-by-side"}, original, el("div", {class: "card", id: "regrade"}, el("h2", {text: "Regrade"}), details("", doc.regrade)))
      : original;
    const files = Object.entries(doc.verifier_files || {});
    return el("div", {}, top, reviewCard(doc.review), assessmentCard(doc.human_assessment),
      el("h2", {text: "Verifier output"}),
      files.length ? files.map(([name, text]) => el("div", {class: "card verifier-file"}, el("div", {class: "label", text: name}),
                                                  textBlock(text, {label: name})))
                   : el("p", {class: "muted", text: "No verifier output was recorded."}));
  }

  /* The rubric review's current revision (per-criterion verdicts) and the integrity verdict; beside the
     verifier's reward above, which neither changes. */
  function reviewCard(detail) {
    if (!detail) return null;
    const r = detail.review, i = detail.integrity;
    return el("div", {class: "card", id: "review"},
      r ? el("div", {}, el("h2", {text: "Rubric review"}),
        kv([["Decision", r.status === "completed" ? r.decision : badge(r.status)], ["Rubric reward", fmt.num(r.rubric_reward)],
            ["Raw quality", fmt.num(r.raw_quality)], ["Revision", "scoring/" + r.attempt + ".json"],
            ["Error", r.error ? r.error.category + ": " + (r.error.message || "") : null]]),
        r.gates ? details("Gates", r.gates) : null, r.criteria ? details("Criteria", r.criteria) : null) : null,
      i ? el("div", {}, el("h2", {text: "Integrity"}), kv([["Verdict", badge(i.verdict)], ["Mode", i.mode]]),
        i.flags.length ? details("Flags", i.flags) : null) : null);
  }

  /* The blind pairwise assessment sidecar (bench assess): the label the log calls for and whether the log
     verifies; it never changes the reward. */
  function assessmentCard(a) {
    if (!a) return null;
    const label = a.label || {};
    return el("div", {class: "card", id: "assessment"}, el("h2", {text: "Human assessment"}),
      kv([["Label", label.revision == null ? "pending" : (label.label == null ? "withheld" : String(label.label))],
          ["Revision", label.revision == null ? null : label.revision + " (" + label.state + ")"],
          ["Log", a.verified ? badge("verified") : badge("NOT verified")], ["Summary", a.summary]]),
      a.failures && a.failures.length ? details("Failed checks", a.failures) : null);
  }

  /** A value as a table when it is a list of records, a key/value list for an object, text otherwise. */
  function details(title, value) {
    let body;
    if (Array.isArray(value) && value.length && value.every((v) => v && typeof v === "object" && !Array.isArray(v))) {
      const keys = [...new Set(value.flatMap((v) => Object.keys(v)))].slice(0, 8);
      body = el("table", {class: "data"}, el("thead", {}, el("tr", {}, keys.map((k) => el("th", {text: k})))),
        el("tbody", {}, value.map((row) => el("tr", {}, keys.map((k) => el("td", {text: row[k] === undefined ? "" : fmt.json(row[k])}))))));
    } else if (value && typeof value === "object" && !Array.isArray(value)) {
      body = kv(Object.entries(value).map(([k, v]) => [k, v && typeof v === "object" ? details("", v) : fmt.json(v)]));
    } else {
      body = textBlock(value);
    }
    return el("div", {class: "details"}, title ? el("div", {class: "label", text: title}) : null, body);
  }

  function instructionTab(doc) {
    const prompts = doc.prompts || [];
    return el("div", {},
      el("div", {class: "card", id: "instruction"}, el("h2", {text: "Instruction"}),
        doc.instruction ? textBlock(doc.instruction, {cls: "text"}) : el("p", {class: "muted", text: "No prompts.json was recorded."})),
      prompts.length > 1 ? el("div", {class: "card"}, el("h2", {text: "Later prompts"}),
                              prompts.slice(1).map((p, i) => textBlock(p, {label: "prompt " + (i + 2)}))) : null);
  }

  function timingTab(doc) {
    const timing = doc.timing || (doc.result && doc.result.timing) || {};
    const total = timing.total || PHASES.reduce((sum, p) => sum + (timing[p] || 0), 0) || 1;
    const bars = PHASES.concat(["total"]).filter((p) => typeof timing[p] === "number").map((p) => {
      const fill = el("div", {class: "fill"});
      fill.style.width = Math.min(100, (100 * timing[p]) / total).toFixed(1) + "%";
      return el("div", {class: "bar"}, el("span", {text: p.replace(/_/g, " ")}), el("div", {class: "track"}, fill),
                el("span", {class: "num", text: fmt.secs(timing[p])}));
    });
    return el("div", {class: "card", id: "timing"}, el("h2", {text: "Timing phases"}),
      bars.length ? el("div", {class: "bars"}, bars) : el("p", {class: "muted", text: "No timing was recorded."}),
      kv([["Started", doc.summary.started_at], ["Finished", doc.summary.finished_at]]));
  }

  /* The forks of a branched trial as a tree: each child with its status, reward and advantage, a link to
   * its own trajectory, and the forks taken after it nested below it. */
  function branchesTab(view) {
    const byParent = new Map(view.forks.map((f) => [f.parent_node, f]));
    function fork(f) {
      const where = f.at_prompt ? "after prompt " + f.at_prompt : "before the first prompt";
      return el("li", {class: "fork", "data-fork": f.fork},
        el("span", {}, el("strong", {text: f.fork}), " " + where + " · " + f.status + (f.snapshot_kept ? " · snapshot kept" : "")),
        el("ul", {}, f.children.map(child)));
    }
    function child(c) {
      const nested = byParent.get(c.node);
      const prompts = ((c.request || {}).prompts || []).join(" / ");
      return el("li", {class: "branch-child", "data-node": c.node},
        el("strong", {text: c.node}), " ", badge(c.status), " reward " + fmt.num(c.reward),
        " · advantage " + fmt.num(c.advantage), " · ",
        c.id ? el("a", {href: link("trial", {id: c.id, tab: "acp"}), text: "trajectory"}) : "no trajectory",
        prompts ? el("div", {class: "muted", text: prompts}) : null,
        c.error ? el("div", {class: "error-text", text: c.error}) : null,
        nested ? el("ul", {}, fork(nested)) : null);
    }
    const roots = view.forks.filter((f) => f.parent_node === null);
    return el("div", {class: "card", id: "branch-tree"}, el("ul", {class: "tree"}, roots.map(fork)));
  }

  /* A scene's turns in order: who played each role, how it ended, and a link to its own trajectory. */
  const TURN_BADGE = {finished: "completed", failed: "failed", timed_out: "errored", not_run: "pending"};

  function turnsTab(turns) {
    const head = ["turn", "scene", "role", "agent", "model", "status", "tool calls", "tokens", "seconds", "user rounds", "trajectory"];
    const rows = turns.map((t) => {
      const nn = String(t.index).padStart(2, "0");
      return el("tr", {id: "turn-" + nn, "data-turn": t.index, "data-role": t.role},
        el("td", {text: nn}), el("td", {text: t.scene}), el("td", {text: t.role}), el("td", {text: t.agent || "—"}),
        el("td", {text: t.model || "—"}),
        el("td", {}, badge(t.status.replace(/_/g, " "), TURN_BADGE[t.status]), t.error ? el("div", {class: "error-text", text: t.error}) : null),
        el("td", {text: fmt.num(t.n_tool_calls)}), el("td", {text: fmt.num(t.total_tokens)}), el("td", {text: fmt.secs(t.seconds)}),
        el("td", {text: t.user_rounds === null || t.user_rounds === undefined ? "—" : t.user_rounds + " (" + (t.user_stopped_by || "—") + ")"}),
        el("td", {}, t.id ? el("a", {href: link("trial", {id: t.id, tab: "acp"}), text: "trajectory"}) : el("span", {class: "muted", text: t.folder})));
    });
    return el("div", {class: "card", id: "turns"}, el("h2", {text: "Turns"}),
      el("table", {class: "data"}, el("thead", {}, el("tr", {}, head.map((h) => el("th", {text: h})))), el("tbody", {}, rows)));
  }

  /* Each simulated-user conversation: the agent's message and the user's reply, round by round. */
  function userTab(talks) {
    return el("div", {id: "simulated-user"}, talks.map((talk) => el("div", {class: "card conversation", "data-folder": talk.folder},
      el("h2", {text: talk.folder === "." ? "Simulated user" : "Simulated user · " + talk.folder}),
      kv([["Model", talk.model], ["Rounds", (talk.rounds || []).length + " of " + talk.max_rounds], ["Stopped", talk.stopped_by || "—"]]),
      (talk.rounds || []).map((r) => el("div", {class: "round", "data-round": r.round},
        el("div", {class: "label", text: "Round " + r.round + ": agent"}), textBlock(r.agent_message, {cls: "text", label: "agent message"}),
        el("div", {class: "label", text: "Round " + r.round + ": user"}), textBlock(r.reply, {cls: "text", label: "reply"}))))));
  }

  function recordTab(doc) {
    return el("div", {},
      el("div", {class: "card"}, el("h2", {text: "config.json"}), textBlock(doc.config || {}, {collapse: true, label: "config"})),
      el("div", {class: "card"}, el("h2", {text: "result.json"}), textBlock(doc.result || {}, {collapse: true, label: "result"})),
      el("div", {class: "card"}, el("h2", {text: "Files"}), el("ul", {}, (doc.files || []).map((f) => el("li", {text: f})))));
  }
})();
