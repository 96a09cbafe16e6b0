// Package router holds the route table and the data plane that proxies
// requests. The config model it routes (config.Entrypoint, …) and the one
// validator that produces it live in package router/config.
//
// # Config to snapshot
//
// Each config source hands the Router its complete current list of
// entrypoints (Update with a config.SourceUpdate). The Router merges all
// sources, detects collisions (W018, with a deterministic winner) and
// builds an immutable Snapshot that requests read through an
// atomic.Pointer: no lock on the request path and no request ever sees
// half a config. Matching is one map lookup for the exact host (a few
// more for wildcards) and one per path segment, whatever the number of
// routes, and does not allocate.
//
// # State outlives config
//
// Runtime state — breakers, balancer counters, in-flight counts, active
// health and passive ejection — lives in a registry keyed by route id and
// backend address, outside the snapshot. A new snapshot re-attaches to it
// and applies new parameters (Breaker.SetParams); state of a route or
// backend that disappeared is dropped only after a grace period, and a
// route that vanished from a non-API source answers 503 no-healthy-backend
// meanwhile instead of 404.
//
// # A request
//
// Match → the route's breaker admits (or the request is answered 503
// circuit-open with Retry-After, and no backend sees it) → the balancer
// picks among eligible backends (weight > 0, healthy, not ejected, breaker
// not open, not yet tried; relaxed step by step, failing open when every
// backend is out) → one attempt through a pooled keep-alive transport →
// the outcome is classified at response headers and reported to the
// breakers and to passive ejection → either the response streams to the
// client, or, for a failure that may be repeated (idempotent, or never
// sent; body small enough to have been buffered; retry budget left), the
// next attempt goes to another backend.
//
// Levee answers on its own behalf with an X-Levee-Diagnostic header:
// no-route (404), no-healthy-backend (503), circuit-open (503 or the
// configured code), backend-unreachable (502), backend-timeout (504).
//
// # Observability
//
// Breaker transitions, route changes and diagnostic changes are zerolog
// events and go to a bounded, non-blocking event bus (Subscribe) that
// counts what slow subscribers lose. Prometheus series are registered on
// the injected Registerer; an optional access log writes one line per
// request.
package router
