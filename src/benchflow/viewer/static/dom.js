/* Shared helpers of the BenchFlow viewer.
 *
 * Everything shown comes from job folders, which hold untrusted text (agent
 * output, task names). Nodes are built with createElement and filled with
 * text nodes only; nothing here ever assigns HTML, and links may only point
 * inside this page (#/...).
 */
"use strict";

const BF = (window.BF = {});

/** el("div", {class: "x", onclick: fn}, child, "text", [more]) -> a new element. */
BF.el = function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = String(value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "href") node.setAttribute("href", BF.safeHref(value));
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
};

/** Only in-page links: anything else becomes "#". */
BF.safeHref = function safeHref(value) {
  const text = String(value);
  return text.startsWith("#") ? text : "#";
};

/** "#/trial?id=a/b&tab=acp" from a route name and parameters. */
BF.link = function link(route, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== null && value !== undefined && value !== "") query.set(key, String(value));
  }
  const text = query.toString();
  return "#/" + route + (text ? "?" + text : "");
};

/** "path?a=1&b=2": parameters sorted, empty ones left out, a list value repeated. */
BF.apiKey = function apiKey(path, params) {
  const query = new URLSearchParams();
  for (const key of Object.keys(params || {}).sort()) {
    for (const value of [].concat(params[key])) {
      if (value !== null && value !== undefined && value !== "") query.append(key, String(value));
    }
  }
  const text = query.toString();
  return path + (text ? "?" + text : "");
};

/** The answers of an exported page (bench view --export), or null when served live. */
BF.exported = (function () {
  const node = document.getElementById("bf-export");
  if (!node) return null;
  const answers = new Map();
  for (const [path, params, body] of JSON.parse(node.textContent).answers) answers.set(BF.apiKey(path, params), body);
  return answers;
})();

BF.api = async function api(path, params) {
  const key = BF.apiKey(path, params);
  if (BF.exported) {
    if (!BF.exported.has(key)) throw new Error("Not included in this export (" + key + "); open the folder with bench view to see it.");
    return BF.exported.get(key);
  }
  const response = await fetch("/api/" + key, {headers: {Accept: "application/json"}});
  let body = null;
  try {
    body = await response.json();
  } catch (err) {
    body = null;
  }
  if (!response.ok) throw new Error((body && body.error) || "HTTP " + response.status + " for /api/" + path);
  return body;
};

BF.fmt = {
  num(value, digits) {
    if (value === null || value === undefined || Number.isNaN(value)) return "—";
    return Number(value).toLocaleString(undefined, {maximumFractionDigits: digits === undefined ? 3 : digits});
  },
  pct(value) {
    return value === null || value === undefined ? "—" : (100 * value).toFixed(1) + "%";
  },
  secs(value) {
    if (value === null || value === undefined) return "—";
    if (value < 60) return value.toFixed(1) + " s";
    const minutes = Math.floor(value / 60);
    if (minutes < 60) return minutes + "m " + Math.round(value % 60) + "s";
    return Math.floor(minutes / 60) + "h " + (minutes % 60) + "m";
  },
  usd(value) {
    return value === null || value === undefined ? "—" : "$" + Number(value).toFixed(4);
  },
  json(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  },
};

BF.badge = (text, cls) => BF.el("span", {class: "badge " + (cls || text || ""), text: text || "—"});

BF.kv = function kv(pairs) {
  const list = BF.el("dl", {class: "kv"});
  for (const [key, value] of pairs) {
    if (value === null || value === undefined || value === "") continue;
    list.append(BF.el("dt", {text: key}), BF.el("dd", {}, value instanceof Node ? value : String(value)));
  }
  return list;
};

const SHORT_CHARS = 1500;
const SHORT_LINES = 18;
const RENDER_CAP = 200000;

/** A <pre> of text; long text starts collapsed, huge text is cut with a button to show the rest. */
BF.textBlock = function textBlock(value, options) {
  const opts = options || {};
  const text = value === null || value === undefined ? "" : BF.fmt.json(value);
  const pre = BF.el("pre", {class: opts.cls || ""});
  if (text.length > RENDER_CAP) {
    pre.textContent = text.slice(0, RENDER_CAP);
    const more = BF.el("button", {class: "btn", text: "Show all " + BF.fmt.num(text.length) + " characters"});
    more.addEventListener("click", () => { pre.textContent = text; more.remove(); });
    return BF.el("div", {}, collapsible(pre, text, opts), more);
  }
  pre.textContent = text;
  return collapsible(pre, text, opts);
};

function collapsible(pre, text, opts) {
  const lines = text.split("\n").length;
  if (!opts.collapse && (text.length <= SHORT_CHARS && lines <= SHORT_LINES)) return pre;
  const first = text.split("\n", 1)[0].slice(0, 140);
  const summary = BF.el("summary", {},
    (opts.label ? opts.label + " · " : "") + BF.fmt.num(lines) + " lines, " + BF.fmt.num(text.length) + " chars  ",
    BF.el("span", {class: "preview", text: first}));
  return BF.el("details", {class: "long"}, summary, pre);
}

BF.errorBox = (message) => BF.el("div", {class: "error-box", text: String(message)});

/** Replace the hash's parameters without adding a history entry or re-rendering. */
BF.replaceParams = function replaceParams(route, params) {
  history.replaceState(null, "", BF.link(route, params));
};
