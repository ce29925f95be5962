// The console's Instances view: every gateway instance of the fleet as it reported itself to the
// instance registry (GET /v1/admin/instances), the readiness of each of its components, and
// which instance holds the balancer's lease and each running job's.
//
// console.js imports this module and hands it its helpers (`kit`): the admin API call, the DOM
// helpers and the refresh loop, so the view calls nothing but the public admin API and sets every
// text from the API as text.

const REFRESH_MS = 2000;

const COMPONENT_KIND = { up: "ok", local: "ok", disabled: "", offline: "warn", degraded: "warn", down: "bad" };
const KEY_SET_KIND = { up: "ok", expired: "warn", unavailable: "bad" };

export function instancesView(root, kit) {
  const { el, replace, every } = kit;
  const summary = el("div", { id: "instances-summary" });
  const body = el("div");
  root.append(
    el("h1", { text: "Instances" }),
    el("p", {
      class: "muted",
      text: "Every gateway instance that reported through the catalog within the load windows' retention. An instance is gone when it stopped, or has not reported for two of its report intervals.",
    }),
    summary,
    body,
  );
  every(REFRESH_MS, async () => {
    const fleet = await kit.api("/v1/admin/instances");
    replace(summary, leases(kit, fleet));
    replace(body, cards(kit, fleet.instances));
  });
}

function leases(kit, fleet) {
  const { el, table } = kit;
  const serving = fleet.instances.filter((i) => i.state === "serving").length;
  const gone = fleet.instances.length - serving;
  const holder = fleet.balancer_lease;
  const parts = [
    el(
      "p",
      { id: "instances-counts" },
      el("strong", { text: `${serving} serving` }),
      gone ? el("span", { class: "muted", text: ` · ${gone} gone` }) : null,
      " · balancer: ",
      holder
        ? el("span", { class: "mono", id: "balancer-holder", text: holder.instance, title: `lease until ${kit.when(holder.until)}` })
        : el("span", { class: "muted", id: "balancer-holder", text: "nobody holds its lease" }),
    ),
  ];
  if (fleet.job_leases.length) {
    parts.push(
      table(
        "job-leases",
        ["job", "kind", "target", "instance", "lease until"],
        fleet.job_leases.map((lease) =>
          el(
            "tr",
            { dataset: { job: lease.job } },
            el("td", {}, el("a", { href: `#/jobs/${encodeURIComponent(lease.job)}`, class: "mono", text: lease.job })),
            el("td", { class: "mono", text: lease.kind }),
            el("td", { text: lease.target }),
            el("td", { class: "mono", text: lease.instance }),
            el("td", { text: kit.clock(lease.until) }),
          ),
        ),
        "Running jobs and the instance running each",
      ),
    );
  }
  return parts;
}

function cards(kit, instances) {
  const { el } = kit;
  if (!instances.length) return el("p", { class: "muted", text: "No instance has reported yet." });
  return el("div", { class: "cards", id: "instances" }, instances.map((instance) => card(kit, instance)));
}

function card(kit, instance) {
  const { el, badge } = kit;
  const gone = instance.state === "gone";
  const down = Object.values(instance.components).some((c) => c.status === "down");
  const mark = gone ? "mark-bad" : down || !instance.ready ? "mark-warn" : "";
  const since = (rfc3339) => kit.duration((Date.now() - new Date(rfc3339).getTime()) / 1000);
  return el(
    "article",
    { class: `card instance ${mark ? `marked ${mark}` : ""}`, dataset: { instance: instance.id, state: instance.state } },
    el(
      "h3",
      {},
      el("span", { class: "mono", text: instance.id }),
      badge(instance.state, gone ? "bad" : "ok"),
      instance.ready ? null : badge("not ready", "warn"),
      instance.balancer_lease ? badge("balancer", "ok") : null,
    ),
    el(
      "dl",
      {},
      el("dt", { text: "address" }),
      el("dd", { class: "mono", text: instance.address }),
      el("dt", { text: "version" }),
      el("dd", { text: instance.version }),
      el("dt", { text: "started" }),
      el("dd", { text: kit.when(instance.started_at), title: `up ${since(instance.started_at)}` }),
      el("dt", { text: "last report" }),
      el("dd", { class: "last-seen", text: `${since(instance.last_seen_at)} ago` }),
      instance.stopped_at ? [el("dt", { text: "stopped" }), el("dd", { text: kit.when(instance.stopped_at) })] : null,
    ),
    components(kit, instance),
    instance.job_leases.length
      ? el("p", { class: "muted" }, "runs ", instance.job_leases.map((job, i) => [i ? ", " : "", el("a", { href: `#/jobs/${encodeURIComponent(job)}`, class: "mono", text: job })]))
      : null,
  );
}

function components(kit, instance) {
  const { el, badge } = kit;
  const rows = Object.entries(instance.components).map(([name, c]) =>
    el(
      "tr",
      { dataset: { component: name, status: c.status } },
      el("td", { class: "mono", text: name }),
      el("td", {}, badge(c.status, COMPONENT_KIND[c.status])),
      el("td", { class: "muted", text: [c.breaker && c.breaker !== "closed" ? `breaker ${c.breaker}` : null, c.error].filter(Boolean).join(" · ") }),
    ),
  );
  for (const [issuer, set] of Object.entries(instance.key_sets)) {
    rows.push(
      el(
        "tr",
        { dataset: { component: `key set ${issuer}`, status: set.status } },
        el("td", { class: "mono", text: `key set ${issuer}` }),
        el("td", {}, badge(set.status, KEY_SET_KIND[set.status])),
        el("td", { class: "muted", text: set.last_error || (set.age_secs !== undefined ? `fetched ${kit.duration(set.age_secs)} ago` : "") }),
      ),
    );
  }
  if (!rows.length) return el("p", { class: "muted", text: "No readiness reported." });
  return el("table", { class: "components" }, el("tbody", {}, rows));
}
