// The API client: every call carries the tab's token, every error becomes
// an ApiError with the API's own message.

const TOKEN_KEY = "levee.token";

// The token lives in sessionStorage: this tab only, gone when it closes.
export function getToken() { return sessionStorage.getItem(TOKEN_KEY) || ""; }
export function setToken(t) { sessionStorage.setItem(TOKEN_KEY, t); }
export function clearToken() { sessionStorage.removeItem(TOKEN_KEY); }

// The API is the origin that served the page (the dashboard is mounted on
// the API listener).
export const base = new URL("..", document.baseURI).pathname.replace(/\/$/, "");

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body || null; // the decoded error body, when JSON
  }
}

export function headers() {
  const h = { Accept: "application/json" };
  const t = getToken();
  if (t) h.Authorization = "Bearer " + t;
  return h;
}

// REQUEST_TIMEOUT_S bounds each call, its body included: an API that
// does not answer shows as an error naming the call, and the page goes on
// (the event stream, which is long-lived, is not a call).
export const REQUEST_TIMEOUT_S = 10;

// request sends one call and returns the decoded JSON body (null for 204).
export async function request(path, opts = {}) {
  const method = opts.method || "GET";
  const limit = AbortSignal.timeout(REQUEST_TIMEOUT_S * 1000);
  const signal = opts.signal ? AbortSignal.any([opts.signal, limit]) : limit;
  const timedOut = () => new ApiError(0, `the API did not answer ${method} ${path} within ${REQUEST_TIMEOUT_S} s`);
  let resp;
  try {
    resp = await fetch(base + path, { method, headers: headers(), cache: "no-store", signal });
  } catch (e) {
    if (limit.aborted) throw timedOut();
    throw new ApiError(0, "the API cannot be reached: " + e.message);
  }
  if (resp.status === 204) return null;
  let body = null;
  try { body = await resp.json(); } catch {
    if (limit.aborted) throw timedOut();
    /* not JSON: keep the status */
  }
  if (!resp.ok) {
    const msg = body && body.error ? body.error : resp.statusText;
    throw new ApiError(resp.status, `${resp.status}: ${msg}`, body);
  }
  return body;
}
