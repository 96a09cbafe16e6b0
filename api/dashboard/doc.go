// Package dashboard is Levee's web dashboard: a static page (HTML, CSS and
// JavaScript modules, embedded with embed, no build step) that the API
// listener serves at /dashboard/ and that reads everything it shows from
// the API itself.
//
// The model: the files carry no data and no secret, so they are served
// without a token (a browser's navigation cannot send a bearer header).
// The page asks for a token when the API answers 401, keeps it in
// sessionStorage (this tab only) and sends it as Authorization on every
// API call. It loads the read model once (GET /session, /entrypoints,
// /diagnostics, /diagnostics/catalogue, /ready, /history, /traffic, and
// /events/recent for the Activity list) and then stays live over GET
// /events from the last event it has (Last-Event-ID: what happened in
// between comes first, and after a break the stream resumes where it
// stopped), read with fetch() so that the header can be sent (EventSource
// cannot send one): a breaker event changes the page at once and an event
// of any kind schedules one coalesced reload of the read model; history
// events extend the sparklines. Traffic is not an event: GET /traffic is
// read again every 5 s and only its figures are replaced.
// Actions (breaker open, close, reset) are offered to the roles GET
// /session says may write, and the API refuses them to the others anyway.
//
// Handler adds the headers that keep the page to itself: a Content
// Security Policy allowing only its own scripts, styles and API calls
// (nothing inline, nothing from elsewhere), no framing, no referrer.
package dashboard
