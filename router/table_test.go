package router

import (
	"fmt"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// route returns a normalised entrypoint for tests.
func route(id, path string, hosts ...string) config.Entrypoint {
	ep := config.DefaultEntrypoint()
	ep.ID, ep.Name, ep.Source = id, id, config.SourceAPI
	ep.Path = path
	ep.Hosts = hosts
	ep.Created = epoch
	ep.Backends = []config.Backend{{Address: "127.0.0.1", Port: 1, Weight: config.DefaultWeight}}
	return ep
}

func matchID(s *Snapshot, method, host, path string) string {
	r := s.Match(method, host, path)
	if r == nil {
		return ""
	}
	return r.ID()
}

func TestMatchHostsAndPaths(t *testing.T) {
	api := route("api", "/api", "example.com")
	root := route("root", "/", "example.com")
	apiV2 := route("api-v2", "/api/v2/", "example.com")
	wild := route("wild", "/", "*.example.com")
	deepWild := route("deep-wild", "/", "*.b.example.com")
	wildAPI := route("wild-api", "/api", "*.example.com")
	catchAll := route("any", "/", "*")
	other := route("other", "/x", "other.test")
	s, diags := NewSnapshot([]config.Entrypoint{api, root, apiV2, wild, deepWild, wildAPI, catchAll, other})
	if len(diags) != 0 {
		t.Fatalf("unexpected diagnostics: %v", diags)
	}
	cases := []struct{ host, path, want string }{
		{"example.com", "/", "root"},
		{"example.com", "/api", "api"},
		{"example.com", "/api/", "api"},
		{"example.com", "/api/x/y", "api"},
		{"example.com", "/apix", "root"}, // segment-aware: /api does not match /apix
		{"example.com", "/api/v2", "api-v2"},
		{"example.com", "/api/v2/users", "api-v2"}, // longest prefix wins
		{"example.com", "/api/v20", "api"},
		{"EXAMPLE.com:8080", "/api", "api"}, // case-insensitive, port ignored
		{"example.com.", "/", "root"},       // trailing dot
		{"a.example.com", "/", "wild"},
		{"a.example.com", "/api/x", "wild-api"},
		{"x.b.example.com", "/", "deep-wild"}, // longer wildcard suffix wins
		{"x.b.example.com", "/api", "deep-wild"},
		{"A.B.EXAMPLE.COM", "/", "deep-wild"},
		{"other.test", "/x/1", "other"},
		{"other.test", "/", "any"}, // host's routes reject the path: fall through to *
		{"unknown.test", "/", "any"},
		{"[::1]:80", "/", "any"},
	}
	for _, c := range cases {
		if got := matchID(s, "GET", c.host, c.path); got != c.want {
			t.Errorf("Match(%q, %q) = %q, want %q", c.host, c.path, got, c.want)
		}
	}
}

func TestMatchWildcardDoesNotMatchApex(t *testing.T) {
	s, _ := NewSnapshot([]config.Entrypoint{route("wild", "/", "*.example.com")})
	if got := matchID(s, "GET", "example.com", "/"); got != "" {
		t.Fatalf("*.example.com matched the apex: %q", got)
	}
	if got := matchID(s, "GET", "notexample.com", "/"); got != "" {
		t.Fatalf("*.example.com matched notexample.com: %q", got)
	}
}

func TestMatchUnknownHostIsNil(t *testing.T) {
	s, _ := NewSnapshot([]config.Entrypoint{route("a", "/", "a.test")})
	if r := s.Match("GET", "b.test", "/"); r != nil {
		t.Fatalf("got %q for an unknown host", r.ID())
	}
}

func TestMatchPriorityThenOldestThenID(t *testing.T) {
	low := route("low", "/", "h.test")
	high := route("high", "/", "h.test")
	high.Priority = 10
	s, _ := NewSnapshot([]config.Entrypoint{low, high})
	if got := matchID(s, "GET", "h.test", "/"); got != "high" {
		t.Fatalf("priority: got %q, want high", got)
	}

	old := route("zz-old", "/", "h.test")
	young := route("aa-young", "/", "h.test")
	young.Created = epoch.Add(time.Hour)
	s, _ = NewSnapshot([]config.Entrypoint{young, old})
	if got := matchID(s, "GET", "h.test", "/"); got != "zz-old" {
		t.Fatalf("age: got %q, want zz-old", got)
	}

	a, b := route("a", "/", "h.test"), route("b", "/", "h.test")
	for _, order := range [][]config.Entrypoint{{a, b}, {b, a}} {
		s, _ = NewSnapshot(order)
		if got := matchID(s, "GET", "h.test", "/"); got != "a" {
			t.Fatalf("id tie-break: got %q, want a", got)
		}
	}
}

func TestMatchLongestPrefixBeatsPriority(t *testing.T) {
	short := route("short", "/", "h.test")
	short.Priority = 100
	long := route("long", "/api", "h.test")
	s, _ := NewSnapshot([]config.Entrypoint{short, long})
	if got := matchID(s, "GET", "h.test", "/api/x"); got != "long" {
		t.Fatalf("got %q, want long", got)
	}
}

func TestMatchMethodsAndRegexFilters(t *testing.T) {
	get := route("get", "/", "h.test")
	get.Methods = []string{"GET", "HEAD"}
	get.Priority = 2
	re := route("re", "/", "h.test")
	re.PathRegex = `^/items/[0-9]+$`
	re.Priority = 1
	fallback := route("fallback", "/", "h.test")
	s, diags := NewSnapshot([]config.Entrypoint{get, re, fallback})
	if len(diags) != 0 {
		t.Fatalf("filters differ, so no collision expected: %v", diags)
	}
	cases := []struct{ method, path, want string }{
		{"GET", "/items/1", "get"},
		{"POST", "/items/12", "re"},
		{"POST", "/items/x", "fallback"},
		{"DELETE", "/", "fallback"},
	}
	for _, c := range cases {
		if got := matchID(s, c.method, "h.test", c.path); got != c.want {
			t.Errorf("%s %s = %q, want %q", c.method, c.path, got, c.want)
		}
	}
}

func TestCollisionReportsBothAndPicksDeterministicWinner(t *testing.T) {
	a := route("docker-web", "/app", "h.test")
	a.Source = config.SourceDocker
	b := route("api-web", "/app/", "H.test")
	b.Created = epoch.Add(-time.Hour) // older: wins
	s, diags := NewSnapshot([]config.Entrypoint{a, b})
	if got := matchID(s, "GET", "h.test", "/app"); got != "api-web" {
		t.Fatalf("winner = %q, want api-web (older)", got)
	}
	if len(diags) != 2 {
		t.Fatalf("want W018 on both sides, got %v", diags)
	}
	about := map[string]bool{}
	for _, d := range diags {
		if d.Code != diagnostics.RouteCollision || d.Severity != diagnostics.Warn {
			t.Errorf("unexpected diagnostic %v", d)
		}
		about[d.Source.ObjectID] = true
	}
	if !about["docker-web"] || !about["api-web"] {
		t.Fatalf("diagnostics should name both routes: %v", diags)
	}
}

func TestSnapshotMatchDoesNotAllocate(t *testing.T) {
	s, _ := NewSnapshot(manyRoutes(1000))
	for _, host := range []string{"svc-200.example.com", "SVC-7.Example.COM:8443", "x.wild-3.example.net"} {
		allocs := testing.AllocsPerRun(100, func() {
			if s.Match("GET", host, "/api/v1/items") == nil {
				panic("no match for " + host)
			}
		})
		if allocs != 0 {
			t.Errorf("Match(%q) allocates %.1f times", host, allocs)
		}
	}
}

// manyRoutes builds n routes: exact hosts with a few paths each, some
// wildcards, as a large deployment would have.
func manyRoutes(n int) []config.Entrypoint {
	eps := make([]config.Entrypoint, 0, n)
	for i := 0; len(eps) < n; i++ {
		switch i % 4 {
		case 0:
			eps = append(eps, route(fmt.Sprintf("r%d", i), "/", fmt.Sprintf("svc-%d.example.com", i/4)))
		case 1:
			eps = append(eps, route(fmt.Sprintf("r%d", i), "/api", fmt.Sprintf("svc-%d.example.com", i/4)))
		case 2:
			eps = append(eps, route(fmt.Sprintf("r%d", i), "/api/v1", fmt.Sprintf("svc-%d.example.com", i/4)))
		case 3:
			eps = append(eps, route(fmt.Sprintf("r%d", i), "/", fmt.Sprintf("*.wild-%d.example.net", i/4)))
		}
	}
	return eps
}

func BenchmarkMatch10k(b *testing.B) {
	s, _ := NewSnapshot(manyRoutes(10_000))
	b.Run("exact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Match("GET", "svc-1234.example.com", "/api/v1/items/42")
		}
	})
	b.Run("exact-mixed-case-port", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Match("GET", "Svc-1234.Example.com:8080", "/api/v1/items/42")
		}
	})
	b.Run("wildcard", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Match("GET", "a.b.wild-1234.example.net", "/some/path")
		}
	})
	b.Run("miss", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Match("GET", "nowhere.test", "/")
		}
	})
	// What the request path calls: the listener filter on top.
	web := &Listener{Name: "web"}
	b.Run("on-listener-exact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.MatchOn(web, "GET", "svc-1234.example.com", "/api/v1/items/42")
		}
	})
	b.Run("on-listener-miss", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.MatchOn(web, "GET", "nowhere.test", "/")
		}
	})
}

func BenchmarkSnapshotBuild10k(b *testing.B) {
	eps := manyRoutes(10_000)
	b.ReportAllocs()
	for b.Loop() {
		NewSnapshot(eps)
	}
}

func BenchmarkRouterUpdate10k(b *testing.B) {
	eps := manyRoutes(10_000)
	r := New(Options{})
	defer r.Close()
	// The first update creates every route's state; later ones (what a
	// reload costs) re-attach to it.
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: eps})
	b.ReportAllocs()
	for b.Loop() {
		r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: eps})
	}
}

// A regex that does not compile (only a Go caller that skipped the
// validator can send one) is ignored, as the catalogue's W030 says, and
// reported with the catalogue's severity.
func TestSnapshotIgnoresAnUncompilableRegexAsW030Says(t *testing.T) {
	e := config.Entrypoint{ID: "web", Source: config.SourceAPI, Hosts: []string{"web.test"}, Path: "/", PathRegex: "(", Backends: []config.Backend{{Address: "127.0.0.1", Port: 1, Weight: 1}}}
	snap, ds := NewSnapshot([]config.Entrypoint{e})
	if len(ds) != 1 || ds[0].Code != diagnostics.BadPathRegex || ds[0].Severity != diagnostics.Warn {
		t.Fatalf("diagnostics %+v, want one W030 at warn", ds)
	}
	if rt := snap.Match("GET", "web.test", "/anything"); rt == nil {
		t.Fatal("route dropped; W030 says the regex is ignored and the route still matches")
	}
}
