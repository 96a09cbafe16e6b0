package router

// Precedence within a host table and the collisions it reports (W018):
// which of two routes on the same host and prefix wins, and why.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// before is the precedence among routes with the same host and prefix:
// live before ghost, higher priority, then the oldest, then the smaller id,
// so the winner never depends on the order sources arrived in.
func (r *Route) before(o *Route) bool {
	if r.ghost != o.ghost {
		return !r.ghost
	}
	if r.ep.Priority != o.ep.Priority {
		return r.ep.Priority > o.ep.Priority
	}
	if !r.ep.Created.Equal(o.ep.Created) {
		return r.ep.Created.Before(o.ep.Created)
	}
	return r.ep.ID < o.ep.ID
}

// sortAndCheck orders each prefix's routes by precedence and records the
// collisions among them.
func (t *hostTable) sortAndCheck(host string) {
	t.diags = nil
	for _, m := range []map[string][]*Route{t.byPrefix, t.byFolded} {
		for prefix, list := range m {
			if len(list) > 1 {
				slices.SortFunc(list, func(a, b *Route) int {
					if a.before(b) {
						return -1
					}
					if b.before(a) {
						return 1
					}
					return 0
				})
				t.diags = append(t.diags, collisions(host, prefix, list)...)
			}
		}
	}
}

// collisions reports W018 on both sides of every pair of live routes that
// claim the same host and prefix with the same filters: only the first
// (the winner by Route.before) can ever be matched.
func collisions(host, prefix string, list []*Route) []diagnostics.Diagnostic {
	var out []diagnostics.Diagnostic
	for i, w := range list {
		if w.ghost {
			continue
		}
		for _, l := range list[i+1:] {
			if l.ghost || l.ep.ID == w.ep.ID || !sameFilters(w, l) {
				continue
			}
			where := host + prefix
			out = append(out,
				diagnostics.New(diagnostics.RouteCollision, sourceOf(w.ep), "host", where, "this route wins",
					fmt.Sprintf("%s is also claimed by %s %q; this route wins (%s)", where, l.ep.Source, l.ep.ID, whyWins(w, l)),
					"give the routes different hosts or paths, or set priority explicitly"),
				diagnostics.New(diagnostics.RouteCollision, sourceOf(l.ep), "host", where, fmt.Sprintf("requests go to %s %q", w.ep.Source, w.ep.ID),
					fmt.Sprintf("%s is also claimed by %s %q, which wins (%s); this route gets no traffic there", where, w.ep.Source, w.ep.ID, whyWins(w, l)),
					"give the routes different hosts or paths, or raise this route's priority"))
		}
	}
	return out
}

func whyWins(w, l *Route) string {
	switch {
	case w.ep.Priority != l.ep.Priority:
		return "higher priority"
	case !w.ep.Created.Equal(l.ep.Created):
		return "older"
	default:
		return "smaller id"
	}
}

func sameFilters(a, b *Route) bool {
	if a.ep.PathRegex != b.ep.PathRegex || len(a.methods) != len(b.methods) {
		return false
	}
	// Routes on different listeners (a plain and a TLS route for one
	// host, the usual pair) do not compete.
	if a.ep.TLS.Enabled != b.ep.TLS.Enabled || !slices.Equal(a.ep.Listeners, b.ep.Listeners) {
		return false
	}
	for _, m := range a.methods {
		if !slices.Contains(b.methods, m) {
			return false
		}
	}
	return true
}

func sortDiagnostics(ds []diagnostics.Diagnostic) {
	slices.SortStableFunc(ds, func(a, b diagnostics.Diagnostic) int {
		if c := strings.Compare(string(a.Code), string(b.Code)); c != 0 {
			return c
		}
		if c := strings.Compare(a.Source.Provider, b.Source.Provider); c != 0 {
			return c
		}
		if c := strings.Compare(a.Source.ObjectID, b.Source.ObjectID); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
}
