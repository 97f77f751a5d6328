/* The blind rating page: ask who rates, show one pair at a time, send the answer.
 *
 * The server sends only opaque output ids and URLs under /outputs/; outputs are
 * shown in sandboxed frames (scripts run in an opaque origin). Text is set with
 * textContent only.
 */
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const state = { rater: null, kind: null, current: null, aspects: [], busy: false };

  async function api(path, body) {
    const init = body === undefined ? {} : {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    };
    const response = await fetch(path, init);
    const data = await response.json();
    if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
    return data;
  }

  function show(id) {
    for (const section of ["login", "rating", "done"]) $(section).hidden = section !== id;
  }

  function aspectInputs(side) {
    const box = $(`${side}-aspects`);
    box.replaceChildren();
    for (const aspect of state.aspects) {
      const select = BF.el("select", { id: `${side}-${aspect.id}`, "data-aspect": aspect.id, "aria-label": `${side} ${aspect.label}` },
        BF.el("option", { value: "", text: "–" }));
      for (let v = aspect.min; v <= aspect.max; v += 1) select.append(BF.el("option", { value: String(v), text: String(v) }));
      box.append(BF.el("label", { for: select.id, text: aspect.label }), select);
      if (aspect.help) box.append(BF.el("div", { class: "help", text: aspect.help }));
    }
  }

  function scores() {
    const out = {};
    for (const side of ["left", "right"]) {
      for (const select of $(`${side}-aspects`).querySelectorAll("select")) {
        if (select.value === "") continue;
        (out[side] = out[side] || {})[select.dataset.aspect] = Number(select.value);
      }
    }
    return out;
  }

  async function next() {
    const data = await api("/api/rate/next", { rater: state.rater, kind: state.kind });
    state.rater = data.rater;
    localStorage.setItem("bf-rater", JSON.stringify({ rater: state.rater, kind: state.kind }));
    $("who").textContent = `${state.kind === "guest" ? "guest" : "rater"}: ${state.rater}`;
    $("switch").hidden = false;
    $("progress").textContent = `${data.voted} of ${data.total} pairs answered`;
    if (data.done) { state.current = null; show("done"); return; }
    state.current = data;
    $("left-id").textContent = data.left.output_id;
    $("right-id").textContent = data.right.output_id;
    $("left-frame").src = data.left.url;
    $("right-frame").src = data.right.url;
    $("bar").hidden = !data.golden;
    if (data.golden) $("bar-frame").src = data.golden.url;
    $("reason").value = "";
    $("vote-error").hidden = true;
    aspectInputs("left");
    aspectInputs("right");
    show("rating");
    document.activeElement && document.activeElement.blur && document.activeElement.blur();
  }

  async function vote(choice) {
    if (!state.current || state.busy) return;
    state.busy = true;
    try {
      await api("/api/rate/vote", {
        rater: state.rater, assignment_id: state.current.assignment_id, choice,
        scores: choice === "skip" ? {} : scores(), reason: $("reason").value.trim() || null,
      });
      await next();
    } catch (error) {
      $("vote-error").textContent = String(error.message || error);
      $("vote-error").hidden = false;
    } finally {
      state.busy = false;
    }
  }

  async function start(rater, kind) {
    state.rater = rater;
    state.kind = kind;
    try {
      await next();
    } catch (error) {
      $("login-error").textContent = String(error.message || error);
      $("login-error").hidden = false;
      show("login");
    }
  }

  const KEYS = { "1": "left", ArrowLeft: "left", "2": "right", ArrowRight: "right", "0": "tie", "=": "tie", s: "skip", S: "skip" };

  document.addEventListener("keydown", (event) => {
    const tag = (event.target && event.target.tagName) || "";
    if (["INPUT", "TEXTAREA", "SELECT"].includes(tag) || event.ctrlKey || event.metaKey || event.altKey) return;
    const choice = KEYS[event.key];
    if (choice && !$("rating").hidden) { event.preventDefault(); vote(choice); }
  });

  document.addEventListener("DOMContentLoaded", async () => {
    const setup = await api("/api/rate/setup");
    state.aspects = setup.aspects || [];
    for (const button of document.querySelectorAll(".buttons button")) {
      button.addEventListener("click", () => vote(button.dataset.choice));
    }
    $("login-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const name = $("rater-name").value.trim();
      if (name) start(name, "person");
    });
    $("guest").addEventListener("click", () => start(null, "guest"));
    $("switch").addEventListener("click", () => {
      localStorage.removeItem("bf-rater");
      Object.assign(state, { rater: null, kind: null, current: null });
      $("who").textContent = $("progress").textContent = "";
      $("switch").hidden = true;
      show("login");
    });
    const saved = JSON.parse(localStorage.getItem("bf-rater") || "null");
    if (saved && saved.rater) start(saved.rater, saved.kind);
    else show("login");
  });
})();
