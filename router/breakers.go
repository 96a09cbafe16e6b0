package router

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// Guard is one breaker in the request path: a route's (scope=route) or one
// backend's (scope=backend). It lives in the state registry, so a new
// snapshot re-attaches to it and only its parameters change.
type Guard struct {
	b       *breaker.Breaker
	route   string
	backend string // empty for scope=route
	// rejected is resolved once so that a rejection does not look a label
	// up.
	rejected prometheus.Counter
	// dropped is set once the state is gone: transitions of a dropped
	// breaker (a late report) are no longer announced.
	dropped atomic.Bool
	// by names the operator of a pending manual action, for its event.
	by atomic.Pointer[string]
	// lastBy names who forced the latest manual transition, and when, for
	// last_transition in the status.
	lastBy atomic.Pointer[manualBy]
	// hist is the breaker's recent traffic, sampled off the request path
	// (SampleHistory).
	hist history
	// leave stops sharing the breaker through the breaker store.
	leave func()
}

// manualBy is who forced a transition and when it happened.
type manualBy struct {
	by string
	at time.Time
}

// name is the breaker's metric and event identity: the route id, or
// "route@backend" for scope=backend.
func (g *Guard) name() string {
	if g.backend == "" {
		return g.route
	}
	return g.route + "@" + g.backend
}

// Breaker returns the guard's breaker: the request path asks it to admit
// (Admit) and reports outcomes through the admission's token.
func (g *Guard) Breaker() *breaker.Breaker { return g.b }

// NoteRejected counts a request the breaker refused
// (levee_breaker_rejected_total under the breaker's name).
func (g *Guard) NoteRejected() { g.rejected.Inc() }

// newGuard creates the breaker and wires its transitions to logs, metrics
// and the event bus.
func (r *Router) newGuard(route, backend string, p breaker.Params) *Guard {
	g := &Guard{route: route, backend: backend}
	g.b = breaker.NewWithParams(g.name(), p, breaker.Options{Clock: r.clock})
	g.rejected = r.metrics.rejected.WithLabelValues(g.name())
	g.b.OnTransition(func(t breaker.Transition) { r.onTransition(g, t) })
	g.leave = r.joinStore(g)
	return g
}

func (r *Router) onTransition(g *Guard, t breaker.Transition) {
	if g.dropped.Load() {
		return
	}
	ev := r.log.Info()
	if t.To == breaker.Open {
		ev = r.log.Warn()
	}
	ev = ev.Str("event", "breaker_"+t.Event()).Str("route", g.route)
	if g.backend != "" {
		ev = ev.Str("backend", g.backend)
	}
	by := ""
	if t.Rule == breaker.RuleManual {
		if p := g.by.Swap(nil); p != nil {
			by = *p
			ev = ev.Str("by", by)
		}
	}
	if t.Rule == breaker.RuleManual {
		g.lastBy.Store(&manualBy{by: by, at: t.At})
	}
	if t.Rule != breaker.RuleNone { // as in the event: no rule, no field
		ev = ev.Str("rule", t.Rule.String())
	}
	ev.Str("from", t.From.String()).Str("to", t.To.String()).
		Float64("retry_after", t.RetryAfter.Seconds()).
		Uint64("generation", t.Generation).
		Msg("circuit breaker " + t.Event())
	r.metrics.transitions.WithLabelValues(g.name(), t.To.String(), ruleLabel(t.Rule)).Inc()
	r.bus.Publish(status.Event{Type: status.EventBreaker, Time: t.At, Data: status.BreakerEvent{
		Route: g.route, Backend: g.backend, Event: t.Event(),
		From: t.From.String(), To: t.To.String(), Rule: t.Rule.String(),
		RetryAfter: t.RetryAfter.Seconds(), Generation: t.Generation, By: by, At: t.At,
	}})
	r.noteFallback(g.route)
}

// configureGuards creates, updates or removes the breakers of a route state
// to match its entrypoint. State carries on across parameter changes.
func (r *Router) configureGuards(rs *RouteState, ep *config.Entrypoint, bss []*BackendState) {
	cb := ep.CircuitBreaker
	wantRoute := cb != nil && cb.Scope != config.ScopeBackend
	wantBackend := cb != nil && cb.Scope == config.ScopeBackend

	rs.mu.Lock()
	defer rs.mu.Unlock()
	r.setGuard(&rs.guard, wantRoute, rs.id, "", cb)
	for _, s := range bss {
		r.setGuard(&s.guard, wantBackend, rs.id, s.key, cb)
	}
}

// setGuard makes slot hold a breaker with cb's parameters when want is
// true, keeping an existing one (and its state), or empties it.
func (r *Router) setGuard(slot *atomic.Pointer[Guard], want bool, route, backend string, cb *config.CircuitBreaker) {
	g := slot.Load()
	switch {
	case want && g == nil:
		slot.Store(r.newGuard(route, backend, cb.Params))
	case want:
		g.b.SetParams(cb.Params)
	case g != nil:
		slot.Store(nil)
		g.dropped.Store(true)
		g.leave()
		r.forgetGuard(g)
	}
}

// forgetGuard removes the breaker's metric series.
func (r *Router) forgetGuard(g *Guard) {
	name := g.name()
	r.metrics.transitions.DeletePartialMatch(map[string]string{"route": name})
	r.metrics.rejected.DeleteLabelValues(name)
}

// statusOf is a breaker's view; rt (nil when unknown) says where the
// traffic it refuses goes.
func statusOf(g *Guard, rt *Route) status.BreakerStatus {
	st := g.b.Stats()
	bs := status.BreakerStatus{
		Route: g.route, Backend: g.backend, Name: g.name(),
		State: st.State.String(), Mode: st.Mode.String(), Generation: st.Generation, Forced: st.Forced,
		FailureRatio: st.FailureRatio, SlowRatio: st.SlowRatio,
		WindowTotal: st.WindowTotal, WindowFailures: st.WindowFailures,
		ConsecutiveFailures: st.ConsecutiveFailures,
		Admitted:            st.Admitted, Rejected: st.Rejected, Successes: st.Successes, Failures: st.Failures,
		Trips:             st.Trips,
		RetryAfterSeconds: int(math.Ceil(st.RetryAfter.Seconds())),
	}
	bs.OpenTraffic, bs.Fallback = openTraffic(rt)
	if !st.OpenedAt.IsZero() {
		t := st.OpenedAt
		bs.OpenedAt = &t
	}
	if lt := st.LastTransition; !lt.At.IsZero() {
		bs.LastTransition = &status.BreakerEvent{
			Route: g.route, Backend: g.backend, Event: lt.Event(), From: lt.From.String(), To: lt.To.String(),
			Rule: lt.Rule.String(), RetryAfter: lt.RetryAfter.Seconds(), Generation: lt.Generation, At: lt.At,
		}
		// Only when it is this transition's: the callback that records it
		// runs just after the breaker changes.
		if m := g.lastBy.Load(); m != nil && lt.Rule == breaker.RuleManual && m.at.Equal(lt.At) {
			bs.LastTransition.By = m.by
		}
	}
	return bs
}

// guards returns the breakers of a route state: the route's, or its
// backends' ordered by address.
func (rs *RouteState) guards() []*Guard {
	if g := rs.guard.Load(); g != nil {
		return []*Guard{g}
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []*Guard
	for _, s := range rs.backends {
		if g := s.guard.Load(); g != nil {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b *Guard) int { return strings.Compare(a.backend, b.backend) })
	return out
}

// Breakers returns the status of every breaker of every current route,
// ordered by route id then backend.
func (r *Router) Breakers() []status.BreakerStatus {
	var out []status.BreakerStatus
	for _, rt := range r.snap.Load().routes {
		for _, g := range rt.state.guards() {
			out = append(out, r.withStore(g, statusOf(g, rt)))
		}
	}
	return out
}

// Breaker returns the status of a route's breaker. For scope=backend it
// returns the first backend's breaker; use Breakers for all of them.
func (r *Router) Breaker(route string) (status.BreakerStatus, bool) {
	rt, ok := r.snap.Load().Route(route)
	if !ok {
		return status.BreakerStatus{}, false
	}
	gs := rt.state.guards()
	if len(gs) == 0 {
		return status.BreakerStatus{}, false
	}
	return r.withStore(gs[0], statusOf(gs[0], rt)), true
}

// ControlBreaker forces a route's breakers open or closed, or resets them
// (every backend's for scope=backend). who is logged with the action.
func (r *Router) ControlBreaker(route, action, who string) error {
	rt, ok := r.snap.Load().Route(route)
	if !ok {
		return fmt.Errorf("controlling the breaker of route %q: route %w", route, status.ErrNotFound)
	}
	gs := rt.state.guards()
	if len(gs) == 0 {
		return fmt.Errorf("controlling the breaker of route %q: the route has no circuit breaker: %w", route, status.ErrNotFound)
	}
	var do func(*breaker.Breaker)
	switch action {
	case status.ActionOpen:
		do = (*breaker.Breaker).ForceOpen
	case status.ActionClose:
		do = (*breaker.Breaker).ForceClose
	case status.ActionReset:
		do = (*breaker.Breaker).Reset
	default:
		return fmt.Errorf("controlling the breaker of route %q: unknown action %q (want open, close or reset)", route, action)
	}
	r.log.Info().Str("event", "breaker_control").Str("route", route).Str("action", action).Str("by", who).
		Msg("circuit breaker " + action + " requested")
	for _, g := range gs {
		if r.controlShared(g, action, who) {
			continue // the fleet's action, applied here by the store
		}
		g.by.Store(&who)
		do(g.b)
		g.by.CompareAndSwap(&who, nil) // no transition (already there): forget it
	}
	return nil
}
