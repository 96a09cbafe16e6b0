// The pages, rendered from the read model the API serves. States are
// always written out in words (and marked with a symbol); colour only
// repeats them.

import { h, pct, timeOf, idPart, sparkline, rate, millis } from "./dom.js";
import * as named from "./policies.js";

const DOCS = "https://github.com/levee-proxy/levee/blob/main/docs/";
const STATE_MARK = { closed: "✓", open: "✕", "half-open": "◐" };
const SEVERITY_MARK = { error: "✕", warn: "!", info: "i" };

function stateBadge(state) {
  return h("span", { class: "badge state", "data-state": state }, `${STATE_MARK[state] || "?"} ${state}`);
}

function severityBadge(sev) {
  return h("span", { class: "badge sev", "data-severity": sev }, `${SEVERITY_MARK[sev] || ""} ${sev}`);
}

function card(title, value, detail, attrs = {}) {
  return h("div", { class: "card", ...attrs }, h("h3", {}, title), h("p", { class: "big" }, value), detail ? h("p", {}, detail) : null);
}

function count(list, pred) { return list.filter(pred).length; }

export function overview(m) {
  const eps = m.entrypoints;
  const backends = eps.flatMap((e) => e.backends || []);
  const healthy = count(backends, (b) => b.up && !b.ejected);
  const breakers = eps.flatMap((e) => e.breakers || []);
  const t = m.diagnostics.totals || {};
  const providers = m.ready.providers || [];
  // With several Docker hosts each is its own provider, docker/<host>.
  const hosts = providers.filter((p) => p.name.startsWith("docker/"));
  const docker = providers.find((p) => p.name === "docker");
  const stateOf = (p) => p.state || (p.ready ? "ready" : "pending");
  const dockerText = hosts.length
    ? `${count(hosts, (p) => stateOf(p) === "connected" || stateOf(p) === "ready")} of ${hosts.length} hosts up`
    : docker ? stateOf(docker) : "not enabled";
  return [
    card("Routes", String(eps.length), `${count(eps, (e) => e.source === "docker")} from Docker, ${count(eps, (e) => e.source === "api")} from the API`, { id: "ov-routes" }),
    card("Backends", `${healthy} healthy`, `${backends.length - healthy} unhealthy (down or ejected) of ${backends.length}`, { id: "ov-backends" }),
    card("Breakers", `${count(breakers, (b) => b.state === "open")} open`,
      `${count(breakers, (b) => b.state === "closed")} closed, ${count(breakers, (b) => b.state === "half-open")} half-open`, { id: "ov-breakers", "data-open": count(breakers, (b) => b.state === "open") }),
    card("Diagnostics", String(t.all || 0), `${t.error || 0} errors, ${t.warn || 0} warnings, ${t.info || 0} info`, { id: "ov-diagnostics" }),
    named.overviewCard(m),
    topCard("Top routes by traffic", "ov-top-traffic", m, (t) => t.requests > 0, (a, b) => b.requests - a.requests || b.rps - a.rps,
      (t) => `${t.requests} requests, ${rate(t.rps)}`, "No traffic in the last 5 min."),
    topCard("Top routes by errors", "ov-top-errors", m, (t) => t.errors > 0, (a, b) => b.errors - a.errors || b.error_ratio - a.error_ratio,
      (t) => `${t.errors} errors (${pct(t.error_ratio)})`, "No errors in the last 5 min."),
    hosts.length
      ? h("div", { class: "card", id: "ov-docker", "data-state": dockerText },
        h("h3", {}, "Docker hosts"), h("p", { class: "big" }, dockerText),
        h("ul", {}, hosts.map((p) => h("li", { "data-host": p.name.slice("docker/".length), "data-state": stateOf(p) },
          `${p.name.slice("docker/".length)}: ${stateOf(p)}`, p.error ? ` — ${p.error}` : ""))))
      : card("Docker provider", dockerText,
        docker ? [docker.since ? `since ${new Date(docker.since).toLocaleString()}` : "", docker.error ? ` — ${docker.error}` : ""].join("") : "Levee runs with --docker=false",
        { id: "ov-docker", "data-state": dockerText }),
  ];
}

const TOP = 5;

// topCard lists the TOP routes of the traffic window that keep passes,
// ordered by order, each with its figures in words.
function topCard(title, id, m, keep, order, text, none) {
  const list = [...m.traffic.values()].filter(keep).sort(order).slice(0, TOP);
  return h("div", { class: "card rank", id },
    h("h3", {}, title),
    list.length ? h("ol", {}, list.map((t) => h("li", { "data-route": t.route }, h("a", { href: `#routes` }, t.route), " — ", text(t)))) : h("p", {}, none));
}

// trafficBlock is a route's traffic over the window: rate, error ratio,
// latency percentiles and a sparkline of its 10-second points.
export function trafficBlock(m, route) {
  const t = m.traffic.get(route);
  const attrs = { class: "traffic", "aria-label": `traffic of ${route}`, "data-route": route,
    "data-requests": t ? t.requests : 0, "data-errors": t ? t.errors : 0 };
  if (!t || !t.requests) return h("section", attrs, h("h4", {}, "Traffic"), h("p", {}, "No requests in the last 5 min."), grpcTable(t && t.grpc));
  const pts = (t.points || []).map((p) => ({ time: p.time, requests: p.requests, failures: p.errors }));
  return h("section", attrs,
    h("h4", {}, "Traffic"),
    h("dl", { class: "facts" },
      h("dt", {}, "rate"), h("dd", { class: "rps" }, rate(t.rps), ` (last ${Math.round(m.trafficRate / 60)} min)`),
      h("dt", {}, "errors"), h("dd", { class: "errors" }, `${pct(t.error_ratio)} (${t.errors} of ${t.requests} requests)`),
      h("dt", {}, "latency"), h("dd", { class: "latency" }, `p50 ${millis(t.p50_ms)}, p99 ${millis(t.p99_ms)}`)),
    sparkline(pts, m.trafficBucket, "errors"),
    grpcTable(t.grpc));
}

// grpcBadge says a route has served gRPC calls; empty (and hidden) for
// one that has not, so that a traffic refresh can fill it in.
export function grpcBadge(m, route) {
  const t = m.traffic.get(route);
  return h("span", { class: "badge grpc", "data-protocol": "grpc" }, t && t.grpc ? "gRPC" : "");
}

// grpcTable is a route's gRPC calls by method, each with its calls by
// grpc-status (the API's counts since the route's state was made).
function grpcTable(g) {
  if (!g || !(g.methods || []).length) return null;
  const rows = g.methods.map((mt) => {
    const st = Object.entries(mt.statuses || {}).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    const calls = st.reduce((n, [, c]) => n + c, 0);
    return h("tr", { "data-method": mt.method },
      h("td", { class: "method" }, mt.method),
      h("td", { class: "num" }, String(calls)),
      h("td", { class: "statuses" }, st.map(([name, c]) =>
        h("span", { class: "badge grpc-status", "data-status": name, "data-ok": name === "OK" ? "yes" : null }, `${name} ${c}`))));
  });
  return h("div", { class: "scroll grpc-methods" }, h("table", {},
    h("caption", {}, "gRPC methods (calls since the route appeared)"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "method"), h("th", { scope: "col" }, "calls"), h("th", { scope: "col" }, "by grpc-status"))),
    h("tbody", {}, rows)));
}

// Listener badges: TLS or plain, and the listeners named (else the kind
// the route serves on by default). A TCP or UDP route says so, with the
// one listener it serves on.
function listenerBadges(ep) {
  const c = ep.config || {};
  const l4 = { Tcp: "tcp", Udp: "udp" }[ep.protocol];
  if (l4) {
    const listener = (c[l4] || {}).listener;
    return [
      h("span", { class: "badge protocol", "data-protocol": l4 }, l4.toUpperCase()),
      h("span", { class: "badge listeners" }, listener ? `listener: ${listener}` : "no listener"),
    ];
  }
  const tls = c.tls === true || (c.tls && c.tls.enabled);
  const named = c.listeners || [];
  return [
    h("span", { class: "badge tls", "data-tls": tls ? "yes" : "no" }, tls ? "🔒 TLS" : "plain HTTP"),
    h("span", { class: "badge listeners" }, named.length ? `listeners: ${named.join(", ")}` : tls ? "every TLS listener" : "every plain listener"),
  ];
}

function rules(ep) {
  const c = ep.config || {};
  if (ep.protocol === "Tcp") {
    // A TCP route is matched by listener (and SNI), never by host and path.
    const t = c.tcp || {};
    return h("dl", { class: "facts" },
      h("dt", {}, "tcp listener"), h("dd", {}, t.listener || ""),
      t.sni && t.sni.length ? [h("dt", {}, "sni"), h("dd", {}, t.sni.join(", "), ` (tls ${t.tls || "passthrough"})`)] : null);
  }
  if (ep.protocol === "Udp") {
    // A UDP route is matched by its listener alone.
    const u = c.udp || {};
    return h("dl", { class: "facts udp" },
      h("dt", {}, "udp listener"), h("dd", {}, u.listener || ""),
      h("dt", {}, "sessions"), h("dd", {}, `at most ${u.max_sessions ?? "?"}, idle after ${u.idle_timeout || "?"}`),
      u.answer_timeout ? [h("dt", {}, "answer timeout"), h("dd", {}, u.answer_timeout)] : null);
  }
  return h("dl", { class: "facts" },
    h("dt", {}, "hosts"), h("dd", {}, (c.hostnames || []).join(", ")),
    h("dt", {}, "path"), h("dd", {}, c.path_regex ? `~ ${c.path_regex}` : c.path || "/", c.strip_prefix ? " (prefix stripped)" : ""),
    c.methods && c.methods.length ? [h("dt", {}, "methods"), h("dd", {}, c.methods.join(", "))] : null,
    h("dt", {}, "priority"), h("dd", {}, String(c.priority ?? 0)));
}

// Known config keys shown elsewhere; every other key is a policy.
const SHOWN = new Set(["hostnames", "path", "path_regex", "strip_prefix", "methods", "priority", "circuit_breaker", "listeners", "tcp", "udp", "policies"]);

function policies(ep) {
  const c = ep.config || {};
  const items = Object.keys(c).filter((k) => !SHOWN.has(k)).map((k) => {
    const v = c[k];
    const text = v !== null && typeof v === "object" ? Object.entries(v).map(([a, b]) => `${a}=${typeof b === "object" ? JSON.stringify(b) : b}`).join(", ") : String(v);
    return h("li", {}, h("span", { class: "key" }, k.replace(/_/g, " ")), " ", text);
  });
  return h("details", { class: "policies", id: `pol-${idPart(ep.name)}` }, h("summary", {}, `Policies (${items.length})`), h("ul", {}, items));
}

export function backendsTable(m, e) {
  const t = m.traffic.get(e.id);
  const byAddr = new Map(((t && t.backends) || []).map((x) => [x.backend, x]));
  const rows = (e.backends || []).map((b) => {
    const bt = byAddr.get(`${b.address}:${b.port}`);
    let health = b.up ? "up" : "down";
    if (b.ejected) health = `ejected until ${timeOf(b.ejected_until)}`;
    const ok = b.up && !b.ejected;
    return h("tr", {},
      h("td", {}, `${b.address}:${b.port}`, b.name ? ` (${b.host ? `${b.host}/` : ""}${b.name})` : "", b.host && !b.name ? ` (host ${b.host})` : ""),
      h("td", {}, h("span", { class: "badge health", "data-ok": ok ? "yes" : "no" }, ok ? "✓ " : "✕ ", health)),
      h("td", { class: "num" }, String(b.weight)),
      h("td", { class: "num" }, String(b.in_flight ?? 0)),
      h("td", { class: "num" }, bt ? rate(bt.rps) : "—"),
      h("td", { class: "num" }, bt && bt.requests ? `${pct(bt.error_ratio)} (${bt.errors})` : "—"),
      h("td", { class: "num" }, bt && bt.requests ? millis(bt.p99_ms) : "—"));
  });
  if (!rows.length) return h("p", { class: "backends" }, "No backends: the route answers 503.");
  return h("div", { class: "scroll backends" }, h("table", {},
    h("caption", {}, "Backends"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "address"), h("th", { scope: "col" }, "health"),
      h("th", { scope: "col" }, "weight"), h("th", { scope: "col" }, "in flight"),
      h("th", { scope: "col" }, "rate"), h("th", { scope: "col" }, "errors"), h("th", { scope: "col" }, "p99"))),
    h("tbody", {}, rows)));
}

function transitionText(lt) {
  if (!lt) return "none yet";
  const rule = lt.rule && lt.rule !== "none" ? ` by rule ${lt.rule}` : "";
  const by = lt.by ? ` (${lt.by})` : "";
  const at = lt.at ? ` at ${timeOf(lt.at)}` : "";
  return `${lt.from} → ${lt.to}${rule}${by}${at}`;
}

function breakerBlock(m, e, b, canWrite, actions) {
  const cb = (e.entrypoint.config || {}).circuit_breaker || {};
  const key = idPart(b.name);
  const hist = m.history.get(b.name) || [];
  const until = b.state === "open" && b.retry_after_seconds ? Date.now() + b.retry_after_seconds * 1000 : 0;
  return h("section", { class: "breaker", "aria-label": `breaker ${b.name}`, "data-breaker": b.name, "data-state": b.state },
    h("h4", {}, "Breaker", b.backend ? ` of ${b.backend}` : "", " ", stateBadge(b.state), b.mode === "shadow" ? h("span", { class: "badge" }, "shadow mode") : null),
    h("dl", { class: "facts" },
      h("dt", {}, "failure ratio"),
      h("dd", {}, h("meter", { min: 0, max: 1, value: b.failure_ratio, high: cb.threshold ?? 0.5, optimum: 0, "aria-label": "failure ratio" }),
        ` ${pct(b.failure_ratio)} of ${pct(cb.threshold ?? 0)} threshold (${b.window_failures} of ${b.window_total} requests in the window; needs ${cb.min_requests ?? "?"})`),
      h("dt", {}, "half-open"),
      h("dd", { class: "countdown", "data-until": until || null }, until ? `in ${b.retry_after_seconds} s` : b.state === "open" ? "when forced closed (manual)" : "—"),
      h("dt", {}, "last transition"), h("dd", { class: "transition" }, transitionText(b.last_transition)),
      h("dt", {}, "totals"), h("dd", {}, `${b.admitted} admitted, ${b.rejected} rejected, ${b.failures} failures, ${b.trips} trips`)),
    sparkline(hist, m.historyInterval),
    canWrite ? h("div", { class: "actions", role: "group", "aria-label": `actions on the breaker of ${e.id}` },
      ["open", "close", "reset"].map((a) => h("button", { type: "button", id: `act-${a}-${key}`, class: a === "open" ? "danger" : "",
        onclick: () => actions(e.id, a) }, `${a[0].toUpperCase()}${a.slice(1)}`))) : null);
}

export function routes(m, canWrite, actions) {
  if (!m.entrypoints.length) return [h("p", {}, "No routes yet.")];
  return m.entrypoints.map((e) => {
    const bs = e.breakers || [];
    const worst = bs.find((b) => b.state === "open") || bs.find((b) => b.state === "half-open") || bs[0];
    return h("article", { class: "route", id: named.routeAnchor(e.id), tabindex: -1, "data-route": e.id, "data-breaker-state": worst ? worst.state : "none" },
      h("h3", {}, e.id, " ", h("span", { class: "badge source" }, sourceText(e.source)), e.removed ? h("span", { class: "badge" }, "removed") : null,
        listenerBadges(e.entrypoint || {}), grpcBadge(m, e.id), worst ? stateBadge(worst.state) : null),
      rules(e.entrypoint),
      named.routeBlock(m, e),
      trafficBlock(m, e.id),
      backendsTable(m, e),
      policies(e.entrypoint),
      bs.length ? bs.map((b) => breakerBlock(m, e, b, canWrite, actions)) : h("p", {}, "No circuit breaker."),
      (e.diagnostics || []).length ? h("p", {}, h("a", { href: "#diagnostics" }, `${e.diagnostics.length} diagnostic(s)`)) : null);
  });
}

function sourceText(s) {
  return { docker: "container", api: "API" }[s] || s;
}

function objectTitle(o) {
  if (o.provider === "api") return `API entrypoint ${o.object || o.object_id}`;
  if (o.provider === "docker") return `container ${o.object || o.object_id}`;
  return `${o.provider} ${o.object || o.object_id}`;
}

export function diagnostics(m) {
  const objs = m.diagnostics.objects || [];
  if (!objs.length) return [h("p", { id: "no-diagnostics" }, "No diagnostics: every label and payload was understood.")];
  return objs.map((o) => h("section", { class: "diag-object", "data-object": o.object || o.object_id },
    h("h3", {}, objectTitle(o)),
    h("ul", { class: "diags" }, (o.diagnostics || []).map((d) => diagnostic(m, d)))));
}

function diagnostic(m, d) {
  const entry = m.catalogue.get(d.code);
  const anchor = DOCS + "diagnostics.md#" + String(d.code).toLowerCase();
  return h("li", { class: "diag", "data-code": d.code },
    h("p", {}, severityBadge(d.severity), " ", h("a", { href: anchor, rel: "noopener", target: "_blank" }, d.code),
      entry ? ` ${entry.title}` : "", d.key ? [" — ", h("code", {}, d.key)] : ""),
    h("p", {}, d.message),
    d.value !== undefined || d.fallback !== undefined ? h("dl", { class: "facts" },
      d.value !== undefined ? [h("dt", {}, "bad value"), h("dd", {}, h("code", {}, d.value))] : null,
      d.fallback !== undefined ? [h("dt", {}, "fallback"), h("dd", {}, h("code", {}, d.fallback))] : null,
      d.suggestion ? [h("dt", {}, "did you mean"), h("dd", {}, h("code", {}, d.suggestion))] : null) : null,
    entry ? h("details", { class: "explain", id: `exp-${idPart(d.source.object_id || d.source.object)}-${d.code}-${idPart(d.key || "")}` }, h("summary", {}, `Explain ${d.code}`),
      h("p", {}, h("strong", {}, "Effect: "), entry.effect),
      h("p", {}, h("strong", {}, "Fix: "), entry.fix),
      entry.example ? h("p", {}, h("strong", {}, "Example: "), h("code", {}, entry.example)) : null) : null);
}

export function activityItem(type, ev) {
  const d = ev.data || {};
  let text;
  switch (type) {
    case "breaker":
      text = [`breaker ${d.route}${d.backend ? "@" + d.backend : ""}: ${d.from} → ${d.to}`,
        d.rule ? ` (rule ${d.rule})` : "", d.by ? ` by ${d.by}` : ""].join("");
      break;
    case "route":
      text = `route ${d.route} (${sourceText(d.source)}) ${d.change}`;
      break;
    case "diagnostic":
      text = `diagnostic ${d.diagnostic ? d.diagnostic.code : "?"} ${d.change}${d.diagnostic && d.diagnostic.key ? " for " + d.diagnostic.key : ""}`;
      break;
    default:
      return null;
  }
  return h("li", { "data-type": type }, h("time", { datetime: ev.time }, timeOf(ev.time)), " ", text);
}
