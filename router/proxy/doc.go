// Package proxy is Levee's request path: the http.Handler that takes a
// client request through the router's current snapshot to a backend and
// back. It reads routes and runtime state from package router and writes
// that state only through router's exported methods; the router never
// calls into it.
//
// # A request
//
// One request is one exchange (exchange.go), in this order:
//
//  1. Match. The snapshot (router.Snapshot, one atomic load, no lock)
//     gives the route for the listener the request came in on (from the
//     request context, router.ListenerOf), host, path and method; none is
//     404 no-route. On a plain listener a TLS route with tls.redirect
//     answers 308 to https (tls.go); over TLS a route's tls.hsts adds
//     Strict-Transport-Security. CONNECT is refused; the path is brought
//     into its normal form before matching (router/httpx/pathform: slash runs merged,
//     ";" parameters removed; dot segments, backslashes, encoded
//     separators and control characters refused), the one form the
//     policies and the backend see too. A request whose fields a policy and a
//     backend could read two ways is refused too (headers.go,
//     screenHeaders: Authorization twice, underscore names with
//     UnderscoreReject), and the fields only a trusted proxy or Levee may
//     set are removed, before any policy reads the request. An HTTP/3
//     request that arrived in 0-RTT early data waits for the handshake
//     unless its route allows early data and its method is safe; then
//     it goes at once, marked Early-Data: 1 (early.go, RFC 8470).
//  2. Breaker admission. With a scope=route breaker, its Admit comes
//     before anything else: an open breaker answers 503 circuit-open (or
//     the configured code) with Retry-After, and no backend of the route
//     sees the request. With a fallback (fallback.go) the refused request
//     is served on the fallback route instead, or answered from the
//     route's stale answers (stale.go); the same happens when every
//     backend breaker of a scope=backend route refuses (step 3).
//  3. Pick. The balancer (lb.go: round robin, random, power of two,
//     least connections; stateless, its counters are the route's
//     router.BalancerState) chooses among eligible backends (pick.go:
//     weight > 0, not down, not ejected, breaker not open, not yet tried),
//     relaxing step by step so that a route whose backends are all out
//     fails open. A scope=backend breaker admits the attempt; a refusal
//     excludes that backend and the pick starts again.
//  4. Attempt. The request, its headers prepared (headers.go), goes to
//     the backend through the client for the route's backend timeout
//     (transports.go: Levee's router/httpx/client, or net/http's).
//  5. Outcome. At response headers the attempt is classified
//     (exchange.go: outcome, classify) and reported to both breakers'
//     tokens and to passive health (passive.go).
//  6. Retry or respond. A failure may be tried again on another backend
//     when the retry rules allow it (retry.go: attempts left, idempotent
//     or never sent, body small enough to have been buffered, retry
//     budget left); otherwise the response streams to the client
//     (respond.go), or a 101 becomes a tunnel (upgrade.go). A 425 Too
//     Early to a request Levee sent in early data is sent again once
//     the client's handshake completes (early.go).
//
// The request metrics and the access log line (accesslog.go) are
// written when the exchange ends, whatever ended it. The line is a JSON
// event or Apache's Common or Combined Log Format (accesslog_format.go),
// formatted without allocating and written with one Write to the injected
// Options.AccessLogOut, which must not block (levee serve's log files
// buffer and drop); AccessLogFilter chooses the lines as Traefik's filters
// do.
//
// # Who is blamed for what
//
// A backend is blamed only for what it did: a transport error, a timeout
// waiting for its headers, a status the route's breaker parameters call a
// failure (5xx without a breaker), a 101 nobody asked for. A client that
// went away, or whose body was malformed or too slow (400, 408; limits.go),
// is neutral: the breakers and passive ejection do not hear of it, and
// it is counted in levee_client_errors_total instead. A 425 Too Early to
// a request sent marked Early-Data is neutral too, whatever the breaker
// parameters say: the client's timing decided it, not the backend's
// health (early.go). Levee's own answers
// carry X-Levee-Diagnostic (answers.go) so that a client can tell them
// from a backend's.
//
// # Where traffic policies plug in
//
// The pieces around one exchange are kept apart so that a new policy is a
// new piece, not a new branch in the loop, in the way Caddy's reverseproxy
// composes its handler: eligibility (what may be picked for this attempt)
// next to the balancer (which of those), the retry rules next to the
// outcome classification, the answers apart from the streaming. Request
// and response rewriting, rate limits or mirroring belong around the
// exchange, before the pick and after the outcome, with the router
// keeping any state they need across snapshots.
package proxy
