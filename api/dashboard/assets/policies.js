// Named policies: the Policies page (GET /policies) and, on each route
// card, the policies the route references. A route denies every request
// when it references a name no source declares (E007) or a policy whose
// access settings could not be read (W039 among them: the API's
// "denies"); both are written out, not only coloured.

import { h, idPart } from "./dom.js";

const DOCS = "https://github.com/levee-proxy/levee/blob/main/docs/";

// policyAnchor and routeAnchor are the ids (and hashes) of a policy's
// card and a route's card.
export function policyAnchor(name) { return `policy-${idPart(name)}`; }
export function routeAnchor(id) { return `route-${idPart(id)}`; }

function sourceText(s) {
  return { docker: "container", api: "API", file: "file", swarm: "Swarm service" }[s] || s;
}

// groupText is one policy group's settings in words, as the API sends
// them (basic-auth hashes already redacted by the API).
export function groupText(v) {
  if (v === null || typeof v !== "object") return String(v);
  if (Array.isArray(v)) return v.map(groupText).join(", ");
  return Object.entries(v).map(([k, x]) => `${k}=${typeof x === "object" && x !== null ? JSON.stringify(x) : x}`).join(", ");
}

// references are the names a route's policies= lists, in order.
function references(ep) {
  return ((ep.entrypoint || {}).config || {}).policies || [];
}

// unknownReferences maps each referenced name no policy has to the routes
// that reference it.
function unknownReferences(m) {
  const known = new Set(m.policies.map((p) => p.name));
  const out = new Map();
  for (const e of m.entrypoints) {
    for (const name of references(e)) {
      if (known.has(name)) continue;
      if (!out.has(name)) out.set(name, []);
      if (!out.get(name).includes(e.id)) out.get(name).push(e.id);
    }
  }
  return out;
}

// denyReason says why a policy the API marks "denies" makes its routes
// deny.
function denyReason(p) {
  return (p.diagnostics || []).some((d) => d.code === "W039") ? "declared twice with different access groups (W039)" : "unreadable access settings";
}

function denyBadge(text) {
  return h("span", { class: "badge deny", "data-deny": "yes" }, `✕ ${text}`);
}

function routeLinks(ids) {
  if (!ids.length) return "no route uses it";
  return ids.flatMap((id, i) => [i ? ", " : "", h("a", { href: `#${routeAnchor(id)}`, "data-route": id }, id)]);
}

function diagnosticItem(d) {
  return h("li", { "data-code": d.code },
    h("a", { href: DOCS + "diagnostics.md#" + String(d.code).toLowerCase(), rel: "noopener", target: "_blank" }, d.code),
    " ", d.message);
}

function policyCard(p) {
  const groups = Object.entries((p.policy || {}).config || {});
  return h("article", { class: "policy", id: policyAnchor(p.name), tabindex: -1, "data-policy": p.name, "data-denies": p.denies ? "yes" : "no" },
    h("h3", {}, p.name, " ", h("span", { class: "badge source" }, sourceText(p.source)),
      p.denies ? denyBadge("routes using it deny every request") : null),
    h("dl", { class: "facts groups" },
      groups.length ? groups.map(([k, v]) => [h("dt", {}, k.replace(/_/g, " ")), h("dd", { "data-group": k }, groupText(v))])
        : [h("dt", {}, "groups"), h("dd", {}, "none")]),
    h("p", { class: "users" }, "Used by: ", routeLinks(p.routes || [])),
    (p.diagnostics || []).length ? h("ul", { class: "diags" }, p.diagnostics.map(diagnosticItem)) : null);
}

// page is the Policies page: every declared policy, then the names routes
// reference that no source declares.
export function page(m) {
  const unknown = unknownReferences(m);
  const out = m.policies.length ? m.policies.map(policyCard)
    : [h("p", { id: "no-policies" }, "No named policies: declare one with levee.policy.<name>.* labels, a config file or PUT /policies/<name>.")];
  if (unknown.size) {
    out.push(h("section", { class: "unknown-policies", "aria-labelledby": "unknown-policies-title" },
      h("h3", { id: "unknown-policies-title" }, "Unknown references"),
      h("ul", {}, [...unknown].map(([name, ids]) => h("li", { "data-policy": name },
        h("code", {}, name), " ", denyBadge("unknown (E007): these routes deny every request"), " ", routeLinks(ids))))));
  }
  return out;
}

// routeBlock is a route card's line of named policies: each links to its
// card on the Policies page and says when it makes the route deny.
export function routeBlock(m, ep) {
  const names = references(ep);
  if (!names.length) return null;
  const byName = new Map(m.policies.map((p) => [p.name, p]));
  return h("p", { class: "named-policies" }, "Named policies: ", names.flatMap((name, i) => {
    const p = byName.get(name);
    const state = !p ? "unknown" : p.denies ? "denies" : "ok";
    return [i ? ", " : "", h("span", { class: "ref", "data-policy": name, "data-state": state },
      p ? h("a", { href: `#${policyAnchor(name)}` }, name) : h("code", {}, name),
      state === "unknown" ? [" ", denyBadge("unknown policy (E007): the route denies")] : null,
      state === "denies" ? [" ", denyBadge(`${denyReason(p)}: the route denies`)] : null)];
  }));
}

// overviewCard counts the policies and those that make routes deny.
export function overviewCard(m) {
  const denying = m.policies.filter((p) => p.denies).length + unknownReferences(m).size;
  return h("div", { class: "card", id: "ov-policies", "data-denying": denying },
    h("h3", {}, "Named policies"), h("p", { class: "big" }, String(m.policies.length)),
    h("p", {}, h("a", { href: "#policies" }, denying ? `${denying} make routes deny` : "none makes a route deny")));
}
