package status

import (
	"errors"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// BackendStatus is one backend with its runtime health.
type BackendStatus struct {
	config.Backend
	// Up is the active health check's verdict (true without checks).
	Up bool `json:"up"`
	// Ejected is true while passive ejection holds the backend out.
	Ejected      bool       `json:"ejected"`
	EjectedUntil *time.Time `json:"ejected_until,omitempty"`
	InFlight     int64      `json:"in_flight"`
}

// EntrypointStatus is an entrypoint as routed, with its runtime state.
type EntrypointStatus struct {
	// Entrypoint is the effective config. Its Go JSON form is not a view:
	// the API shows it through the canonical encoder (config.EncodeEntrypoint),
	// the payload's own shape with durations as Go duration strings.
	Entrypoint config.Entrypoint `json:"entrypoint"`
	Backends   []BackendStatus   `json:"backends"`
	// Breakers holds the route's breaker, or one per backend for
	// scope=backend; empty without a circuit breaker.
	Breakers []BreakerStatus `json:"breakers,omitempty"`
	// Diagnostics are the current diagnostics about this entrypoint.
	Diagnostics []diagnostics.Diagnostic `json:"diagnostics,omitempty"`
	// Removed is true for an entrypoint that left its source and still
	// answers 503 for the grace period.
	Removed bool `json:"removed,omitempty"`
}

// BreakerStatus is the state of one breaker as the API shows it.
type BreakerStatus struct {
	// Route is the entrypoint id.
	Route string `json:"route"`
	// Backend is "address:port" for scope=backend breakers.
	Backend string `json:"backend,omitempty"`
	// Name is the breaker's identity in metrics and events.
	Name  string `json:"name"`
	State string `json:"state"`
	// Mode is "enforce" or "shadow".
	Mode                string  `json:"mode"`
	Generation          uint64  `json:"generation"`
	Forced              bool    `json:"forced,omitempty"`
	FailureRatio        float64 `json:"failure_ratio"`
	SlowRatio           float64 `json:"slow_ratio"`
	WindowTotal         int     `json:"window_total"`
	WindowFailures      int     `json:"window_failures"`
	ConsecutiveFailures int     `json:"consecutive_failures"`
	Admitted            uint64  `json:"admitted"`
	Rejected            uint64  `json:"rejected"`
	Successes           uint64  `json:"successes"`
	Failures            uint64  `json:"failures"`
	Trips               int     `json:"trips"`
	// RetryAfterSeconds is, while open, the whole seconds until half-open.
	RetryAfterSeconds int        `json:"retry_after_seconds,omitempty"`
	OpenedAt          *time.Time `json:"opened_at,omitempty"`
	// OpenTraffic says where the requests the open breaker refuses go:
	// "reject" (responseCode with Retry-After), "fallback" (the route
	// Fallback) or "stale" (the last good answer for the URL, else
	// reject). Half-open probes always go to the route's own backends.
	OpenTraffic string `json:"open_traffic"`
	// Fallback is the fallback route's id when OpenTraffic is "fallback".
	Fallback string `json:"fallback,omitempty"`
	// LastTransition describes the most recent transition, if any.
	LastTransition *BreakerEvent `json:"last_transition,omitempty"`
	// Store is "fleet" while the breaker follows the state shared through
	// the breaker store, "local" otherwise (no store, or a fallback).
	Store string `json:"store"`
	// FleetWindowTotal and FleetWindowFailures are the fleet window's
	// outcomes and failures (Store "fleet" only); the window figures
	// above are this replica's own.
	FleetWindowTotal    int `json:"fleet_window_total,omitempty"`
	FleetWindowFailures int `json:"fleet_window_failures,omitempty"`
}

// Values of BreakerStatus.Store.
const (
	StoreFleet = "fleet"
	StoreLocal = "local"
)

// Breaker control actions accepted by the router's ControlBreaker.
const (
	ActionOpen  = "open"
	ActionClose = "close"
	ActionReset = "reset"
)

// ErrNotFound says a route (or its breaker) does not exist.
var ErrNotFound = errors.New("not found")

// CertificateStatus is one certificate a TLS listener serves, by host
// (GET /certificates). The default certificate is listed with host "*".
type CertificateStatus struct {
	Host string `json:"host"`
	// Source is acme, static or default.
	Source string `json:"source"`
	// Issuer is the issuer's common name (or organisation).
	Issuer   string    `json:"issuer"`
	NotAfter time.Time `json:"not_after,omitzero"`
	// File is a static certificate's file.
	File string `json:"file,omitempty"`
	// LastError is the latest failure to obtain or renew it (ACME).
	LastError string `json:"last_error,omitempty"`
	// NextRenewal is when ACME renews it next (or retries after a failure).
	NextRenewal time.Time `json:"next_renewal,omitzero"`
}
