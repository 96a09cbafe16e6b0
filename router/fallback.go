package router

import (
	"fmt"
	"slices"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// Fallback returns the route that answers, instead of this one's
// backends, the requests its open breaker refuses: nil when none is
// configured or the one configured was refused (W080 unknown, W081
// itself, W082 a cycle). The fallback belongs to the same snapshot.
// Fallbacks never chain: the request path does not follow the
// fallback's own fallback.
func (r *Route) Fallback() *Route { return r.fallback }

// fallbackKey is the field a fallback diagnostic names.
const fallbackKey = "circuitBreaker.fallback"

// resolveFallbacks links each route to its fallback route and reports
// what cannot be linked. It runs where every route is known, when a
// snapshot is built: a name is looked up among the entrypoint ids (a
// label service name or an API entrypoint name), then among the names
// when exactly one route has it.
func resolveFallbacks(s *Snapshot) []diagnostics.Diagnostic {
	// Most route tables have no fallback at all: no index, no walk (a
	// rebuild of 10,000 routes must stay cheap).
	if !slices.ContainsFunc(s.routes, func(r *Route) bool { return fallbackName(r) != "" }) {
		return nil
	}
	var diags []diagnostics.Diagnostic
	byName := make(map[string][]*Route)
	for _, r := range s.routes {
		if !r.ghost {
			byName[r.ep.Name] = append(byName[r.ep.Name], r)
		}
	}
	for _, r := range s.routes {
		name := fallbackName(r)
		if name == "" || r.ghost {
			continue
		}
		t, ok := s.byID.Get(name)
		if !ok && len(byName[name]) == 1 {
			t, ok = byName[name][0], true
		}
		switch {
		case !ok:
			diags = append(diags, diagnostics.New(diagnostics.FallbackUnknown, sourceOf(r.ep), fallbackKey, name, noFallback(r),
				fmt.Sprintf("fallback %q names no route", name), "name an existing service or API entrypoint"))
		case t == r:
			diags = append(diags, diagnostics.New(diagnostics.FallbackSelf, sourceOf(r.ep), fallbackKey, name, noFallback(r),
				"a route cannot be its own fallback", "name another service"))
		default:
			r.fallback = t
		}
	}
	diags = append(diags, refuseCycles(s.routes)...)
	for _, r := range s.routes {
		if t := r.fallback; t != nil && t.fallback != nil {
			diags = append(diags, diagnostics.New(diagnostics.FallbackNotChained, sourceOf(r.ep), fallbackKey, fallbackName(r), "",
				fmt.Sprintf("fallback %q falls back to %q itself, which is never followed: when both breakers are open this route answers its own %d", t.ep.ID, t.fallback.ep.ID, openCode(r)), ""))
		}
	}
	return diags
}

// refuseCycles unlinks every route on a fallback cycle, with W082 on
// each. Each route has at most one fallback, so a walk from any route
// either ends or enters a cycle; the routes of the walk are coloured so
// that the whole is linear.
func refuseCycles(routes []*Route) []diagnostics.Diagnostic {
	const (
		unseen = iota
		onWalk
		done
	)
	colour := make(map[*Route]int, len(routes))
	var cycles [][]*Route
	for _, start := range routes {
		var walk []*Route
		r := start
		for r != nil && colour[r] == unseen {
			colour[r] = onWalk
			walk = append(walk, r)
			r = r.fallback
		}
		if r != nil && colour[r] == onWalk {
			for i, w := range walk {
				if w == r {
					cycles = append(cycles, walk[i:])
					break
				}
			}
		}
		for _, w := range walk {
			colour[w] = done
		}
	}
	var diags []diagnostics.Diagnostic
	for _, c := range cycles {
		names := make([]string, 0, len(c)+1)
		for _, r := range c {
			names = append(names, r.ep.ID)
		}
		names = append(names, c[0].ep.ID)
		path := fmt.Sprint(names)
		for _, r := range c {
			diags = append(diags, diagnostics.New(diagnostics.FallbackCycle, sourceOf(r.ep), fallbackKey, fallbackName(r), noFallback(r),
				"fallbacks form a cycle "+path+": refused", "break the cycle"))
		}
		for _, r := range c {
			r.fallback = nil
		}
	}
	return diags
}

func fallbackName(r *Route) string {
	if cb := r.ep.CircuitBreaker; cb != nil {
		return cb.Fallback.Route
	}
	return ""
}

// openCode is the status the route's open breaker answers.
func openCode(r *Route) int {
	if cb := r.ep.CircuitBreaker; cb != nil && cb.ResponseCode != 0 {
		return cb.ResponseCode
	}
	return config.DefaultResponseCode
}

// noFallback is the diagnostic's fallback: what the route answers instead.
func noFallback(r *Route) string {
	if cb := r.ep.CircuitBreaker; cb != nil && cb.Fallback.ServeStale > 0 {
		return fmt.Sprintf("no fallback route: a stale answer, else %d while the breaker is open", openCode(r))
	}
	return fmt.Sprintf("no fallback: %d while the breaker is open", openCode(r))
}

// Open-state traffic, as the breaker view states it
// (status.BreakerStatus.OpenTraffic).
const (
	OpenTrafficReject   = "reject"
	OpenTrafficFallback = "fallback"
	OpenTrafficStale    = "stale"
)

// openTraffic says where the requests that the route's open breaker
// refuses go, and the fallback route's id when there is one.
func openTraffic(r *Route) (string, string) {
	switch {
	case r == nil:
		return OpenTrafficReject, ""
	case r.fallback != nil:
		return OpenTrafficFallback, r.fallback.ep.ID
	case r.ep.CircuitBreaker != nil && r.ep.CircuitBreaker.Fallback.ServeStale > 0:
		return OpenTrafficStale, ""
	}
	return OpenTrafficReject, ""
}

// noteFallback publishes, after a breaker transition of route id, whether
// the route now sends its refused traffic elsewhere: "started" when its
// breaker (with scope=backend, the last of its backends' breakers) left
// closed, "stopped" when it (or one) closed again. Only routes with a
// fallback route or stale answers have such events; each change is
// published once.
func (r *Router) noteFallback(id string) {
	rt, ok := r.snap.Load().Route(id)
	if !ok {
		return
	}
	kind, to := openTraffic(rt)
	if kind == OpenTrafficReject {
		return
	}
	gs := rt.state.guards()
	open := len(gs) > 0
	for _, g := range gs {
		if g.b.State() == breaker.Closed {
			open = false
		}
	}
	if rt.state.usingFallback.Swap(open) == open {
		return
	}
	change := "stopped"
	if open {
		change = "started"
	}
	now := r.clock.Now()
	r.log.Info().Str("event", "fallback_"+change).Str("route", id).Str("kind", kind).Str("fallback", to).
		Msg("route " + change + " using its fallback")
	r.bus.Publish(status.Event{Type: status.EventFallback, Time: now, Data: status.FallbackEvent{
		Route: id, Fallback: to, Kind: kind, Change: change,
	}})
}
