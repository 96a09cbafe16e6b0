package router

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// A write rebuilds only what it changed: the routes of unchanged
// entrypoints are carried over to the new snapshot as they are, a changed
// one is compiled and attached again, and a route whose state still holds
// a removed backend in its grace period is attached again (so that its
// expiry stays scheduled) until it settles.
func TestRebuildReusesUnchangedRoutes(t *testing.T) {
	r := New(Options{RemovedRouteGrace: time.Minute})
	defer r.Close()
	a, b := route("a", "/", "a.test"), route("b", "/", "b.test")
	b.Backends = append(b.Backends, config.Backend{Address: "127.0.0.2", Port: 1, Weight: config.DefaultWeight})
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{a, b}})
	s1 := r.Snapshot()
	ra1, _ := s1.Route("a")
	rb1, _ := s1.Route("b")

	b2 := b
	b2.Backends = b.Backends[:1] // one backend removed: its state lingers for the grace
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{a, b2}})
	s2 := r.Snapshot()
	ra2, _ := s2.Route("a")
	rb2, _ := s2.Route("b")
	if ra2 != ra1 {
		t.Error("the unchanged route a was rebuilt")
	}
	if rb2 == rb1 || len(rb2.Backends()) != 1 {
		t.Error("the changed route b was not rebuilt")
	}

	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{a, b2}})
	rb3, _ := r.Snapshot().Route("b")
	if rb3 == rb2 {
		t.Error("b's state holds a backend in its grace period: it must be attached again, not reused")
	}
	if rb3.State() != rb1.State() {
		t.Error("b lost its runtime state")
	}
	if m := r.Snapshot().Match("GET", "a.test", "/"); m != ra1 {
		t.Error("the reused route does not match")
	}
}

// A snapshot built from the previous one (host tables of unchanged routes
// shared) matches and reports collisions exactly as one built from
// scratch, over a run of random changes: hosts shared by several routes,
// wildcards, a catch-all, priorities and removals.
func TestIncrementalSnapshotEqualsFullBuild(t *testing.T) {
	r := New(Options{})
	defer r.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	hosts := []string{"a.test", "b.test", "c.test", "*.test", "*", "x.b.test", "A.TEST"}
	paths := []string{"/", "/api", "/api/v1"}
	eps := map[string]config.Entrypoint{}
	for step := range 300 {
		id := fmt.Sprintf("e%d", rng.IntN(12))
		if rng.IntN(4) == 0 {
			delete(eps, id)
		} else {
			ep := route(id, paths[rng.IntN(len(paths))], hosts[rng.IntN(len(hosts))])
			if rng.IntN(2) == 0 {
				ep.Hosts = append(ep.Hosts, hosts[rng.IntN(len(hosts))])
			}
			ep.Priority = rng.IntN(2)
			eps[id] = ep
		}
		list := slices.Collect(maps.Values(eps))
		r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: list})
		full, fullDiags := NewSnapshot(list)
		inc := r.Snapshot()
		for _, h := range append(hosts, "zz.test", "q.x.b.test") {
			for _, p := range []string{"/", "/api", "/api/v1/x", "/other"} {
				if a, b := matchID(inc, "GET", h, p), matchID(full, "GET", h, p); a != b {
					t.Fatalf("step %d: %s%s matches %q incrementally, %q from scratch", step, h, p, a, b)
				}
			}
		}
		var w018 []diagnostics.Diagnostic
		for _, d := range r.store.All() {
			if d.Code == diagnostics.RouteCollision {
				w018 = append(w018, d)
			}
		}
		if len(w018) != len(fullDiags) {
			t.Fatalf("step %d: %d collision diagnostics incrementally, %d from scratch", step, len(w018), len(fullDiags))
		}
	}
}

// The same with a Docker source, whose removed routes stay as ghosts for
// the grace period: the incremental index over a snapshot's routes equals
// a from-scratch index over the same routes, ghosts included.
func TestIncrementalSnapshotWithGhostsEqualsFullIndex(t *testing.T) {
	r := New(Options{RemovedRouteGrace: time.Hour})
	defer r.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	hosts := []string{"a.test", "b.test", "*.test", "*"}
	eps := map[string]config.Entrypoint{}
	ghosts := 0
	for step := range 300 {
		id := fmt.Sprintf("d%d", rng.IntN(10))
		if rng.IntN(3) == 0 {
			delete(eps, id)
		} else {
			ep := route(id, []string{"/", "/api"}[rng.IntN(2)], hosts[rng.IntN(len(hosts))])
			ep.Source = config.SourceDocker
			eps[id] = ep
		}
		r.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: slices.Collect(maps.Values(eps))})
		inc := r.Snapshot()
		for _, rt := range inc.routes {
			if rt.ghost {
				ghosts++
			}
		}
		full, _ := buildSnapshot(slices.Clone(inc.routes))
		for _, h := range append(hosts, "zz.test") {
			for _, p := range []string{"/", "/api/x"} {
				if a, b := matchID(inc, "GET", h, p), matchID(full, "GET", h, p); a != b {
					t.Fatalf("step %d: %s%s matches %q incrementally, %q from scratch", step, h, p, a, b)
				}
				ra, rb := inc.Match("GET", h, p), full.Match("GET", h, p)
				if ra != rb {
					t.Fatalf("step %d: %s%s: different routes (ghost or live) incrementally and from scratch", step, h, p)
				}
			}
		}
	}
	if ghosts == 0 {
		t.Fatal("no ghost route in 300 steps: the test proves nothing about them")
	}
}

// A route reused by a rebuild keeps reporting its policy diagnostics: they
// are the route's, not the rebuild's (before, a second update of an
// unchanged route with a bad allow-list reported W050 resolved).
func TestReusedRouteKeepsItsPolicyDiagnostics(t *testing.T) {
	r := New(Options{})
	defer r.Close()
	ep := route("a", "/", "a.test")
	ep.Access.IPAllowList = &config.IPAllowList{} // no source range: denies all, with a diagnostic
	other := route("b", "/", "b.test")
	count := func() int {
		n := 0
		for _, d := range r.store.All() {
			if d.Code == diagnostics.BadIPAllowList && d.Source.ObjectID == "a" {
				n++
			}
		}
		return n
	}
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep}})
	if count() != 1 {
		t.Fatalf("%d allow-list diagnostics for a, want 1", count())
	}
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep, other}})
	if rt, _ := r.Snapshot().Route("a"); count() != 1 || rt == nil {
		t.Fatalf("after a rebuild that reused a: %d allow-list diagnostics, want 1", count())
	}
}
