// The console's Request health view: per route template (or per shard), the request rate, the
// p50 and p99 latency and the error rate over a span, as small multiples: one card per route or
// shard, each with three inline SVG sparklines on the same time axis
// (GET /v1/admin/health/requests?span=...&by=route|shard).
//
// console.js imports this module and hands it its helpers (`kit`): the admin API call, the DOM
// helpers and the refresh loop, so the view calls nothing but the public admin API and sets every
// text from the API as text (names go into text nodes and <title> elements, never markup).

const REFRESH_MS = 10000;
const SPANS = ["15m", "1h", "6h", "1d"];
const BY = [
  ["route", "by route"],
  ["shard", "by shard"],
];
// The SVG namespace, as the HTML parser gives an <svg> element (a constant string, no API text).
const SVG = (() => {
  const holder = document.createElement("div");
  holder.innerHTML = "<svg></svg>";
  return holder.firstChild.namespaceURI;
})();
const WIDTH = 240;
const HEIGHT = 48;
const PAD = 3;

export function requestHealthView(root, kit) {
  const { el, replace, every } = kit;
  const choice = { span: "15m", by: "route" };
  const select = (id, label, options, value) => [
    el("label", { for: id, text: label }),
    el(
      "select",
      { id },
      options.map(([v, text]) => el("option", { value: v, text, selected: v === value })),
    ),
  ];
  const [spanLabel, span] = select(
    "health-span",
    "Span",
    SPANS.map((v) => [v, `last ${v}`]),
    choice.span,
  );
  const [byLabel, by] = select("health-by", "Series", BY, choice.by);
  const range = el("p", { id: "health-range", class: "muted" });
  const body = el("div", { id: "health-series", class: "health-grid" });
  root.append(
    el("h1", { text: "Request health" }),
    el("p", {
      class: "muted",
      text: "Per route (or per shard): requests per second, the median and 99th-percentile latency, and the error rate (5xx and 429; clients' other 4xx are not errors), summed over every instance. The last window, still open, is not shown.",
    }),
    el("div", { class: "toolbar" }, spanLabel, span, byLabel, by),
    range,
    body,
  );
  let generation = 0;
  const load = async () => {
    const asked = ++generation;
    const view = await kit.api(`/v1/admin/health/requests?span=${encodeURIComponent(choice.span)}&by=${encodeURIComponent(choice.by)}`);
    if (asked !== generation) return;
    range.dataset.spanS = String(view.span_s);
    range.dataset.by = view.by;
    range.textContent = `${kit.when(view.since)} to ${kit.when(view.until)}: ${view.series.length} ${view.by === "shard" ? "shards" : "routes"}, points of ${view.step_s} s, from ${view.instances} instance${view.instances === 1 ? "" : "s"}`;
    replace(body, view.series.length ? view.series.map((series) => card(kit, series, view)) : el("p", { class: "muted", text: "No requests in this span." }));
  };
  for (const [control, field] of [
    [span, "span"],
    [by, "by"],
  ]) {
    control.addEventListener("change", () => {
      choice[field] = control.value;
      load().catch(() => {});
    });
  }
  every(REFRESH_MS, load);
}

function figures(point) {
  const ms = (v) => (v === null || v === undefined ? "–" : `${v < 10 ? v.toFixed(2) : v.toFixed(0)} ms`);
  return {
    rate: `${point.rate_per_s.toFixed(2)}/s`,
    p50: ms(point.p50_ms),
    p99: ms(point.p99_ms),
    errors: `${(point.error_rate * 100).toFixed(1)}%`,
  };
}

function card(kit, series, view) {
  const { el } = kit;
  const total = figures(series);
  const points = series.points;
  const value = (field) => points.map((p) => (p.requests ? p[field] : null));
  return el(
    "figure",
    { class: "health-card", dataset: { name: series.name, requests: String(series.requests), errors: String(series.errors) } },
    el("figcaption", {}, el("strong", { class: "mono", text: series.name })),
    el(
      "p",
      { class: "muted health-totals" },
      `${series.requests} requests (${total.rate}), ${series.errors} errors (${total.errors}), p50 ${total.p50}, p99 ${total.p99}`,
    ),
    sparkline(
      el,
      "rate",
      `${series.name}: requests per second`,
      [{ values: points.map((p) => p.rate_per_s), stroke: "#2a6fdb" }],
      view,
    ),
    sparkline(
      el,
      "latency",
      `${series.name}: p50 (dark) and p99 (light) latency, ms`,
      [
        { values: value("p99_ms"), stroke: "#e0a030" },
        { values: value("p50_ms"), stroke: "#8a5a00" },
      ],
      view,
    ),
    sparkline(el, "errors", `${series.name}: error rate`, [{ values: value("error_rate"), stroke: "#c0392b" }], view, 1),
  );
}

function svgNode(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

// One sparkline: a labelled row with an SVG of one or more lines over the span's points (a gap
// where a point has no value), scaled to the largest value (or to `ceiling` when given).
function sparkline(el, kind, label, lines, view, ceiling) {
  const count = Math.max(1, ...lines.map((l) => l.values.length));
  const top = ceiling ?? Math.max(0, ...lines.flatMap((l) => l.values.filter((v) => v !== null)));
  const x = (i) => PAD + (count === 1 ? 0 : (i * (WIDTH - 2 * PAD)) / (count - 1));
  const y = (v) => HEIGHT - PAD - (top > 0 ? (v / top) * (HEIGHT - 2 * PAD) : 0);
  const svg = svgNode("svg", {
    class: `sparkline sparkline-${kind}`,
    width: WIDTH,
    height: HEIGHT,
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: "img",
    "aria-label": label,
    "data-points": count,
  });
  const title = svgNode("title", {});
  title.textContent = `${label} (max ${top > 0 ? Number(top.toPrecision(3)) : 0}, ${view.span_s / 60} min)`;
  svg.append(title, svgNode("line", { x1: PAD, x2: WIDTH - PAD, y1: HEIGHT - PAD, y2: HEIGHT - PAD, stroke: "#ccc", "stroke-width": 1 }));
  for (const line of lines) {
    let path = "";
    let pen = false;
    line.values.forEach((v, i) => {
      if (v === null || v === undefined) {
        pen = false;
        return;
      }
      path += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
    });
    if (path) svg.append(svgNode("path", { d: path, fill: "none", stroke: line.stroke, "stroke-width": 1.5, "stroke-linejoin": "round" }));
    // A point with no neighbour to draw a line to is drawn as a dot.
    const present = (i) => line.values[i] !== null && line.values[i] !== undefined;
    line.values.forEach((v, i) => {
      if (present(i) && !present(i - 1) && !present(i + 1)) svg.append(svgNode("circle", { cx: x(i).toFixed(1), cy: y(v).toFixed(1), r: 2, fill: line.stroke }));
    });
  }
  const names = { rate: "rate", latency: "p50 / p99", errors: "errors" };
  return el("div", { class: "health-line" }, el("span", { class: "muted health-kind", text: names[kind] }), svg);
}
