// DOM helpers. Everything the API sends is put in the page as text nodes
// or attribute values, never parsed as HTML.

const SVG = "http://www.w3.org/2000/svg";

// h builds an element: h("p", {class: "x"}, "text", child, ...). null and
// false children are skipped; arrays are flattened.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  return fill(el, attrs, children);
}

export function svg(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG, tag), attrs, children);
}

function fill(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// replace swaps a container's content, keeping what the user did to it:
// keyboard focus stays on the element with the same id, and <details>
// opened by the user (by id) stay open.
export function replace(container, ...children) {
  const focused = document.activeElement && container.contains(document.activeElement) ? document.activeElement.id : "";
  const open = [...container.querySelectorAll("details[open][id]")].map((d) => d.id);
  container.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  for (const id of open) {
    const d = document.getElementById(id);
    if (d) d.open = true;
  }
  if (focused) {
    const again = document.getElementById(focused);
    if (again) again.focus();
  }
}

export function pct(x) {
  return (Math.round(x * 1000) / 10).toString() + " %";
}

// rate is requests per second in words.
export function rate(rps) {
  const v = Number(rps) || 0;
  return `${v >= 10 ? v.toFixed(1) : v.toFixed(2)} req/s`;
}

// millis is a latency in milliseconds in words.
export function millis(ms) {
  const v = Number(ms) || 0;
  return v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v >= 10 ? Math.round(v) : v.toFixed(1)} ms`;
}

export function timeOf(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleTimeString([], { hour12: false });
}

// idPart makes a route name safe inside an element id.
export function idPart(s) {
  return String(s).replace(/[^a-zA-Z0-9_-]/g, "_");
}

// sparkline draws requests (line) and failures (filled bars) of a
// breaker's history or a route's traffic (failures names them), with a text summary for screen readers and for anyone
// who does not read the chart.
export function sparkline(points, intervalSeconds, failures = "failures") {
  const w = 160, hgt = 36;
  const n = points.length;
  const max = Math.max(1, ...points.map((p) => p.requests));
  const req = points.reduce((a, p) => a + p.requests, 0);
  const fail = points.reduce((a, p) => a + p.failures, 0);
  const minutes = Math.round((n * intervalSeconds) / 60 * 10) / 10;
  const label = n ? `last ${minutes} min: ${req} requests, ${fail} ${failures}` : "no samples yet";
  const step = n > 1 ? w / (n - 1) : w;
  const y = (v) => (hgt - 2 - (v / max) * (hgt - 4)).toFixed(1);
  const line = points.map((p, i) => `${(i * step).toFixed(1)},${y(p.requests)}`).join(" ");
  const bars = points.filter((p) => p.failures > 0).map((p) => {
    const i = points.indexOf(p);
    const top = Number(y(p.failures));
    return svg("rect", { class: "fail", x: Math.max(0, i * step - 1.5).toFixed(1), y: top, width: 3, height: (hgt - 2 - top).toFixed(1) });
  });
  return h("figure", { class: "spark" },
    svg("svg", { viewBox: `0 0 ${w} ${hgt}`, width: w, height: hgt, role: "img", "aria-label": label },
      svg("line", { class: "base", x1: 0, y1: hgt - 2, x2: w, y2: hgt - 2 }),
      n > 1 ? svg("polyline", { class: "req", points: line }) : null,
      bars),
    h("figcaption", {}, label));
}
