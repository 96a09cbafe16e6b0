package router

import (
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// Diagnostics returns every current diagnostic: the sources' and the
// router's own (collisions), in the store's deterministic order.
func (r *Router) Diagnostics() []diagnostics.Diagnostic { return r.store.All() }

// Entrypoints returns every routed entrypoint (merged across sources) with
// its runtime state, ordered by id.
func (r *Router) Entrypoints() []status.EntrypointStatus {
	snap := r.snap.Load()
	all := r.store.All()
	out := make([]status.EntrypointStatus, 0, len(snap.routes))
	for _, rt := range snap.routes {
		out = append(out, r.view(rt, all))
	}
	return out
}

// Entrypoint returns one entrypoint's status by id.
func (r *Router) Entrypoint(id string) (status.EntrypointStatus, bool) {
	rt, ok := r.snap.Load().Route(id)
	if !ok {
		return status.EntrypointStatus{}, false
	}
	return r.view(rt, r.store.All()), true
}

func (r *Router) view(rt *Route, all []diagnostics.Diagnostic) status.EntrypointStatus {
	now := r.clock.Now()
	es := status.EntrypointStatus{Entrypoint: rt.ep, Removed: rt.ghost, Backends: make([]status.BackendStatus, 0, len(rt.backends))}
	for _, b := range rt.backends {
		bs := status.BackendStatus{Backend: b.cfg, Up: !b.st.down.Load(), InFlight: b.st.inflight.Load()}
		if u := b.st.ejection.Until.Load(); u != 0 && now.UnixNano() < u {
			bs.Ejected = true
			t := time.Unix(0, u)
			bs.EjectedUntil = &t
		}
		es.Backends = append(es.Backends, bs)
	}
	for _, g := range rt.state.guards() {
		es.Breakers = append(es.Breakers, r.withStore(g, statusOf(g, rt)))
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
