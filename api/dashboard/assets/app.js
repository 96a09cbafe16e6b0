// The dashboard: sign-in, the read model, the live event stream, actions.

import { request, getToken, setToken, clearToken, ApiError } from "./api.js";
import { stream } from "./sse.js";
import { replace, sparkline } from "./dom.js";
import * as render from "./render.js";
import * as named from "./policies.js";

const $ = (id) => document.getElementById(id);
const PAGES = ["overview", "routes", "policies", "diagnostics", "activity"];
// A hash may name a card: #route-<id> is on the Routes page, #policy-<name>
// on the Policies page.
const CARD_PAGES = { "route-": "routes", "policy-": "policies" };
const MAX_ACTIVITY = 200;
// TRAFFIC_REFRESH is how often the traffic figures are read again
// (GET /traffic): its buckets are 10 s, so twice per bucket.
const TRAFFIC_REFRESH = 5000;

// model is the read model as last loaded, plus the live changes since.
const model = {
  session: null, entrypoints: [], policies: [], diagnostics: {}, ready: {},
  catalogue: new Map(), history: new Map(), historyInterval: 5, historySamples: 60,
  traffic: new Map(), trafficBucket: 10, trafficRate: 60,
};
let streamAbort = null;
let reloadTimer = null;
// lastEventId is the id of the last event the page has (from
// /events/recent or the stream): the stream resumes after it.
let lastEventId = "";

function showError(msg) {
  const el = $("error");
  el.textContent = msg || "";
  el.hidden = !msg;
}

function pageOf(hash) {
  for (const [prefix, page] of Object.entries(CARD_PAGES)) if (hash.startsWith(prefix)) return page;
  return PAGES.includes(hash) ? hash : "overview";
}

// showCard brings the card the hash names into view and gives it focus;
// it returns false when the hash names no card there is.
function showCard() {
  const want = location.hash.slice(1);
  if (!Object.keys(CARD_PAGES).some((p) => want.startsWith(p))) return false;
  const el = document.getElementById(want);
  if (!el) return false;
  el.scrollIntoView({ block: "start" });
  el.focus({ preventScroll: true });
  return true;
}

function showPage() {
  const page = pageOf(location.hash.slice(1));
  const signedIn = model.session !== null;
  for (const p of PAGES) $("page-" + p).hidden = !signedIn || p !== page;
  for (const a of document.querySelectorAll("nav a")) {
    if (a.dataset.page === page) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

function askToken(message) {
  model.session = null;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  $("login-error").hidden = !message;
  $("signout").hidden = !getToken();
  $("role").textContent = "";
  setLive("off", "not connected");
  showPage();
  $("token").focus();
}

function setLive(state, text) {
  const el = $("live");
  el.dataset.live = state;
  el.textContent = text;
}

// start checks the token (GET /session), loads everything and opens the
// event stream.
async function start() {
  showError("");
  stopStream();
  try {
    model.session = await request("/session");
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      const tried = getToken();
      clearToken();
      askToken(tried ? `The API refused this token (${e.message}). Check it and try again.` : "");
      return;
    }
    model.session = null;
    showError(`Cannot load the dashboard: ${e.message}`);
    return;
  }
  $("login").hidden = true;
  const s = model.session;
  $("role").textContent = { admin: "admin token", read: "read token: view only", open: "open API (no tokens)" }[s.role] || s.role;
  $("role").dataset.role = s.role;
  $("signout").hidden = s.role === "open";
  showPage();
  try {
    await Promise.all([load(), loadCatalogue(), loadHistory(), loadTraffic(), loadActivity()]);
  } catch (e) {
    showError(`Loading failed: ${e.message}`);
  }
  renderAll();
  showCard();
  openStream(0);
}

async function load() {
  const [eps, pols, diags, ready] = await Promise.all([
    request("/entrypoints"), request("/policies"), request("/diagnostics"),
    // 503 (a provider has not synced yet) still lists the providers.
    request("/ready").catch((e) => (e.status === 503 && e.body ? e.body : Promise.reject(e))),
  ]);
  model.entrypoints = eps.entrypoints || [];
  model.policies = pols.policies || [];
  model.diagnostics = diags;
  model.ready = ready;
}

async function loadCatalogue() {
  const c = await request("/diagnostics/catalogue");
  model.catalogue = new Map((c.codes || []).map((e) => [e.code, e]));
}

async function loadHistory() {
  const hist = await request("/history");
  model.historyInterval = hist.interval_seconds || 5;
  model.historySamples = hist.samples || 60;
  model.history = new Map((hist.breakers || []).map((b) => [b.name, b.points || []]));
}

async function loadTraffic() {
  const t = await request("/traffic");
  model.trafficBucket = t.bucket_seconds || 10;
  model.trafficRate = t.rate_seconds || 60;
  model.traffic = new Map((t.routes || []).map((r) => [r.route, r]));
}

// loadActivity fills the Activity list from the router's ring of recent
// events, so that what happened before the page opened is there; the
// stream opens after the last of them (lastEventId) and adds what comes
// next, what happened in between included, and after a break it resumes
// from the last event it carried.
async function loadActivity() {
  const rec = await request("/events/recent");
  const items = (rec.events || []).map((ev) => render.activityItem(ev.type, ev)).filter((li) => li);
  replace($("activity"), items.reverse().slice(0, MAX_ACTIVITY));
  lastEventId = rec.last_id || "";
}

// refreshTraffic reads the figures again and swaps only the parts that
// show them: the overview and each card's traffic block, gRPC badge and
// backend table (the rest of a card, and the button a user may be about
// to press, stay).
async function refreshTraffic() {
  if (!model.session) return;
  try {
    await loadTraffic();
  } catch (e) {
    if (e.status === 401) askToken(`The API refused the token (${e.message}).`);
    return;
  }
  replace($("overview"), render.overview(model));
  for (const e of model.entrypoints) {
    const card = document.querySelector(`article.route[data-route="${CSS.escape(e.id)}"]`);
    if (!card) continue;
    const block = card.querySelector("section.traffic");
    if (block) block.replaceWith(render.trafficBlock(model, e.id));
    const badge = card.querySelector("h3 .badge.grpc");
    if (badge) badge.replaceWith(render.grpcBadge(model, e.id));
    const table = card.querySelector(".backends");
    if (table) table.replaceWith(render.backendsTable(model, e));
  }
}

function renderAll() {
  replace($("overview"), render.overview(model));
  renderRoutes();
  replace($("policies"), named.page(model));
  replace($("diagnostics"), render.diagnostics(model));
}

function renderRoutes() {
  const canWrite = model.session && model.session.can_write;
  replace($("routes"), render.routes(model, canWrite, confirmAction));
}

// reloadSoon coalesces the reloads a burst of events asks for into one.
function reloadSoon() {
  if (reloadTimer) return;
  reloadTimer = setTimeout(async () => {
    reloadTimer = null;
    try {
      await load();
      renderAll();
    } catch (e) {
      if (e.status === 401) askToken(`The API refused the token (${e.message}).`);
      else showError(`Refreshing failed: ${e.message}`);
    }
  }, 150);
}

function stopStream() {
  if (streamAbort) streamAbort.abort();
  streamAbort = null;
}

// openStream reads /events from the last event seen; when it breaks it
// retries with a growing delay and reloads the state once back (the
// events missed meanwhile come first on the new stream).
function openStream(attempt) {
  stopStream();
  const ctl = new AbortController();
  streamAbort = ctl;
  setLive("connecting", "connecting…");
  stream(ctl.signal, lastEventId, () => {
    setLive("on", "live");
    if (attempt > 0) { reloadSoon(); loadHistory().then(renderRoutes, () => {}); }
    attempt = 0;
  }, onEvent).then(() => retry(ctl), (e) => {
    if (ctl.signal.aborted) return;
    if (e instanceof ApiError && e.status === 401) { askToken(`The API refused the token (${e.message}).`); return; }
    retry(ctl, e);
  });
  function retry(c, e) {
    if (c.signal.aborted) return;
    const wait = Math.min(15, 2 ** attempt);
    setLive("off", `disconnected${e ? " (" + e.message + ")" : ""}; retrying in ${wait} s`);
    setTimeout(() => { if (!c.signal.aborted) openStream(attempt + 1); }, wait * 1000);
  }
}

function onEvent(type, ev) {
  if (ev.id) lastEventId = ev.id;
  const d = ev.data || {};
  if (type === "history") {
    for (const b of d.breakers || []) {
      const pts = model.history.get(b.name) || [];
      pts.push({ time: d.time, requests: b.requests, failures: b.failures });
      if (pts.length > model.historySamples) pts.splice(0, pts.length - model.historySamples);
      model.history.set(b.name, pts);
      // Only the sparkline changes: the rest of the card (and the button
      // a user may be about to press) stays as it is.
      const fig = document.querySelector(`section.breaker[data-breaker="${CSS.escape(b.name)}"] figure.spark`);
      if (fig) fig.replaceWith(sparkline(pts, model.historyInterval));
    }
    return;
  }
  const item = render.activityItem(type, ev);
  if (item) {
    const list = $("activity");
    list.prepend(item);
    while (list.children.length > MAX_ACTIVITY) list.lastElementChild.remove();
  }
  if (type === "breaker") applyBreaker(d, ev.time);
  reloadSoon();
}

// applyBreaker shows a transition at once, before the reload brings the
// full figures.
function applyBreaker(d, time) {
  for (const e of model.entrypoints) {
    if (e.id !== d.route) continue;
    for (const b of e.breakers || []) {
      if ((b.backend || "") !== (d.backend || "")) continue;
      b.state = d.to;
      b.retry_after_seconds = d.to === "open" ? Math.ceil(d.retry_after || 0) : 0;
      b.last_transition = { ...d, at: d.at || time };
    }
  }
  replace($("overview"), render.overview(model));
  renderRoutes();
}

// confirmAction asks before a breaker action; the API decides anyway.
function confirmAction(route, action) {
  const dlg = $("confirm");
  const what = { open: "Force open: every request to this route is refused with the breaker's answer until it is closed or reset.",
    close: "Force closed: requests go to the backends even if they fail.",
    reset: "Reset: back to closed with empty counters; the breaker judges again." }[action];
  $("confirm-title").textContent = `${action[0].toUpperCase()}${action.slice(1)} the breaker of ${route}?`;
  $("confirm-text").textContent = what;
  $("confirm-ok").textContent = `${action[0].toUpperCase()}${action.slice(1)} breaker`;
  dlg.returnValue = "";
  dlg.onclose = async () => {
    if (dlg.returnValue !== "ok") return;
    try {
      await request(`/breakers/${encodeURIComponent(route)}/${action}`, { method: "POST" });
      showError("");
      reloadSoon();
    } catch (e) {
      showError(`${action} the breaker of ${route}: ${e.message}`);
    }
  };
  dlg.showModal();
}

// Countdowns to half-open tick on the local clock; nothing is fetched.
function tick() {
  for (const el of document.querySelectorAll(".countdown[data-until]")) {
    const left = Math.ceil((Number(el.dataset.until) - Date.now()) / 1000);
    el.textContent = left > 0 ? `in ${left} s` : "now (on the next request)";
  }
}

$("login-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const t = $("token").value.trim();
  if (!t) return;
  setToken(t);
  $("token").value = "";
  start();
});
$("signout").addEventListener("click", () => { clearToken(); stopStream(); askToken(""); });
window.addEventListener("hashchange", () => { showPage(); if (!showCard()) $("main").focus(); });
setInterval(tick, 1000);
setInterval(refreshTraffic, TRAFFIC_REFRESH);
start();
