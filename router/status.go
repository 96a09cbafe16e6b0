package router

import (
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// Diagnostics returns every current diagnostic: the sources' and the
// router's own (collisions), in the store's deterministic order.
func (r *Router) Diagnostics() []diagnostics.Diagnostic { return r.store.All() }

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

// Entrypoints returns every routed entrypoint (merged across sources) with
// its runtime state, ordered by id.
func (r *Router) Entrypoints() []EntrypointStatus {
	snap := r.snap.Load()
	all := r.store.All()
	out := make([]EntrypointStatus, 0, len(snap.routes))
	for _, rt := range snap.routes {
		out = append(out, r.status(rt, all))
	}
	return out
}

// Entrypoint returns one entrypoint's status by id.
func (r *Router) Entrypoint(id string) (EntrypointStatus, bool) {
	rt, ok := r.snap.Load().Route(id)
	if !ok {
		return EntrypointStatus{}, false
	}
	return r.status(rt, r.store.All()), true
}

func (r *Router) status(rt *Route, all []diagnostics.Diagnostic) EntrypointStatus {
	now := r.clock.Now()
	es := EntrypointStatus{Entrypoint: rt.ep, Removed: rt.ghost, Backends: make([]BackendStatus, 0, len(rt.backends))}
	for _, b := range rt.backends {
		bs := BackendStatus{Backend: b.cfg, Up: !b.st.down.Load(), InFlight: b.st.inflight.Load()}
		if u := b.st.ejectedUntil.Load(); u != 0 && now.UnixNano() < u {
			bs.Ejected = true
			t := time.Unix(0, u)
			bs.EjectedUntil = &t
		}
		es.Backends = append(es.Backends, bs)
	}
	for _, g := range rt.state.guards() {
		es.Breakers = append(es.Breakers, statusOf(g))
	}
	for _, d := range all {
		if concerns(d, rt.ep) {
			es.Diagnostics = append(es.Diagnostics, d)
		}
	}
	return es
}

// concerns reports whether a diagnostic is about an entrypoint: same
// provider and the entrypoint's id or name as object or service.
func concerns(d diagnostics.Diagnostic, ep config.Entrypoint) bool {
	if d.Source.Provider != ep.Source {
		return false
	}
	s := d.Source
	return s.ObjectID == ep.ID || s.Service == ep.ID || (s.Service == "" && s.ObjectName == ep.Name) || s.Service == ep.Name
}
