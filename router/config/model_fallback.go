package config

import "time"

// Fallback is what a route answers while its circuit breaker is open
// (or, with scope=backend, every backend's breaker is): another route,
// the last good answer for the same URL, or, without either, the
// breaker's own responseCode. It is part of CircuitBreaker and
// comparable, like the rest of it.
type Fallback struct {
	// Route names the fallback route: a label service name or an API
	// entrypoint name (an entrypoint id). Empty: none. The router
	// resolves it when it builds a snapshot (W080-W082, I084).
	Route string `json:"fallback,omitempty"`
	// Status, when not 0, replaces the status of the fallback route's
	// answer (e.g. a maintenance page served with 503).
	Status int `json:"fallback_status,omitempty"`
	// ServeStale, when positive, answers GET and HEAD requests the
	// breaker refuses with the last 200 answer for the same URL, if it
	// is at most this old.
	ServeStale time.Duration `json:"serve_stale,omitempty"`
	// ServeStaleForCredentials lets requests with credentials
	// (Authorization, Cookie, and every request of a route with basic or
	// forward auth) be answered from (and recorded into) the stale cache,
	// keyed by every field the route's auth reads or sets, so that nobody
	// gets another's answer.
	ServeStaleForCredentials bool `json:"serve_stale_for_credentials,omitempty"`
}

// MaxServeStale bounds circuitBreaker.serveStale.
const MaxServeStale = 24 * time.Hour

// IsZero reports whether no fallback field is set.
func (f Fallback) IsZero() bool { return f == Fallback{} }
