package router

import (
	"fmt"
	"slices"

	"github.com/levee-proxy/levee/diagnostics"
)

// Named returns the route a policy of the snapshot names (an error-pages
// route): looked up when the snapshot was built, so that the request
// path pays one map read. Names no policy uses are not found.
func (s *Snapshot) Named(name string) (*Route, bool) {
	r, ok := s.named[name]
	return r, ok
}

// resolveReferences looks up the routes the policies name, where every
// route is known, by the rule of fallbacks: an entrypoint id (a label
// service name or an API entrypoint name), then a name exactly one route
// has. A name that finds no route is reported with the policy's code;
// the policy then acts as without it.
func resolveReferences(s *Snapshot) []diagnostics.Diagnostic {
	// Most tables have no such policy: no index, no walk beyond this.
	if !slices.ContainsFunc(s.routes, func(r *Route) bool { return len(r.refs) > 0 }) {
		return nil
	}
	byName := make(map[string][]*Route)
	for _, r := range s.routes {
		if !r.ghost {
			byName[r.ep.Name] = append(byName[r.ep.Name], r)
		}
	}
	s.named = make(map[string]*Route)
	var diags []diagnostics.Diagnostic
	for _, r := range s.routes {
		if r.ghost {
			continue
		}
		for _, ref := range r.refs {
			t, ok := s.byID.Get(ref.Route)
			if !ok && len(byName[ref.Route]) == 1 {
				t, ok = byName[ref.Route][0], true
			}
			if !ok {
				diags = append(diags, diagnostics.New(ref.Code, sourceOf(r.ep), ref.Key, ref.Route, ref.Fallback,
					fmt.Sprintf("%s %q names no route", ref.Key, ref.Route), "name an existing service or API entrypoint"))
				continue
			}
			s.named[ref.Route] = t
		}
	}
	return diags
}
