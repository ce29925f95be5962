// shardgate console: one page over the public admin API.
//
// Everything it shows comes from /v1/admin/... with the admin token the operator pasted, and
// everything it does is one of those calls, so the console can do nothing a script could not,
// and all of it is audited. The token lives in this tab's sessionStorage only: never in a URL,
// a cookie or a log. Text from the API (tenant ids, reasons, audit targets) is always set as
// text, never parsed as HTML.

import { instancesView } from "./instances.js";
import { requestHealthView } from "./health.js";

const TOKEN_KEY = "shardgate.console.token";
const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- the admin API

class Problem extends Error {
  constructor(status, body) {
    const detail = (body && (body.detail || body.title)) || `HTTP ${status}`;
    super(detail);
    this.status = status;
    this.code = (body && body.code) || `http_${status}`;
    this.detail = detail;
  }
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

async function call(path, { method = "GET", body, using = token() } = {}) {
  const headers = { Accept: "application/json", Authorization: `Bearer ${using}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
      redirect: "error",
    });
  } catch (error) {
    throw new Problem(0, { code: "unreachable", detail: `The gateway did not answer (${error.message}).` });
  }
  const text = await response.text();
  let parsed = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = { detail: text.slice(0, 200) };
    }
  }
  if (!response.ok) throw new Problem(response.status, parsed);
  return parsed;
}

// A call from a view: a refused token ends the session and brings the sign-in back.
async function api(path, options) {
  try {
    return await call(path, options);
  } catch (problem) {
    // 401: no valid token (expired, revoked key); 403: a valid token without the admin scope.
    if (problem.status === 401 || problem.status === 403) {
      signOut(`Signed out: ${problem.detail} (${problem.code})`);
      throw new Stop();
    }
    throw problem;
  }
}

class Stop extends Error {}

// ---------------------------------------------------------------- small DOM helpers

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function badge(text, kind) {
  return el("span", { class: `badge ${kind || ""}`, text });
}

// A table: its id, its column headers (a header ending in "#" is a number, right-aligned), its
// rows and an optional caption.
function table(id, headers, rows, caption) {
  const th = (h) => (h.endsWith("#") ? el("th", { class: "num", text: h.slice(0, -1) }) : el("th", { text: h }));
  return el("table", { id }, caption ? el("caption", { class: "muted", text: caption }) : null, el("thead", {}, el("tr", {}, headers.map(th))), el("tbody", {}, rows));
}

// A list of numbers in a text (a vshard move's target: "342, 343, 344, 400") said as runs
// ("342–344, 400").
function numberRuns(text) {
  if (typeof text !== "string") return text;
  return text.replace(/(?<![\w.-])\d+(?:, \d+)+(?![\w-])/g, (list) => {
    const numbers = list.split(", ").map(Number);
    const parts = [];
    let start = 0;
    for (let i = 0; i < numbers.length; i++) {
      if (i + 1 === numbers.length || numbers[i + 1] !== numbers[i] + 1) {
        parts.push(start === i ? `${numbers[i]}` : `${numbers[start]}–${numbers[i]}`);
        start = i + 1;
      }
    }
    return parts.join(", ");
  });
}

function problemBox(problem) {
  return el("p", { class: "problem", role: "alert", text: `${problem.detail} (${problem.code})` });
}

const number = new Intl.NumberFormat("en");
function fmt(value, digits = 0) {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  return number.format(Number(value.toFixed(digits)));
}

// A load in statement ms/s: two decimals while small, one above 10.
function ms(value) {
  return fmt(value, Math.abs(value) < 10 ? 2 : 1);
}

function bytes(value) {
  if (value === null || value === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = value;
  let unit = 0;
  while (v >= 1024 && unit < units.length - 1) {
    v /= 1024;
    unit += 1;
  }
  return `${v.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

function clock(rfc3339) {
  if (!rfc3339) return "–";
  const at = new Date(rfc3339);
  return at.toLocaleTimeString("en-GB", { hour12: false });
}

function when(rfc3339) {
  if (!rfc3339) return "–";
  const at = new Date(rfc3339);
  return `${at.toLocaleDateString("en-CA")} ${at.toLocaleTimeString("en-GB", { hour12: false })}`;
}

function duration(seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return "–";
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

// Ask before anything that changes the fleet. Resolves true when confirmed.
function confirmAction(title, text, action = "Confirm") {
  const dialog = $("confirm");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-yes").textContent = action;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
    $("confirm-no").focus();
  });
}

function status(text) {
  $("status").textContent = text;
}

// Replaces a container's children, keeping keyboard focus on the control that had it.
function replace(container, ...children) {
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : null;
  container.replaceChildren(...children.flat().filter((child) => child !== null && child !== undefined && child !== false));
  if (focused) {
    const again = container.querySelector(`[data-key="${CSS.escape(focused)}"]`);
    if (again) again.focus();
  }
}

// A small line chart on a canvas: one series, its scale from zero to its maximum.
function sparkline(values, label) {
  const canvas = el("canvas", { width: 240, height: 48, role: "img", "aria-label": label });
  const context = canvas.getContext("2d");
  const max = Math.max(...values, 0);
  context.strokeStyle = "#1f5fbf";
  context.fillStyle = "rgba(31, 95, 191, 0.12)";
  context.lineWidth = 1.5;
  if (values.length > 1) {
    const x = (i) => (i / (values.length - 1)) * 238 + 1;
    const y = (v) => 46 - (max > 0 ? (v / max) * 42 : 0);
    context.beginPath();
    context.moveTo(x(0), 47);
    values.forEach((v, i) => context.lineTo(x(i), y(v)));
    context.lineTo(x(values.length - 1), 47);
    context.closePath();
    context.fill();
    context.beginPath();
    values.forEach((v, i) => (i === 0 ? context.moveTo(x(i), y(v)) : context.lineTo(x(i), y(v))));
    context.stroke();
  }
  return canvas;
}

// ---------------------------------------------------------------- session and navigation

let refreshTimer = null;
let currentView = null;

function signOut(reason) {
  sessionStorage.removeItem(TOKEN_KEY);
  clearTimeout(refreshTimer);
  currentView = null;
  $("view").replaceChildren();
  $("nav").hidden = true;
  $("sign-out").hidden = true;
  status("");
  $("sign-in").hidden = false;
  const reasonBox = $("sign-in-reason");
  reasonBox.hidden = !reason;
  reasonBox.textContent = reason || "";
  $("token").value = "";
  $("token").focus();
}

async function signIn(candidate) {
  // The token is tried on an admin call before it is kept.
  try {
    await call("/v1/admin/shard-map", { using: candidate });
  } catch (problem) {
    signOut(`Refused: ${problem.detail} (${problem.code})`);
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, candidate);
  $("sign-in").hidden = true;
  $("sign-in-reason").hidden = true;
  $("nav").hidden = false;
  $("sign-out").hidden = false;
  if (!location.hash || location.hash === "#") location.hash = "#/fleet";
  route();
}

const views = {};

function route() {
  if (!token()) {
    signOut();
    return;
  }
  clearTimeout(refreshTimer);
  const [name, ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  const view = views[name] ? name : "fleet";
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.view === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const root = $("view");
  root.replaceChildren();
  let args;
  try {
    args = rest.map(decodeURIComponent);
  } catch {
    // A hand-typed or truncated address (`%E0%A4%A` is no UTF-8): say so instead of a blank page.
    currentView = { name: view, args: [] };
    root.append(
      el("h1", { text: "Unreadable address" }),
      problemBox({ detail: `The address ${location.hash} is not valid percent-encoded UTF-8.`, code: "malformed_address" }),
    );
    return;
  }
  const instance = { name: view, args };
  currentView = instance;
  views[view](root, instance);
}

// Runs `load` now and every `every` ms while the view is shown.
function every(instance, ms, load) {
  const tick = async () => {
    if (currentView !== instance) return;
    try {
      await load();
      status(`updated ${new Date().toLocaleTimeString("en-GB", { hour12: false })}`);
    } catch (error) {
      if (error instanceof Stop) return;
      status(`update failed: ${error.message}`);
    }
    if (currentView === instance) refreshTimer = setTimeout(tick, ms);
  };
  tick();
}

// ---------------------------------------------------------------- fleet

views.fleet = (root, instance) => {
  const body = el("div");
  root.append(el("h1", { text: "Fleet" }), body);
  every(instance, 5000, async () => {
    const [shards, load, plan] = await Promise.all([
      api("/v1/admin/shards"),
      api("/v1/admin/load?window=1h&step=1m").catch(keepGoing),
      api("/v1/admin/balancer/plan").catch(keepGoing),
    ]);
    replace(body, fleet(shards.items, load, plan));
  });
};

// A failed secondary call leaves its part of a view out rather than the whole view.
function keepGoing(error) {
  if (error instanceof Stop) throw error;
  return { failed: error };
}

function fleet(shards, load, plan) {
  const seriesOf = new Map();
  for (const shard of (load && load.shards) || []) seriesOf.set(shard.shard, shard);
  const planOf = new Map();
  for (const shard of (plan && plan.shards) || []) planOf.set(shard.shard, shard);
  const overfullAbove = plan && !plan.failed ? plan.overfull_above_ms_per_s : null;
  const total = (field) => shards.reduce((sum, shard) => sum + (shard[field] || 0), 0);
  const fleetLoad = shards.reduce((sum, s) => sum + ((planOf.get(s.id) || {}).statement_ms_per_s || 0), 0);
  const totals = el(
    "div",
    { class: "totals", "aria-label": "Fleet totals" },
    el("div", {}, el("span", { class: "muted", text: "shards" }), el("strong", { text: fmt(shards.length) })),
    el("div", {}, el("span", { class: "muted", text: "vshards" }), el("strong", { text: fmt(total("vshards")) })),
    el("div", {}, el("span", { class: "muted", text: "tenants" }), el("strong", { text: fmt(total("tenants")) })),
    el("div", {}, el("span", { class: "muted", text: "records" }), el("strong", { text: fmt(total("records")) })),
    el("div", {}, el("span", { class: "muted", text: "data" }), el("strong", { text: bytes(total("data_bytes")) })),
    el("div", {}, el("span", { class: "muted", text: "databases" }), el("strong", { text: bytes(total("bytes")) })),
    el("div", {}, el("span", { class: "muted", text: "request load (statement ms/s)" }), el("strong", { text: plan && !plan.failed ? ms(fleetLoad) : "–" })),
  );
  const cards = el("div", { class: "cards" });
  for (const shard of shards) {
    const planned = planOf.get(shard.id);
    const marks = shardMarks(shard, planned, overfullAbove);
    const worst = marks.some((m) => m.kind === "bad") ? "bad" : marks.length ? "warn" : null;
    const series = seriesOf.get(shard.id);
    const values = series && series.series ? series.series.map((p) => p.statement_ms_per_s) : [];
    const breaker = shard.breaker;
    const connections = shard.connections;
    cards.append(
      el(
        "article",
        {
          class: `card ${worst ? `marked mark-${worst}` : ""}`,
          "aria-label": `shard ${shard.id}`,
          dataset: { shard: shard.id, marks: marks.map((m) => m.text).join(" ") },
        },
        el(
          "h3",
          {},
          el("span", { class: "mono", text: shard.id }),
          badge(shard.state, shard.state === "active" ? "ok" : "warn"),
          marks.map((m) => badge(m.text, m.kind)),
        ),
        el(
          "dl",
          {},
          el("dt", { text: "engine" }),
          el("dd", { text: shard.engine }),
          el("dt", { text: "breaker" }),
          el("dd", { text: breaker ? breaker.state : "no pool here" }),
          el("dt", { text: "connections in use" }),
          el("dd", { text: connections ? `${fmt(connections.open - connections.idle)} of ${fmt(connections.max)}` : breaker ? fmt(breaker.in_progress) : "–" }),
          el("dt", { text: "vshards / tenants" }),
          el("dd", { text: `${fmt(shard.vshards)} / ${fmt(shard.tenants)}` }),
          el("dt", { text: "records" }),
          el("dd", { text: fmt(shard.records) }),
          el("dt", { text: "data / database" }),
          el("dd", { text: `${bytes(shard.data_bytes)} / ${bytes(shard.bytes)}` }),
          el("dt", { text: "load now (ms/s)" }),
          el("dd", { text: planned ? ms(planned.statement_ms_per_s) : "–" }),
        ),
        shard.problem ? el("p", { class: "problem", text: shard.problem }) : null,
        breaker && breaker.reason ? el("p", { class: "muted", text: `breaker: ${breaker.reason}` }) : null,
        el("div", { class: "muted", text: "request load, last hour" }),
        sparkline(values, `statement time per second on ${shard.id} over the last hour`),
      ),
    );
  }
  const parts = [totals, cards];
  if (plan && plan.failed) parts.push(problemBox(plan.failed));
  if (plan && !plan.failed) {
    parts.push(
      el(
        "p",
        { class: "muted" },
        `Overfull means above ${ms(overfullAbove)} ms/s of request statement time over the balancer's window (the fleet's mean ${ms(plan.mean_statement_ms_per_s)} ms/s plus its threshold). `,
        "Statement time is the time this fleet's statements spent on a shard, waiting for a connection included: the time the gateway caused, not only the database's work.",
      ),
    );
  }
  return parts;
}

function shardMarks(shard, planned, overfullAbove) {
  const marks = [];
  const breaker = shard.breaker ? shard.breaker.state : null;
  if (shard.state === "offline" || breaker === "open" || breaker === "forced_open") marks.push({ text: "down", kind: "bad" });
  else if (breaker === "half_open") marks.push({ text: "recovering", kind: "warn" });
  if (shard.problem) marks.push({ text: "quarantined", kind: "bad" });
  if (shard.state === "draining") marks.push({ text: "draining", kind: "warn" });
  if (shard.state === "read_only") marks.push({ text: "read-only", kind: "warn" });
  if (planned && overfullAbove !== null && planned.statement_ms_per_s > overfullAbove) marks.push({ text: "overfull", kind: "bad" });
  return marks;
}

// ---------------------------------------------------------------- heat map

const METRICS = [
  ["statement_ms_per_s", "statement time (ms/s)"],
  ["reads_per_s", "reads/s"],
  ["writes_per_s", "writes/s"],
  ["bytes_read_per_s", "bytes read/s"],
  ["bytes_written_per_s", "bytes written/s"],
  ["rows_read_per_s", "rows read/s"],
  ["rows_written_per_s", "rows written/s"],
  ["errors_per_s", "errors/s"],
];

const HEAT_SPANS = ["15m", "1h", "6h", "1d"];
const HEAT_WORKS = ["request", "move", "maintenance"];
const HEAT_DEFAULTS = { metric: "statement_ms_per_s", since: "1h", work: "request" };

// The heat map's state lives in the address (`#/heatmap/metric=writes_per_s&vshards=480-560&
// collapsed=s1`), so a zoomed view can be shared. Parts it does not understand are left out and
// named.
function readHeatState() {
  const params = new URLSearchParams(location.hash.replace(/^#\/?heatmap\/?/, ""));
  const state = { ...HEAT_DEFAULTS, vshards: null, collapsed: new Set(), dropped: [] };
  for (const [field, allowed] of [
    ["metric", METRICS.map(([m]) => m)],
    ["since", HEAT_SPANS],
    ["work", HEAT_WORKS],
  ]) {
    const value = params.get(field);
    if (value === null) continue;
    if (allowed.includes(value)) state[field] = value;
    else state.dropped.push(`${field}=${value}`);
  }
  const vshards = params.get("vshards");
  if (vshards !== null) {
    const range = /^(\d{1,9})(?:-(\d{1,9}))?$/.exec(vshards);
    if (range) {
      const a = Number(range[1]);
      const b = range[2] === undefined ? a : Number(range[2]);
      state.vshards = [Math.min(a, b), Math.max(a, b)];
    } else {
      state.dropped.push(`vshards=${vshards}`);
    }
  }
  for (const shard of params.getAll("collapsed")) if (shard) state.collapsed.add(shard);
  return state;
}

// Writes the state into the address without a navigation (replaceState fires no hashchange, so
// the view is not rebuilt).
function writeHeatState(choice) {
  const params = new URLSearchParams();
  for (const field of ["metric", "since", "work"]) if (choice[field] !== HEAT_DEFAULTS[field]) params.set(field, choice[field]);
  if (choice.vshards) params.set("vshards", `${choice.vshards[0]}-${choice.vshards[1]}`);
  for (const shard of [...choice.collapsed].sort()) params.append("collapsed", shard);
  const query = params.toString();
  const hash = query ? `#/heatmap/${query}` : "#/heatmap";
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

views.heatmap = (root, instance) => {
  const state = readHeatState();
  const choice = { metric: state.metric, since: state.since, work: state.work, zoom: null, vshards: state.vshards, collapsed: state.collapsed, active: null };
  const select = (id, options, value) => el("select", { id }, options.map(([v, label]) => el("option", { value: v, text: label, selected: v === value })));
  const metric = select("heat-metric", METRICS, choice.metric);
  const since = select(
    "heat-since",
    HEAT_SPANS.map((v) => [v, `last ${v}`]),
    choice.since,
  );
  const work = select(
    "heat-work",
    HEAT_WORKS.map((v) => [v, v]),
    choice.work,
  );
  const reset = el("button", { type: "button", id: "heat-reset", text: "Show the whole span", disabled: true });
  const first = el("input", { id: "heat-from", type: "number", min: 0, step: 1, inputmode: "numeric", class: "heat-number" });
  const last = el("input", { id: "heat-to", type: "number", min: 0, step: 1, inputmode: "numeric", class: "heat-number" });
  const allVshards = el("button", { type: "button", id: "heat-vshards-reset", text: "Show all vshards" });
  const note = el("p", { id: "heat-note", class: "notice", role: "status" });
  const body = el("div");
  const zoomForm = el(
    "form",
    { class: "toolbar", id: "heat-vshards", "aria-label": "Zoom to a range of vshards", novalidate: true },
    el("label", { for: "heat-from", text: "Vshards" }),
    first,
    el("label", { for: "heat-to", text: "to" }),
    last,
    el("button", { type: "submit", id: "heat-zoom", text: "Zoom" }),
    allVshards,
  );
  root.append(
    el("h1", { text: "Heat map" }),
    el("p", {
      class: "muted",
      text: "Vshards (rows, grouped by the shard that owns them, in order) by time (columns). Bright cells are hot. Collapse a shard to one summary row with its button or by clicking its name; zoom into a range of vshards with the two fields or by dragging down the names at the left; drag across the map to zoom into a stretch of time. Hover for a cell's figures; click a row to see how it is routed. With the keyboard: Tab to the map, then the arrow keys go from row to row, Enter explains a row or expands a collapsed shard, C collapses or expands the row's shard.",
    }),
    el(
      "div",
      { class: "toolbar" },
      el("label", { for: "heat-metric", text: "Measure" }),
      metric,
      el("label", { for: "heat-since", text: "Span" }),
      since,
      el("label", { for: "heat-work", text: "Work" }),
      work,
      reset,
    ),
    zoomForm,
    note,
    body,
  );
  const say = (text) => {
    note.textContent = text || "";
    note.hidden = !text;
  };
  say(state.dropped.length ? `Left out of the address, not understood: ${state.dropped.join(", ")}.` : "");
  let data = null;
  const showRange = () => {
    first.value = choice.vshards ? String(choice.vshards[0]) : "";
    last.value = choice.vshards ? String(choice.vshards[1]) : "";
    allVshards.disabled = !choice.vshards;
  };
  const change = () => {
    showRange();
    writeHeatState(choice);
    redraw();
  };
  const act = {
    zoomTime(zoom) {
      choice.zoom = zoom;
      reset.disabled = !zoom;
      redraw();
    },
    zoomVshards(range) {
      choice.vshards = range;
      choice.active = null;
      say("");
      change();
    },
    toggle(shard) {
      if (choice.collapsed.has(shard)) choice.collapsed.delete(shard);
      else choice.collapsed.add(shard);
      change();
    },
    collapseAll(shards) {
      choice.collapsed = new Set(shards);
      change();
    },
  };
  const redraw = () => {
    if (!data) return;
    const count = data.shardMap.vshard_count;
    if (choice.vshards && choice.vshards[0] >= count) {
      say(`No vshard from ${choice.vshards[0]}: this fleet's run from 0 to ${count - 1}. Showing them all.`);
      choice.vshards = null;
      showRange();
      writeHeatState(choice);
    } else if (choice.vshards && choice.vshards[1] >= count) {
      choice.vshards = [choice.vshards[0], count - 1];
      showRange();
      writeHeatState(choice);
    }
    first.max = String(count - 1);
    last.max = String(count - 1);
    replace(body, heatMap(data, choice, act));
    if (choice.refocus) {
      choice.refocus = false;
      const row = body.querySelector('.heat-line[tabindex="0"]');
      if (row) row.focus();
    }
  };
  zoomForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const count = data ? data.shardMap.vshard_count : 2 ** 31;
    const read = (input) => (/^\d{1,9}$/.test(input.value.trim()) ? Number(input.value.trim()) : null);
    const a = read(first);
    const b = last.value.trim() === "" ? a : read(last);
    if (a === null || b === null || a >= count || b >= count) {
      say(`A range of vshards is two whole numbers from 0 to ${count - 1}; "${first.value}" to "${last.value}" is not.`);
      return;
    }
    act.zoomVshards([Math.min(a, b), Math.max(a, b)]);
  });
  allVshards.addEventListener("click", () => act.zoomVshards(null));
  showRange();
  const load = async () => {
    const query = `metric=${choice.metric}&since=${choice.since}&work=${choice.work}`;
    const [map, shardMap, tenants] = await Promise.all([
      api(`/v1/admin/load/heatmap?${query}`),
      api("/v1/admin/shard-map"),
      api(`/v1/admin/load?window=${choice.since}&top=100`).catch(keepGoing),
    ]);
    data = { map, shardMap, tenants: tenants.failed ? [] : tenants.tenants };
    redraw();
  };
  for (const [control, field] of [
    [metric, "metric"],
    [since, "since"],
    [work, "work"],
  ]) {
    control.addEventListener("change", () => {
      choice[field] = control.value;
      choice.zoom = null;
      reset.disabled = true;
      writeHeatState(choice);
      load().catch(showIn(body));
    });
  }
  reset.addEventListener("click", () => act.zoomTime(null));
  every(instance, 15000, load);
};

function showIn(container) {
  return (error) => {
    if (!(error instanceof Stop)) replace(container, problemBox(error));
  };
}

// The colour of a cell: dark blue (nothing) through purple and orange to pale yellow (the
// hottest), on a square-root scale so that lighter load stays visible beside a hot spot.
function heat(t) {
  const stops = [
    [13, 23, 53],
    [84, 39, 143],
    [201, 65, 84],
    [247, 148, 29],
    [252, 238, 164],
  ];
  const x = Math.max(0, Math.min(1, t)) * (stops.length - 1);
  const i = Math.min(Math.floor(x), stops.length - 2);
  const f = x - i;
  const c = stops[i].map((a, k) => Math.round(a + (stops[i + 1][k] - a) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

// The heat map's layout: at most about 440 pixel rows. Rows are grouped by shard; a collapsed
// shard is one summary row; when more rows are shown than fit, several vshards of one shard
// share a pixel row (a band, coloured by the hottest of them, as a Key Visualizer merges
// ranges). Zoomed to a range of vshards, each gets a few pixels or more.
const HEAT_BUDGET = 440;
const HEAT_SUMMARY = 14;
const HEAT_GAP = 4;
const HEAT_MAX_ROW = 32;

function heatLayout(groups, collapsed) {
  const summaries = groups.filter((g) => collapsed.has(g.shard)).length;
  const expanded = groups.reduce((n, g) => n + (collapsed.has(g.shard) ? 0 : g.rows.length), 0);
  const available = Math.max(60, HEAT_BUDGET - summaries * HEAT_SUMMARY - Math.max(0, groups.length - 1) * HEAT_GAP);
  const perBand = Math.max(1, Math.ceil(expanded / available));
  const rowHeight = perBand > 1 ? 1 : Math.max(1, Math.min(HEAT_MAX_ROW, Math.floor(available / Math.max(expanded, 1))));
  const lines = [];
  let y = 0;
  groups.forEach((group, g) => {
    if (g > 0) y += HEAT_GAP;
    group.top = y;
    group.collapsed = collapsed.has(group.shard);
    group.lines = [];
    if (group.collapsed) {
      group.lines.push({ top: y, height: HEAT_SUMMARY, shard: group.shard, rows: group.rows, summary: true });
      y += HEAT_SUMMARY;
    } else {
      for (const row of group.rows) {
        const previous = group.lines[group.lines.length - 1];
        if (previous && previous.rows.length < perBand && row.vshard !== null && previous.rows[0].vshard !== null) {
          previous.rows.push(row);
          continue;
        }
        group.lines.push({ top: y, height: rowHeight, shard: group.shard, rows: [row], summary: false });
        y += rowHeight;
      }
    }
    group.bottom = y;
    lines.push(...group.lines);
  });
  lines.forEach((line, i) => {
    line.index = i;
    const head = line.rows[0];
    line.key = line.summary ? `s:${line.shard}` : head.vshard === null ? `u:${line.shard}` : `v:${head.vshard}`;
  });
  return { lines, height: Math.max(y, 1), rowHeight, perBand };
}

function heatMap({ map, shardMap, tenants }, choice, act) {
  const order = new Map(shardMap.shards.map((s, i) => [s.id, i]));
  const everyRow = map.rows
    .map((row, index) => ({ ...row, index }))
    .sort((a, b) => {
      const byShard = (order.get(a.shard) ?? 1e9) - (order.get(b.shard) ?? 1e9);
      if (byShard) return byShard;
      if (a.shard !== b.shard) return a.shard < b.shard ? -1 : 1;
      return (a.vshard ?? 1e9) - (b.vshard ?? 1e9);
    });
  const range = choice.vshards;
  const rows = range ? everyRow.filter((r) => r.vshard !== null && r.vshard >= range[0] && r.vshard <= range[1]) : everyRow;
  const [from, to] = choice.zoom || [0, map.columns.length - 1];
  const columns = map.columns.slice(from, to + 1);
  // Each row's figures over the columns shown: its sum, mean and peak.
  for (const row of rows) {
    let sum = 0;
    let peak = 0;
    for (let c = from; c <= to; c += 1) {
      sum += row.values[c];
      peak = Math.max(peak, row.values[c]);
    }
    row.sum = sum;
    row.mean = columns.length ? sum / columns.length : 0;
    row.peak = peak;
  }
  const max = rows.reduce((m, row) => Math.max(m, row.peak), 0);
  const groups = [];
  for (const row of rows) {
    const group = groups[groups.length - 1];
    if (group && group.shard === row.shard) group.rows.push(row);
    else groups.push({ shard: row.shard, rows: [row] });
  }
  const { lines, height, rowHeight, perBand } = heatLayout(groups, choice.collapsed);
  const gutter = 132;
  const available = Math.max(360, ($("view").clientWidth || 1240) - gutter - 420);
  const columnWidth = Math.max(2, Math.floor(available / Math.max(columns.length, 1)));
  const width = gutter + columns.length * columnWidth;
  const unit = METRICS.find(([m]) => m === map.metric)[1];
  const hottestOf = (line, c) =>
    line.rows.reduce((a, b) => {
      const x = c === undefined ? a.sum : a.values[from + c];
      const y = c === undefined ? b.sum : b.values[from + c];
      return y > x ? b : a;
    });
  const figures = (row) => `mean ${fmt(row.mean, 2)}, peak ${fmt(row.peak, 2)} ${unit}`;
  const vshardsOf = (line) => `vshards ${line.rows[0].vshard}–${line.rows[line.rows.length - 1].vshard}`;
  // A row's name and load over the span shown: its title, its label for screen readers, and
  // the tooltip of a focused row.
  const describe = (line) => {
    const hottest = hottestOf(line);
    if (line.summary) {
      const total = line.rows.reduce((s, r) => s + r.mean, 0);
      const placed = line.rows.filter((r) => r.vshard !== null).length;
      return [
        `${line.shard}: ${placed} ${placed === 1 ? "vshard" : "vshards"}${placed < line.rows.length ? " and load no vshard placed" : ""}, collapsed`,
        `hottest ${hottest.vshard === null ? "load no vshard placed" : `vshard ${hottest.vshard}`}: ${figures(hottest)}`,
        `the shard's total: mean ${fmt(total, 2)} ${unit}`,
      ];
    }
    if (hottest.vshard === null) return [`${line.shard}: load no vshard placed`, figures(hottest)];
    if (line.rows.length > 1) return [`${vshardsOf(line)} on ${line.shard}`, `hottest vshard ${hottest.vshard}: ${figures(hottest)}`];
    return [`vshard ${hottest.vshard} on ${line.shard}`, figures(hottest)];
  };

  const visible = lines.flatMap((line) => (line.summary ? [{ name: `${line.shard}:summary`, shard: line.shard, top: line.top }] : line.rows.map((r) => ({ name: r.vshard === null ? `${r.shard}:unplaced` : `v${r.vshard}`, shard: r.shard, top: line.top }))));
  const canvas = el("canvas", {
    id: "heat-canvas",
    width,
    height,
    role: "img",
    "aria-label": `Heat map of ${rows.length} rows by ${columns.length} time columns; the rows are listed for the keyboard after it and the hottest beside it.`,
    dataset: {
      rows: visible.map((v) => v.name).join(","),
      shards: visible.map((v) => v.shard).join(","),
      tops: visible.map((v) => v.top).join(","),
      gutter,
      columnWidth,
      rowHeight,
      perBand,
      vshards: range ? `${range[0]}-${range[1]}` : "",
      collapsed: [...choice.collapsed].filter((s) => groups.some((g) => g.shard === s)).join(","),
    },
  });
  const context = canvas.getContext("2d");
  context.fillStyle = "#ffffff";
  context.fillRect(0, 0, width, height);
  for (const line of lines) {
    for (let c = 0; c < columns.length; c += 1) {
      let value = 0;
      for (const row of line.rows) value = Math.max(value, row.values[from + c]);
      context.fillStyle = heat(max > 0 ? Math.sqrt(value / max) : 0);
      context.fillRect(gutter + c * columnWidth, line.top, columnWidth, line.height);
    }
  }
  // The gutter: each shard's name (a triangle saying whether it is collapsed) with a bar along
  // its group, and the vshard numbers when the rows are tall enough to tell apart.
  const shorten = (text, room) => {
    if (context.measureText(text).width <= room) return text;
    let cut = text;
    while (cut.length > 1 && context.measureText(`${cut}…`).width > room) cut = cut.slice(0, -1);
    return `${cut}…`;
  };
  for (const group of groups) {
    context.font = "12px system-ui, sans-serif";
    context.fillStyle = "#1c2230";
    const middle = (group.top + group.bottom) / 2 + 4;
    context.fillText(shorten(`${group.collapsed ? "▸" : "▾"} ${group.shard}`, 84), 4, Math.max(12, Math.min(height - 2, middle)));
    context.fillStyle = "#8a94a6";
    context.fillRect(gutter - 6, group.top, 3, group.bottom - group.top);
    if (group.collapsed || perBand > 1 || rowHeight < 4) continue;
    context.font = "11px system-ui, sans-serif";
    context.fillStyle = "#5d6678";
    context.textAlign = "right";
    const every = Math.ceil(13 / rowHeight);
    group.lines.forEach((line, i) => {
      if (i % every !== 0 || line.rows[0].vshard === null) return;
      context.fillText(String(line.rows[0].vshard), gutter - 10, line.top + line.height / 2 + 4);
    });
    context.textAlign = "left";
  }

  // The rows for the keyboard and screen readers: one focusable element over each row of the
  // canvas (a single tab stop; the arrow keys move between them), named by its vshard and load.
  const rowsList = el("div", { class: "heat-lines", id: "heat-rows", role: "listbox", "aria-label": "Rows of the heat map" });
  const active = lines.find((line) => line.key === choice.active) || lines[0];
  const items = lines.map((line) => {
    const text = describe(line).join("; ");
    const item = el("div", {
      class: `heat-line${line.summary ? " summary" : ""}`,
      role: "option",
      tabindex: line === active ? 0 : -1,
      "aria-selected": line === active ? "true" : "false",
      title: text,
      "aria-label": text,
      dataset: { key: `heat-${line.key}`, index: line.index, shard: line.shard, vshards: line.summary ? "" : line.rows.map((r) => r.vshard ?? "").join(" ") },
    });
    item.style.top = `${line.top}px`;
    item.style.height = `${line.height}px`;
    return item;
  });
  rowsList.append(...items);
  const selection = el("div", { class: "heat-select", hidden: true });
  const tooltip = $("tooltip");
  const heaviest = heaviestByVshard(tenants);
  const explanation = el("div", { id: "heat-route", class: "side", "aria-live": "polite" }, el("p", { class: "muted", text: "Click a row to see how it is routed." }));
  // Enter on a row explains it, on a collapsed shard expands it; C collapses or expands the
  // row's shard. The focus stays on the row that stands for it after the redraw.
  const firstKey = (line) => (line.rows[0].vshard === null ? `u:${line.shard}` : `v:${line.rows[0].vshard}`);
  const toggleFrom = (line) => {
    choice.active = line.summary ? firstKey(line) : `s:${line.shard}`;
    choice.refocus = true;
    act.toggle(line.shard);
  };
  const activate = (line, c) => {
    if (line.summary && c === undefined) toggleFrom(line);
    else explainRow(hottestOf(line, c), shardMap, heaviest, explanation);
  };
  const showTip = (parts, x, y) => {
    tooltip.replaceChildren(el("strong", { text: parts[0] }), ...parts.slice(1).map((text) => el("div", { text })));
    tooltip.hidden = false;
    tooltip.style.left = `${Math.min(x + 14, window.innerWidth - 330)}px`;
    tooltip.style.top = `${y + 14}px`;
  };
  rowsList.addEventListener("keydown", (event) => {
    const item = event.target.closest(".heat-line");
    if (!item) return;
    const i = Number(item.dataset.index);
    const moves = { ArrowDown: i + 1, ArrowUp: i - 1, PageDown: i + 10, PageUp: i - 10, Home: 0, End: items.length - 1 };
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      activate(lines[i]);
      return;
    }
    if (event.key === "c" || event.key === "C") {
      event.preventDefault();
      toggleFrom(lines[i]);
      return;
    }
    if (!(event.key in moves)) return;
    event.preventDefault();
    const next = Math.max(0, Math.min(items.length - 1, moves[event.key]));
    item.tabIndex = -1;
    item.setAttribute("aria-selected", "false");
    items[next].tabIndex = 0;
    items[next].setAttribute("aria-selected", "true");
    items[next].focus();
  });
  rowsList.addEventListener("focusin", (event) => {
    const item = event.target.closest(".heat-line");
    if (!item) return;
    const line = lines[Number(item.dataset.index)];
    choice.active = line.key;
    const box = item.getBoundingClientRect();
    showTip(describe(line), box.left + gutter, box.top + line.height);
  });
  rowsList.addEventListener("focusout", () => {
    tooltip.hidden = true;
  });

  // The mouse: hover for a cell; in the gutter, click a shard to collapse or expand it and drag
  // down the rows to zoom into their vshards; across the cells, drag to zoom into a stretch of
  // time, click to explain a row.
  const lineAt = (offsetY) => lines.find((line) => offsetY >= line.top && offsetY < line.top + line.height) || null;
  const nearestLine = (offsetY) => lineAt(offsetY) || lines.reduce((a, b) => (Math.abs(b.top - offsetY) < Math.abs(a.top - offsetY) ? b : a), lines[0]);
  const columnAt = (offsetX) => Math.floor((offsetX - gutter) / columnWidth);
  let drag = null;
  const select = (event) => {
    selection.hidden = false;
    if (drag.gutter) {
      selection.style.left = "0px";
      selection.style.width = `${width}px`;
      selection.style.top = `${Math.min(drag.y, event.offsetY)}px`;
      selection.style.height = `${Math.abs(event.offsetY - drag.y)}px`;
    } else {
      selection.style.top = "0px";
      selection.style.height = `${height}px`;
      selection.style.left = `${Math.min(drag.x, event.offsetX)}px`;
      selection.style.width = `${Math.abs(event.offsetX - drag.x)}px`;
    }
  };
  canvas.addEventListener("mousemove", (event) => {
    if (drag && event.buttons & 1) select(event);
    const line = lineAt(event.offsetY);
    const c = columnAt(event.offsetX);
    if (!line || c >= columns.length) {
      tooltip.hidden = true;
      return;
    }
    if (c < 0) {
      showTip([...describe(line), line.summary ? "click to expand the shard" : `click to collapse ${line.shard}; drag down to zoom into vshards`], event.clientX, event.clientY);
      return;
    }
    const row = hottestOf(line, c);
    const names = line.rows.flatMap((r) => (r.vshard === null ? [] : heaviest.get(r.vshard) || []));
    const label =
      row.vshard === null
        ? `${row.shard}: load no vshard placed`
        : line.summary
          ? `${line.shard}, collapsed (hottest vshard ${row.vshard})`
          : line.rows.length > 1
            ? `${vshardsOf(line)} (hottest ${row.vshard})`
            : `vshard ${row.vshard}`;
    showTip(
      [
        label,
        `on ${row.shard} · ${clock(columns[c])}`,
        `${fmt(row.values[from + c], 2)} ${unit}`,
        names.length
          ? `heaviest tenants: ${names
              .slice(0, 3)
              .map((t) => `${t.tenant} (${fmt(t.statement_ms_per_s, 2)} ms/s)`)
              .join(", ")}`
          : "no heavy tenant here",
      ],
      event.clientX,
      event.clientY,
    );
  });
  canvas.addEventListener("mouseleave", () => {
    tooltip.hidden = true;
    selection.hidden = true;
    drag = null;
  });
  canvas.addEventListener("mousedown", (event) => {
    event.preventDefault();
    drag = { x: event.offsetX, y: event.offsetY, gutter: event.offsetX < gutter, column: columnAt(event.offsetX), line: lineAt(event.offsetY) };
  });
  canvas.addEventListener("mouseup", (event) => {
    const started = drag;
    drag = null;
    selection.hidden = true;
    if (!started) return;
    if (started.gutter) {
      const a = started.line || nearestLine(started.y);
      const b = nearestLine(event.offsetY);
      if (a && b && a !== b) {
        const vshards = lines
          .slice(Math.min(a.index, b.index), Math.max(a.index, b.index) + 1)
          .flatMap((line) => line.rows.map((r) => r.vshard))
          .filter((v) => v !== null);
        if (vshards.length) act.zoomVshards([Math.min(...vshards), Math.max(...vshards)]);
      } else if (a) {
        choice.active = `s:${a.shard}`;
        act.toggle(a.shard);
      }
      return;
    }
    const c = columnAt(event.offsetX);
    if (c >= 0 && Math.abs(c - started.column) >= 1) {
      const left = Math.max(0, Math.min(started.column, c));
      const right = Math.min(columns.length - 1, Math.max(started.column, c));
      act.zoomTime([from + left, from + right]);
      return;
    }
    const line = lineAt(event.offsetY);
    if (line) activate(line, Math.max(0, Math.min(columns.length - 1, c)));
  });

  // The shards' collapse buttons.
  const toggles = el(
    "div",
    { class: "toolbar heat-shards", role: "group", "aria-label": "Shards of the heat map" },
    el("span", { class: "muted", text: "Shards" }),
    groups.map((group) =>
      el("button", {
        type: "button",
        class: "heat-toggle",
        "aria-expanded": group.collapsed ? "false" : "true",
        "aria-controls": "heat-rows",
        "data-key": `toggle-${group.shard}`,
        dataset: { shard: group.shard },
        text: `${group.collapsed ? "▸" : "▾"} ${group.shard} (${group.rows.filter((r) => r.vshard !== null).length})`,
        title: group.collapsed ? `Expand ${group.shard}'s rows` : `Collapse ${group.shard} to one row`,
        onclick: () => act.toggle(group.shard),
      }),
    ),
    el("button", { type: "button", id: "heat-collapse-all", "data-key": "heat-collapse-all", text: "Collapse all", onclick: () => act.collapseAll(groups.map((g) => g.shard)) }),
    el("button", { type: "button", id: "heat-expand-all", "data-key": "heat-expand-all", text: "Expand all", onclick: () => act.collapseAll([]) }),
  );

  // The hottest rows as a table, each explainable, and each a zoom to the vshards around it.
  const count = shardMap.vshard_count;
  const sums = rows
    .filter((row) => row.sum > 0)
    .sort((a, b) => b.sum - a.sum)
    .slice(0, 12);
  const hottest = table(
    "heat-hottest",
    ["vshard", "shard", `mean ${unit}#`, ""],
    sums.length
      ? sums.map((row) =>
          el(
            "tr",
            { dataset: { vshard: row.vshard === null ? "" : row.vshard, shard: row.shard } },
            el("td", { text: row.vshard === null ? "(unplaced)" : row.vshard }),
            el("td", { text: row.shard }),
            el("td", { class: "num", text: fmt(row.mean, 2) }),
            el(
              "td",
              { class: "actions" },
              el("button", { type: "button", text: "Route", "data-key": `route-${row.index}`, onclick: () => explainRow(row, shardMap, heaviest, explanation) }),
              row.vshard === null
                ? null
                : el("button", {
                    type: "button",
                    text: "Zoom",
                    title: `Show vshards ${Math.max(0, row.vshard - 16)}–${Math.min(count - 1, row.vshard + 16)}`,
                    "data-key": `zoom-${row.index}`,
                    onclick: () => act.zoomVshards([Math.max(0, row.vshard - 16), Math.min(count - 1, row.vshard + 16)]),
                  }),
            ),
          ),
        )
      : el("tr", {}, el("td", { colspan: 4, class: "muted", text: "No load in this span." })),
    "Hottest rows in this span",
  );
  const legend = el("canvas", { width: 220, height: 12, "aria-hidden": "true" });
  const lc = legend.getContext("2d");
  for (let x = 0; x < 220; x += 1) {
    lc.fillStyle = heat(x / 219);
    lc.fillRect(x, 0, 1, 12);
  }
  const scale = perBand > 1 ? `${perBand} vshards a pixel row: zoom into a range to see each` : `${rowHeight} px a row`;
  return [
    toggles,
    el(
      "div",
      { class: "legend" },
      el("span", { text: "0" }),
      legend,
      el("span", { text: `${fmt(max, 2)} ${unit}` }),
      el("span", {
        class: "muted",
        id: "heat-scope",
        text: `· ${clock(columns[0])} to ${clock(columns[columns.length - 1])}, ${fmt(map.step_s)} s a column${choice.zoom ? " (zoomed)" : ""} · ${range ? `vshards ${range[0]}–${range[1]} (zoomed)` : `all ${fmt(count)} vshards`}, ${scale}`,
      }),
    ),
    el("div", { class: "heat" }, el("div", { class: "heat-frame" }, el("div", { class: "heat-stage" }, canvas, rowsList, selection)), el("div", { class: "side" }, explanation, hottest)),
  ];
}

function heaviestByVshard(tenants) {
  const byVshard = new Map();
  for (const tenant of tenants || []) {
    if (tenant.vshard === null || tenant.vshard === undefined) continue;
    if (!byVshard.has(tenant.vshard)) byVshard.set(tenant.vshard, []);
    byVshard.get(tenant.vshard).push(tenant);
  }
  return byVshard;
}

async function explainRow(row, shardMap, heaviest, into) {
  if (row.vshard === null) {
    replace(
      into,
      el("h2", { text: `${row.shard}: load no vshard placed` }),
      el("p", {
        text: "Pinned tenants' data and range-distributed collections live on a shard by the catalog's lookup, not by a vshard. The tenants page shows where each tenant is pinned.",
      }),
    );
    return;
  }
  const parts = [
    el("h2", { text: `vshard ${row.vshard}` }),
    el("p", {
      text: `Owned by ${row.shard} in map epoch ${shardMap.epoch}. A tenant that is not pinned lives on vshard h(tenant) mod ${shardMap.vshard_count}; a record of a hash-distributed collection on h(tenant, collection, key) mod ${shardMap.vshard_count}. Its vshard's owner in the shard map is where it is read and written.`,
    }),
  ];
  const names = heaviest.get(row.vshard) || [];
  if (names.length) {
    const first = names[0].tenant;
    try {
      const explained = await api(`/v1/admin/route?tenant=${encodeURIComponent(first)}`);
      parts.push(
        el(
          "p",
          {},
          "Its heaviest tenant, ",
          el("a", { href: `#/tenants/${encodeURIComponent(first)}`, text: first }),
          `, routes by ${explained.strategy} to vshard ${explained.vshard ?? "–"} on ${explained.shard} (${explained.shard_state}, epoch ${explained.epoch}).`,
        ),
      );
    } catch (error) {
      if (error instanceof Stop) return;
      parts.push(problemBox(error));
    }
  }
  replace(into, parts);
}

// ---------------------------------------------------------------- tenants

views.tenants = (root, instance) => {
  if (instance.args[0]) {
    tenantPage(root, instance, instance.args[0]);
    return;
  }
  const filter = el("input", { id: "tenant-filter", type: "search", placeholder: "tenant id", "aria-label": "Filter tenants by id" });
  const sort = el(
    "select",
    { id: "tenant-sort", "aria-label": "Sort tenants by" },
    TENANT_SORTS.map(([value, label]) => el("option", { value, text: label })),
  );
  const heavy = el("div");
  const all = el("div");
  root.append(
    el("h1", { text: "Tenants" }),
    el("h2", { text: "Heaviest, last 10 minutes" }),
    heavy,
    el("h2", { text: "All tenants" }),
    el("div", { class: "toolbar" }, filter, el("label", { for: "tenant-sort", text: "sort by" }), sort),
    all,
  );
  let list = [];
  const drawAll = () => {
    const needle = filter.value.trim();
    const shown = sortTenants(
      list.filter((t) => !needle || t.id.includes(needle)),
      sort.value,
    ).slice(0, 200);
    replace(all, tenantTable(shown));
  };
  filter.addEventListener("input", drawAll);
  sort.addEventListener("change", drawAll);
  every(instance, 10000, async () => {
    const [load, tenants] = await Promise.all([api("/v1/admin/load?window=10m&top=20").catch(keepGoing), api("/v1/admin/tenants?limit=1000&include=usage")]);
    list = tenants.items;
    const byId = new Map(list.map((t) => [t.id, t]));
    if (load.failed) replace(heavy, problemBox(load.failed));
    else if (!load.tenants.length) replace(heavy, el("p", { class: "muted", text: "No tenant load in the last 10 minutes." }));
    else
      replace(
        heavy,
        table(
          "heaviest-tenants",
          ["tenant", "tier", "home shard", "statement ms/s#", "reads/s#", "writes/s#", "shards it landed on"],
          load.tenants.map((t) => {
            const known = byId.get(t.tenant);
            return el(
              "tr",
              {},
              el("td", {}, el("a", { href: `#/tenants/${encodeURIComponent(t.tenant)}`, text: t.tenant })),
              el("td", { text: known ? known.tier : "–" }),
              el("td", { text: known ? `${known.shard ?? "–"}${known.pinned ? " (pinned)" : ""}` : "–" }),
              el("td", { class: "num", text: ms(t.statement_ms_per_s) }),
              el("td", { class: "num", text: fmt(t.reads_per_s, 1) }),
              el("td", { class: "num", text: fmt(t.writes_per_s, 1) }),
              el("td", { text: t.shards.join(", ") }),
            );
          }),
        ),
      );
    drawAll();
  });
};

// How the list of all tenants can be sorted: by id, or by a part of what they store (largest
// first).
const TENANT_SORTS = [
  ["id", "id"],
  ["records", "records"],
  ["stored_bytes", "stored bytes"],
  ["blobs", "blobs"],
  ["index_entries", "index entries"],
];

// What a tenant stores of `part` (`stored_bytes`: record and blob bytes together).
function storedOf(tenant, part) {
  const usage = tenant.usage || {};
  if (part === "stored_bytes") return (usage.record_bytes || 0) + (usage.blob_bytes || 0);
  return usage[part] || 0;
}

function sortTenants(tenants, part) {
  if (part === "id") return tenants;
  return [...tenants].sort((a, b) => storedOf(b, part) - storedOf(a, part) || (a.id < b.id ? -1 : 1));
}

function tenantTable(tenants) {
  if (!tenants.length) return el("p", { class: "muted", text: "No tenant." });
  const partial = tenants.some((t) => t.usage_complete === false);
  return table(
    "all-tenants",
    ["tenant", "name", "tier", "home shard", "records#", "stored bytes#", "blobs#", "index entries#", "created"],
    tenants.map((t) =>
      el(
        "tr",
        { dataset: { tenant: t.id } },
        el("td", {}, el("a", { href: `#/tenants/${encodeURIComponent(t.id)}`, text: t.id })),
        el("td", { text: t.name }),
        el("td", { text: t.tier }),
        el("td", { text: `${t.shard ?? "–"}${t.pinned ? " (pinned)" : ""}` }),
        el("td", { class: "num", text: t.usage ? fmt(t.usage.records) : "–" }),
        el("td", { class: "num", text: t.usage ? bytes(storedOf(t, "stored_bytes")) : "–" }),
        el("td", { class: "num", text: t.usage ? fmt(t.usage.blobs) : "–" }),
        el("td", { class: "num", text: t.usage ? fmt(t.usage.index_entries) : "–" }),
        el("td", { text: when(t.created_at) }),
      ),
    ),
    partial ? "Some shards did not answer: what they hold is missing from the usage." : null,
  );
}

function tenantPage(root, instance, id) {
  const body = el("div");
  const actions = el("div");
  root.append(el("p", {}, el("a", { href: "#/tenants", text: "← Tenants" })), el("h1", { text: `Tenant ${id}` }), body, el("h2", { text: "Move" }), actions);
  let drawnActions = false;
  every(instance, 10000, async () => {
    const path = `/v1/admin/tenants/${encodeURIComponent(id)}`;
    const [tenant, holdings, collections, shards, usage] = await Promise.all([
      api(path),
      api(`${path}/holdings`).catch(keepGoing),
      api(`${path}/collections`).catch(keepGoing),
      api("/v1/admin/shards"),
      api(`${path}/usage`).catch(keepGoing),
    ]);
    replace(body, [...tenantDetails(tenant, holdings, collections), ...quotaBars(usage)]);
    if (!drawnActions) {
      drawnActions = true;
      replace(actions, moveForm(tenant, shards.items));
    }
  });
}

function tenantDetails(tenant, holdings, collections) {
  const limit = tenant.effective_rate_limit || {};
  const parts = [
    el(
      "div",
      { class: "totals" },
      el("div", {}, el("span", { class: "muted", text: "tier" }), el("strong", { text: tenant.tier })),
      el("div", {}, el("span", { class: "muted", text: "home shard" }), el("strong", { id: "tenant-shard", text: tenant.shard ?? "–" })),
      el("div", {}, el("span", { class: "muted", text: "placement" }), el("strong", { text: tenant.pinned ? "pinned" : "by its vshard" })),
      el(
        "div",
        {},
        el("span", { class: "muted", text: "rate limit" }),
        el("strong", { text: limit.per_second ? `${fmt(limit.per_second)}/s, burst ${fmt(limit.burst)}${tenant.rate_limit ? " (its own)" : " (its tier's)"}` : "–" }),
      ),
    ),
  ];
  if (holdings.failed) parts.push(problemBox(holdings.failed));
  else
    parts.push(
      el(
        "div",
        { class: "totals" },
        el("div", {}, el("span", { class: "muted", text: "records" }), el("strong", { text: fmt(holdings.records) })),
        el("div", {}, el("span", { class: "muted", text: "blobs" }), el("strong", { text: fmt(holdings.blobs) })),
        el("div", {}, el("span", { class: "muted", text: "blob bytes" }), el("strong", { text: bytes(holdings.blob_bytes) })),
        el("div", {}, el("span", { class: "muted", text: "index entries" }), el("strong", { text: fmt(holdings.index_entries) })),
        holdings.complete ? null : el("div", {}, el("span", { class: "muted", text: "incomplete" }), el("strong", { text: holdings.unreachable_shards.join(", ") })),
      ),
    );
  parts.push(el("h2", { text: "Collections" }));
  if (collections.failed) parts.push(problemBox(collections.failed));
  else {
    const items = collections.collections || [];
    parts.push(
      items.length
        ? table(
            "tenant-collections",
            ["collection", "distribution", "ranges", "records#"],
            items.map((c) =>
              el(
                "tr",
                {},
                el("td", { text: c.name }),
                el("td", { text: c.distribution }),
                el("td", { text: c.ranges ? c.ranges.map((r) => `from ${r.from === null || r.from === undefined ? "the start" : JSON.stringify(r.from)} on ${r.shard}`).join("; ") : "–" }),
                el("td", { class: "num", text: fmt(c.records) }),
              ),
            ),
          )
        : el("p", { class: "muted", text: "No collection yet." }),
    );
  }
  return parts;
}

// The tenant's quotas, each beside what it uses of it: a bar of the part used when it is limited.
const QUOTA_PARTS = [
  ["records", "records", fmt],
  ["record_bytes", "record bytes", bytes],
  ["blobs", "blobs", fmt],
  ["blob_bytes", "blob bytes", bytes],
  ["index_entries", "index entries", fmt],
  ["collections", "collections", fmt],
  ["valet_bytes_per_day", "valet bytes today", bytes],
];

function quotaBars(usage) {
  const parts = [el("h2", { text: "Quotas" })];
  if (usage.failed) return [...parts, problemBox(usage.failed)];
  parts.push(
    table(
      "tenant-quotas",
      ["quota", "used#", "limit#", "of the limit"],
      QUOTA_PARTS.map(([part, label, show]) => {
        const { limit, used } = usage.quotas[part];
        const limited = limit !== null && limit !== undefined;
        const fraction = !limited ? 0 : limit === 0 ? (used > 0 ? 1 : 0) : used / limit;
        return el(
          "tr",
          { dataset: { quota: part, used, limit: limited ? limit : "none" } },
          el("td", { text: label }),
          el("td", { class: "num", text: show(used) }),
          el("td", { class: "num", text: limited ? show(limit) : "unlimited" }),
          el(
            "td",
            { class: fraction >= 1 ? "over" : null },
            limited ? el("div", { class: "quota-use" }, progressBar(fraction), el("span", { text: `${fmt(fraction * 100, 1)} %` })) : "–",
          ),
        );
      }),
      usage.complete ? null : `Shards that did not answer: ${usage.unreachable_shards.join(", ")}; what they hold is missing.`,
    ),
  );
  return parts;
}

function moveForm(tenant, shards) {
  const targets = shards.filter((s) => s.state === "active" && s.id !== tenant.shard);
  if (!targets.length) return el("p", { class: "muted", text: "No other active shard to move it to." });
  const select = el(
    "select",
    { id: "move-to", "aria-label": "Shard to move the tenant to" },
    targets.map((s) => el("option", { value: s.id, text: `${s.id} (${fmt(s.records)} records, ${bytes(s.bytes)})` })),
  );
  const outcome = el("div", { "aria-live": "polite" });
  const button = el("button", {
    type: "button",
    id: "move-tenant",
    class: "primary",
    text: "Move tenant…",
    onclick: async () => {
      const to = select.value;
      const sure = await confirmAction(
        `Move ${tenant.id} to ${to}?`,
        `Its records, blobs and index entries are copied to ${to} while it keeps serving, then its writes pause for a moment while it switches. The move is an ordinary job: it is audited and can be cancelled until it switches.`,
        "Move",
      );
      if (!sure) return;
      button.disabled = true;
      try {
        const job = await api(`/v1/admin/tenants/${encodeURIComponent(tenant.id)}/move`, { method: "POST", body: { to } });
        replace(outcome, el("p", { class: "notice" }, `Started job ${job.id}. `, el("a", { href: "#/jobs", text: "Follow it on the jobs page" }), "."));
      } catch (error) {
        if (!(error instanceof Stop)) replace(outcome, problemBox(error));
      } finally {
        button.disabled = false;
      }
    },
  });
  return [el("div", { class: "toolbar" }, el("label", { for: "move-to", text: "Move to" }), select, button), outcome];
}

// ---------------------------------------------------------------- jobs

views.jobs = (root, instance) => {
  const state = el(
    "select",
    { id: "job-state", "aria-label": "Job state" },
    ["", "running", "done", "failed", "cancelled"].map((v) => el("option", { value: v, text: v || "every state" })),
  );
  const body = el("div");
  const outcome = el("div", { "aria-live": "polite" });
  root.append(el("h1", { text: "Jobs" }), el("div", { class: "toolbar" }, el("label", { for: "job-state", text: "Show" }), state), outcome, body);
  const seen = new Map();
  const load = async () => {
    const query = state.value ? `&state=${state.value}` : "";
    const page = await api(`/v1/admin/jobs?limit=50${query}`);
    replace(body, jobTable(page.items, seen, outcome, load));
  };
  state.addEventListener("change", () => load().catch(showIn(body)));
  every(instance, 1500, load);
};

// What a job has done of what it has to do: the fraction (null when unknown), what it is in
// words, and the bytes still to copy (for the time left).
function jobShare(job) {
  const p = job.progress || {};
  const copied = p.rows_copied !== undefined ? `${fmt(p.rows_copied)} rows, ${bytes(p.bytes_copied)} copied` : "";
  if (job.kind === "vshards.rebalance") {
    const total = (p.pending || 0) + (p.running || 0) + (p.done || 0) + (p.failed || 0);
    return { fraction: total ? (p.done || 0) / total : null, text: `${fmt(p.done || 0)} of ${fmt(total)} steps${p.failed ? `, ${fmt(p.failed)} failed` : ""}` };
  }
  if (job.kind === "index.backfill") return { fraction: job.state === "done" ? 1 : null, text: `${fmt(p.indexed || 0)} entries` };
  if (job.state !== "running" || (p.phase && p.phase !== "copy")) {
    return { fraction: job.state === "done" ? 1 : null, text: [p.phase ? `phase ${p.phase}` : "", copied].filter(Boolean).join(" · ") };
  }
  if (p.bytes_to_copy)
    return { fraction: (p.bytes_copied || 0) / p.bytes_to_copy, text: `${bytes(p.bytes_copied || 0)} of ${bytes(p.bytes_to_copy)}`, left: p.bytes_to_copy - (p.bytes_copied || 0) };
  if (p.rows_to_copy) return { fraction: (p.rows_copied || 0) / p.rows_to_copy, text: `${fmt(p.rows_copied || 0)} of ${fmt(p.rows_to_copy)} rows` };
  return { fraction: null, text: copied };
}

function jobTable(jobs, seen, outcome, reload) {
  if (!jobs.length) return el("p", { class: "muted", text: "No job." });
  const now = Date.now();
  return table(
    "jobs",
    ["job", "kind", "target", "state", "progress", "rate", "started", ""],
    jobs.map((job) => {
      const p = job.progress || {};
      const share = jobShare(job);
      const done = p.bytes_copied || 0;
      const before = seen.get(job.id);
      seen.set(job.id, { at: now, bytes: done });
      const measured = before && now > before.at ? ((done - before.bytes) * 1000) / (now - before.at) : null;
      const rate = measured || (p.pace ? p.pace.bytes_per_second : null);
      const eta = share.left && rate > 0 ? duration(share.left / rate) : null;
      const running = job.state === "running";
      return el(
        "tr",
        { dataset: { job: job.id, state: job.state, phase: p.phase || "" } },
        el("td", { class: "mono", text: job.id.slice(0, 8), title: job.id }),
        el("td", { text: job.kind }),
        el("td", { text: numberRuns(job.target) }),
        el(
          "td",
          {},
          badge(job.state, { running: "", done: "ok", failed: "bad", cancelled: "warn" }[job.state]),
          running && p.phase ? el("div", { class: "muted", text: p.phase }) : null,
        ),
        el(
          "td",
          {},
          share.fraction === null ? null : progressBar(share.fraction),
          el("span", { class: "muted", text: `${share.text}${eta ? ` · about ${eta} left` : ""}` }),
          job.error ? el("div", { class: "problem", text: numberRuns(job.error) }) : null,
        ),
        el("td", { text: running && rate ? `${bytes(rate)}/s` : "–" }),
        el("td", { text: when(job.created_at) }),
        el(
          "td",
          {},
          running ? el("button", { type: "button", class: "danger", text: "Cancel…", "data-key": `cancel-${job.id}`, onclick: () => cancelJob(job, outcome, reload) }) : null,
        ),
      );
    }),
  );
}

async function cancelJob(job, outcome, reload) {
  const sure = await confirmAction(
    `Cancel job ${job.id.slice(0, 8)}?`,
    `${job.kind} of ${numberRuns(job.target)}: a move that has not switched yet rolls back and leaves everything where it was; one past its switch finishes.`,
    "Cancel the job",
  );
  if (!sure) return;
  try {
    await api(`/v1/admin/jobs/${encodeURIComponent(job.id)}/cancel`, { method: "POST" });
    replace(outcome, el("p", { class: "notice", text: `Cancellation of ${job.id.slice(0, 8)} requested.` }));
  } catch (error) {
    if (!(error instanceof Stop)) replace(outcome, problemBox(error));
  }
  await reload().catch(() => {});
}

// The bar's width is set through the style object: the policy refuses style attributes, not
// the CSSOM.
function progressBar(fraction) {
  const fill = el("span");
  fill.style.width = `${Math.round(Math.min(1, fraction) * 100)}%`;
  return el("div", { class: "bar", role: "progressbar", "aria-valuemin": 0, "aria-valuemax": 100, "aria-valuenow": Math.round(fraction * 100) }, fill);
}

// ---------------------------------------------------------------- balancer

views.balancer = (root, instance) => {
  const body = el("div");
  const outcome = el("div", { "aria-live": "polite" });
  root.append(el("h1", { text: "Balancer" }), outcome, body);
  const load = async () => {
    const view = await api("/v1/admin/balancer?limit=20");
    replace(body, balancer(view, outcome, load));
  };
  every(instance, 5000, load);
};

function describeMove(move) {
  if (!move) return "no move";
  const what = move.kind === "tenant" ? `tenant ${move.tenant}` : `vshard ${move.vshard}`;
  return `${what} from ${move.from} to ${move.to} (${ms(move.statement_ms_per_s)} ms/s)`;
}

function balancer(view, outcome, reload) {
  const mode = el(
    "select",
    { id: "balancer-mode", "aria-label": "Balancer mode" },
    ["off", "propose", "apply"].map((m) => el("option", { value: m, text: m, selected: m === view.mode })),
  );
  const switchMode = el("button", {
    type: "button",
    id: "balancer-switch",
    text: "Switch…",
    "data-key": "balancer-switch",
    onclick: async () => {
      const to = mode.value;
      if (to === view.mode) return;
      const words = { off: "It stops deciding.", propose: "It records what it would move and moves nothing until a proposal is approved.", apply: "It starts moves on its own." };
      if (!(await confirmAction(`Switch the balancer to ${to}?`, `${words[to]} The switch applies to every instance and is audited.`, "Switch"))) return;
      await act(outcome, reload, () => api("/v1/admin/balancer/mode", { method: "PUT", body: { mode: to } }), `Switched to ${to}.`);
    },
  });
  const runNow = el("button", {
    type: "button",
    id: "balancer-run",
    text: "Run now",
    "data-key": "balancer-run",
    onclick: () => act(outcome, reload, () => api("/v1/admin/balancer/runs", { method: "POST" }), "Ran."),
  });
  const s = view.settings;
  const parts = [
    el(
      "div",
      { class: "toolbar" },
      el("span", {}, "Mode ", badge(view.mode, view.mode === "off" ? "" : "ok")),
      el("label", { for: "balancer-mode", text: "switch to" }),
      mode,
      switchMode,
      runNow,
      el("span", {
        class: "muted",
        text: `run by ${view.runner ?? "nobody yet"}${view.mode_switched_by ? ` · switched by ${view.mode_switched_by} at ${when(view.mode_switched_at)}` : ""}`,
      }),
    ),
    el("p", {
      class: "muted",
      text: `Every ${duration(s.interval_s)} over ${duration(s.window_s)} of load: a shard is overfull ${Math.round(s.threshold * 100)} % above the mean (and at least ${fmt(s.min_load_ms_per_s)} ms/s); at most ${s.max_concurrent_moves} moves at once, each subject then stays ${duration(s.cooldown_s)}.`,
    }),
    el("h2", { text: "Pending proposals" }),
  ];
  const pending = view.proposals || [];
  parts.push(
    pending.length
      ? table(
          "proposals",
          ["proposal", "proposed", "move", "why", ""],
          pending.map((p) =>
            el(
              "tr",
              { dataset: { proposal: p.id } },
              el("td", { text: p.id }),
              el("td", { text: when(p.at) }),
              el("td", { text: describeMove(p.move) }),
              el("td", { class: "run-reason", text: p.reason }),
              el(
                "td",
                {},
                el("button", {
                  type: "button",
                  class: "primary",
                  text: "Approve…",
                  "data-key": `approve-${p.id}`,
                  onclick: async () => {
                    if (
                      !(await confirmAction(
                        `Approve proposal ${p.id}?`,
                        `The balancer plans again over the load now and, if it still chooses it, moves ${describeMove(p.move)}.`,
                        "Approve",
                      ))
                    )
                      return;
                    await act(
                      outcome,
                      reload,
                      () => api(`/v1/admin/balancer/proposals/${p.id}/approve`, { method: "POST" }),
                      (answer) => `Approved: job ${answer.job.id.slice(0, 8)} moves ${describeMove(p.move)}.`,
                    );
                  },
                }),
              ),
            ),
          ),
        )
      : el("p", { class: "muted", text: "None." }),
  );
  parts.push(el("h2", { text: "Last decisions" }));
  const runs = view.runs || [];
  parts.push(
    runs.length
      ? table(
          "runs",
          ["run", "at", "mode", "outcome", "decision", "job"],
          runs.map((r) =>
            el(
              "tr",
              {},
              el("td", { text: r.id }),
              el("td", { text: when(r.at) }),
              el("td", { text: r.mode }),
              el(
                "td",
                {},
                badge(r.outcome, { started: "ok", proposed: "ok", failed: "bad", held: "warn" }[r.outcome]),
                r.proposal ? el("span", { class: "muted", text: ` ${r.proposal}` }) : null,
              ),
              el("td", { class: "run-reason", text: r.reason + (r.settled ? ` (${r.settled})` : "") }),
              el("td", { class: "mono", text: r.job ? r.job.split("/").pop().slice(0, 8) : "–" }),
            ),
          ),
        )
      : el("p", { class: "muted", text: "No run yet." }),
  );
  return parts;
}

async function act(outcome, reload, action, success) {
  try {
    const answer = await action();
    replace(outcome, el("p", { class: "notice", text: typeof success === "function" ? success(answer) : success }));
  } catch (error) {
    if (!(error instanceof Stop)) replace(outcome, problemBox(error));
  }
  await reload().catch(() => {});
}

// ---------------------------------------------------------------- audit

views.audit = (root, instance) => {
  const action = el("input", { id: "audit-action", type: "search", placeholder: "tenant. or shard.state", "aria-label": "Action, or a prefix ending in a dot" });
  const actor = el("input", { id: "audit-actor", type: "search", placeholder: "actor", "aria-label": "Actor" });
  const apply = el("button", { type: "submit", text: "Filter" });
  const body = el("div");
  const more = el("div");
  const form = el("form", { class: "toolbar" }, el("label", { for: "audit-action", text: "Action" }), action, el("label", { for: "audit-actor", text: "Actor" }), actor, apply);
  root.append(el("h1", { text: "Audit log" }), el("p", { class: "muted", text: "Every admin action, newest first: the console's own actions too." }), form, body, more);
  let rows = [];
  const query = (cursor) => {
    const q = new URLSearchParams({ order: "newest", limit: "50" });
    if (action.value.trim()) q.set("action", action.value.trim());
    if (actor.value.trim()) q.set("actor", actor.value.trim());
    if (cursor) q.set("cursor", cursor);
    return `/v1/admin/audit?${q}`;
  };
  const draw = (page, append) => {
    rows = append ? rows.concat(page.items) : page.items;
    replace(body, auditTable(rows));
    replace(
      more,
      page.next_cursor
        ? el("button", {
            type: "button",
            id: "audit-older",
            text: "Older",
            onclick: () =>
              api(query(page.next_cursor))
                .then((next) => draw(next, true))
                .catch(showIn(more)),
          })
        : null,
    );
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    api(query())
      .then((page) => draw(page, false))
      .catch(showIn(body));
  });
  every(instance, 10000, async () => {
    if (rows.length > 50) return; // the operator paged back: keep what they read
    draw(await api(query()), false);
  });
};

function auditTable(rows) {
  if (!rows.length) return el("p", { class: "muted", text: "Nothing recorded." });
  return table(
    "audit",
    ["at", "actor", "action", "target", "tenant", "request"],
    rows.map((r) =>
      el(
        "tr",
        { dataset: { action: r.action } },
        el("td", { text: when(r.at) }),
        el("td", { text: r.actor }),
        el("td", { class: "mono", text: r.action }),
        el("td", { text: numberRuns(r.target) }),
        el("td", { text: r.tenant ?? "–" }),
        el("td", { class: "mono muted", text: r.request_id }),
      ),
    ),
  );
}

// ---------------------------------------------------------------- instances (instances.js)

views.instances = (root, instance) =>
  instancesView(root, { api, el, badge, table, replace, when, clock, duration, every: (ms, load) => every(instance, ms, load) });
$("nav").append(el("a", { href: "#/instances", dataset: { view: "instances" }, text: "Instances" }));

// ---------------------------------------------------------------- request health (health.js)

views.health = (root, instance) => requestHealthView(root, { api, el, replace, when, every: (ms, load) => every(instance, ms, load) });
$("nav").append(el("a", { href: "#/health", dataset: { view: "health" }, text: "Request health" }));

// ---------------------------------------------------------------- start

$("sign-in-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const candidate = $("token").value.trim();
  $("token").value = "";
  if (candidate) signIn(candidate);
});
$("sign-out").addEventListener("click", () => signOut());
window.addEventListener("hashchange", () => {
  if (token()) route();
});
if (token()) signIn(token());
else signOut();
