package router

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

// A patch gives the router exactly what an update of the whole source
// gives it: the same routes (ghosts included), matches, backends,
// fallbacks and diagnostics, over a run of random writes to an API source
// of 30 ids beside a Docker source that sometimes claims the same ids,
// with shared hosts, wildcards, bad regexes, policy diagnostics, fallbacks (some to unknown
// names or to themselves) and removed backends in their grace period.
func TestPatchEqualsUpdate(t *testing.T) {
	opts := Options{RemovedRouteGrace: time.Hour}
	patched, updated := New(opts), New(opts)
	defer patched.Close()
	defer updated.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	hosts := []string{"a.test", "b.test", "*.test", "*", "x.b.test"}
	paths := []string{"/", "/api", "/api/v1"}
	api := map[string]config.Entrypoint{}
	randomEP := func(id string) config.Entrypoint {
		ep := route(id, paths[rng.IntN(len(paths))], hosts[rng.IntN(len(hosts))])
		ep.Priority = rng.IntN(2)
		switch rng.IntN(10) {
		case 4: // a second backend: the route lingers once it goes
			ep.Backends = append(ep.Backends, config.Backend{Address: "127.0.0.1", Port: 2, Weight: config.DefaultWeight})
		case 0:
			ep.PathRegex = "(" // W030
		case 3:
			ep.Access.IPAllowList = &config.IPAllowList{} // a policy diagnostic: no source range
		case 1, 2:
			cb := config.DefaultEntrypoint().CircuitBreaker
			if cb == nil {
				cb = &config.CircuitBreaker{}
			}
			c := *cb
			c.Fallback.Route = fmt.Sprintf("a%d", rng.IntN(32)) // 30 and 31 name nothing
			ep.CircuitBreaker = &c
		}
		return ep
	}
	patches := 0
	for step := range 500 {
		var p config.SourcePatch
		switch n := rng.IntN(20); {
		case n < 2: // the Docker source changes, on both routers alike
			var eps []config.Entrypoint
			for i := range rng.IntN(4) {
				ep := randomEP(fmt.Sprintf("d%d", i))
				if rng.IntN(3) == 0 {
					ep = randomEP(fmt.Sprintf("a%d", rng.IntN(30))) // claims an API id
				}
				ep.Source = config.SourceDocker
				ep.Created = epoch.Add(time.Duration(rng.IntN(3)-1) * time.Hour)
				eps = append(eps, ep)
			}
			u := config.SourceUpdate{Source: config.SourceDocker, Entrypoints: eps}
			patched.Update(u)
			updated.Update(u)
		case n < 7:
			id := fmt.Sprintf("a%d", rng.IntN(30))
			delete(api, id)
			p.Delete = []string{id}
		default:
			for range 1 + rng.IntN(2) {
				ep := randomEP(fmt.Sprintf("a%d", rng.IntN(30)))
				if same, ok := api[ep.ID]; ok && rng.IntN(3) == 0 {
					ep = same // written again unchanged: reused
				}
				if slices.ContainsFunc(p.Put, func(o config.Entrypoint) bool { return o.ID == ep.ID }) {
					continue
				}
				api[ep.ID] = ep
				p.Put = append(p.Put, ep)
			}
		}
		if p.Put != nil || p.Delete != nil {
			p.Source = config.SourceAPI
			before := patched.patched
			patched.Patch(p)
			patches += patched.patched - before
			updated.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: slices.Collect(maps.Values(api))})
		}
		comparePatched(t, step, patched, updated, hosts)
	}
	t.Logf("%d of 500 steps took the patch path", patches)
	if patches < 200 {
		t.Fatalf("only %d of 500 steps took the patch path: the test proves little", patches)
	}
}

func comparePatched(t *testing.T, step int, patched, updated *Router, hosts []string) {
	t.Helper()
	a, b := patched.Snapshot(), updated.Snapshot()
	describe := func(s *Snapshot) []string {
		var out []string
		for _, rt := range s.routes {
			d := fmt.Sprintf("%s ghost=%v source=%s backends=%v", rt.ep.ID, rt.ghost, rt.ep.Source, rt.ep.Backends)
			if rt.fallback != nil {
				d += " fallback=" + rt.fallback.ep.ID
			}
			out = append(out, d)
		}
		return out
	}
	if da, db := describe(a), describe(b); !slices.Equal(da, db) {
		t.Fatalf("step %d: routes after a patch:\n%v\nafter an update:\n%v", step, da, db)
	}
	for _, h := range append(hosts, "zz.test", "q.x.b.test") {
		for _, p := range []string{"/", "/api", "/api/v1/x", "/other"} {
			if x, y := matchID(a, "GET", h, p), matchID(b, "GET", h, p); x != y {
				t.Fatalf("step %d: %s%s matches %q after a patch, %q after an update", step, h, p, x, y)
			}
		}
	}
	if da, db := patched.store.All(), updated.store.All(); !reflect.DeepEqual(da, db) {
		t.Fatalf("step %d: diagnostics after a patch:\n%+v\nafter an update:\n%+v", step, da, db)
	}
}

// A patch of one entrypoint among many rebuilds that one route: every
// other route of the new snapshot is the previous one, and the router
// took the patch path, not a full rebuild.
func TestPatchRebuildsOnlyItsIDs(t *testing.T) {
	r := New(Options{})
	defer r.Close()
	eps := manyRoutes(1000)
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: eps})
	s1 := r.Snapshot()
	ep := eps[500]
	ep.Backends = []config.Backend{{Address: "127.0.0.9", Port: 9, Weight: config.DefaultWeight}}
	r.Patch(config.SourcePatch{Source: config.SourceAPI, Put: []config.Entrypoint{ep}})
	if r.patched != 1 {
		t.Fatalf("patch path taken %d times, want 1", r.patched)
	}
	s2 := r.Snapshot()
	for i, rt := range s2.routes {
		prev := s1.routes[i]
		if rt.ep.ID == ep.ID {
			if rt == prev || rt.ep.Backends[0].Address != "127.0.0.9" {
				t.Errorf("the patched route %s was not rebuilt with its new backend", ep.ID)
			}
			continue
		}
		if rt != prev {
			t.Errorf("route %s was rebuilt by a patch of %s", rt.ep.ID, ep.ID)
		}
	}
	if got := matchID(s2, "GET", ep.Hosts[0], ep.Path); got != ep.ID {
		t.Errorf("the patched route does not match: got %q", got)
	}
	r.Patch(config.SourcePatch{Source: config.SourceAPI, Delete: []string{ep.ID}})
	if _, ok := r.Snapshot().Route(ep.ID); ok || len(r.Snapshot().routes) != 999 {
		t.Errorf("a deleted API route is still routed (%d routes)", len(r.Snapshot().routes))
	}
}

// mustRoute returns the route with id or fails the test.
func (s *Snapshot) mustRoute(t *testing.T, id string) *Route {
	t.Helper()
	rt, ok := s.Route(id)
	if !ok {
		t.Fatalf("no route %s", id)
	}
	return rt
}
