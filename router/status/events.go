package status

import (
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

// Event types carried by the router's event bus.
const (
	EventBreaker    = "breaker"
	EventRoute      = "route"
	EventDiagnostic = "diagnostic"
	EventFallback   = "fallback"
	// EventHistory carries each new sample of the breakers' history
	// (HistorySample), so a live view extends its sparklines without
	// asking again.
	EventHistory = "history"
)

// Event is one thing that happened in the data plane, for consumers such as
// the API's server-sent events. Data is one of BreakerEvent, RouteEvent,
// FallbackEvent, DiagnosticEvent or HistorySample and marshals to JSON.
type Event struct {
	// ID is the event's place in this process's stream, "<epoch>-<n>":
	// a stream opened after it (GET /events with Last-Event-ID) starts
	// with the remembered events that came later. The epoch tells one
	// process's ids from another's.
	ID   string    `json:"id,omitempty"`
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	Data any       `json:"data"`
}

// BreakerEvent is a breaker transition.
type BreakerEvent struct {
	Route string `json:"route"`
	// Backend is set for scope=backend breakers.
	Backend string `json:"backend,omitempty"`
	// Event is "opened", "half-open" or "closed"; From and To are states
	// ("closed", "open", "half-open"), spelled as in the API.
	Event string `json:"event"`
	From  string `json:"from"`
	To    string `json:"to"`
	// Rule is why it opened ("error_ratio", …) or "manual" for an operator
	// action; absent otherwise (the metric label says "none" instead).
	Rule string `json:"rule,omitempty"`
	// RetryAfter is, for an opening, the seconds until half-open.
	RetryAfter float64 `json:"retry_after,omitempty"`
	Generation uint64  `json:"generation"`
	// By names who forced a manual transition (API caller), if anyone.
	By string `json:"by,omitempty"`
	// At is when the transition happened.
	At time.Time `json:"at,omitzero"`
}

// RouteEvent says a route appeared, changed or went away.
type RouteEvent struct {
	Route  string `json:"route"`
	Source string `json:"source"`
	// Change is "added", "changed" or "removed".
	Change string `json:"change"`
}

// DiagnosticEvent says a diagnostic appeared or went away.
type DiagnosticEvent struct {
	// Change is "added" or "removed".
	Change     string                 `json:"change"`
	Diagnostic diagnostics.Diagnostic `json:"diagnostic"`
}

// FallbackEvent says a route started or stopped sending the requests its
// open breaker refuses to its fallback: "started" when its breaker (with
// scope=backend, the last of its backends' breakers) opens, "stopped"
// when it closes again. Half-open probes still go to the route's own
// backends in between.
type FallbackEvent struct {
	Route string `json:"route"`
	// Kind is "fallback" (a fallback route answers) or "stale" (stale
	// answers, else the breaker's own status).
	Kind string `json:"kind"`
	// Fallback is the fallback route's id (Kind "fallback").
	Fallback string `json:"fallback,omitempty"`
	// Change is "started" or "stopped".
	Change string `json:"change"`
}

// HistorySample is one sampling of every breaker: the point each got.
type HistorySample struct {
	Time     time.Time       `json:"time"`
	Breakers []BreakerSample `json:"breakers"`
}

// BreakerSample is one breaker's new history point.
type BreakerSample struct {
	Route    string `json:"route"`
	Backend  string `json:"backend,omitempty"`
	Name     string `json:"name"`
	Requests uint64 `json:"requests"`
	Failures uint64 `json:"failures"`
}
