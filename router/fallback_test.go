package router

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// withFallback gives ep a breaker whose open traffic goes to name.
func withFallback(ep config.Entrypoint, name string) config.Entrypoint {
	cb := config.DefaultCircuitBreaker()
	cb.Fallback.Route = name
	ep.CircuitBreaker = &cb
	return ep
}

func fallbackOf(s *Snapshot, id string) string {
	r, ok := s.Route(id)
	if !ok || r.Fallback() == nil {
		return ""
	}
	return r.Fallback().ID()
}

// codesFor lists the codes of the diagnostics about id, sorted.
func codesFor(ds []diagnostics.Diagnostic, id string) []string {
	var out []string
	for _, d := range ds {
		if d.Source.ObjectID == id {
			out = append(out, string(d.Code))
		}
	}
	slices.Sort(out)
	return out
}

func TestResolveFallbacks(t *testing.T) {
	named := route("api-7f3a", "/", "named.test")
	named.Name = "maint-by-name"
	cases := []struct {
		name  string
		eps   []config.Entrypoint
		want  map[string]string   // route → resolved fallback ("" none)
		codes map[string][]string // route → its diagnostics
	}{
		{name: "resolved by id",
			eps:  []config.Entrypoint{withFallback(route("app", "/", "a.test"), "maint"), route("maint", "/", "m.test")},
			want: map[string]string{"app": "maint", "maint": ""}},
		{name: "resolved by a unique name",
			eps:  []config.Entrypoint{withFallback(route("app", "/", "a.test"), "maint-by-name"), named},
			want: map[string]string{"app": "api-7f3a"}},
		{name: "unknown: W080, no fallback",
			eps:   []config.Entrypoint{withFallback(route("app", "/", "a.test"), "nope")},
			want:  map[string]string{"app": ""},
			codes: map[string][]string{"app": {"W080"}}},
		{name: "itself: W081, refused",
			eps:   []config.Entrypoint{withFallback(route("app", "/", "a.test"), "app")},
			want:  map[string]string{"app": ""},
			codes: map[string][]string{"app": {"W081"}}},
		{name: "two-route cycle: W082 on both, both refused",
			eps:   []config.Entrypoint{withFallback(route("a", "/", "a.test"), "b"), withFallback(route("b", "/", "b.test"), "a")},
			want:  map[string]string{"a": "", "b": ""},
			codes: map[string][]string{"a": {"W082"}, "b": {"W082"}}},
		{name: "three-route cycle with a tail: the tail keeps its fallback",
			eps: []config.Entrypoint{
				withFallback(route("a", "/", "a.test"), "b"), withFallback(route("b", "/", "b.test"), "c"),
				withFallback(route("c", "/", "c.test"), "a"), withFallback(route("tail", "/", "t.test"), "a"),
			},
			want:  map[string]string{"a": "", "b": "", "c": "", "tail": "a"},
			codes: map[string][]string{"a": {"W082"}, "b": {"W082"}, "c": {"W082"}, "tail": nil}},
		{name: "chain: I084 on the first, nothing followed at request time",
			eps: []config.Entrypoint{
				withFallback(route("a", "/", "a.test"), "b"), withFallback(route("b", "/", "b.test"), "c"), route("c", "/", "c.test"),
			},
			want:  map[string]string{"a": "b", "b": "c"},
			codes: map[string][]string{"a": {"I084"}, "b": nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, ds := NewSnapshot(tc.eps)
			for id, want := range tc.want {
				if got := fallbackOf(s, id); got != want {
					t.Errorf("fallback of %s = %q, want %q", id, got, want)
				}
			}
			for id, want := range tc.codes {
				if got := codesFor(ds, id); !slices.Equal(got, want) {
					t.Errorf("diagnostics of %s = %v, want %v (%v)", id, got, want, ds)
				}
			}
			for _, d := range ds {
				if d.Key != fallbackKey || d.Source.Provider == "" {
					t.Errorf("diagnostic %v: want key %s and a source", d, fallbackKey)
				}
				if e, ok := diagnostics.Lookup(d.Code); !ok || e.Severity != d.Severity {
					t.Errorf("diagnostic %v not as catalogued", d)
				}
			}
		})
	}
}

// The router reports fallback diagnostics with the other snapshot-level
// ones, and they resolve when the missing route appears.
func TestRouterFallbackDiagnosticsResolve(t *testing.T) {
	store := diagnostics.NewStore()
	r := New(Options{Diagnostics: store})
	defer r.Close()
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{withFallback(route("app", "/", "a.test"), "maint")}})
	if got := codesFor(store.All(), "app"); !slices.Equal(got, []string{"W080"}) {
		t.Fatalf("before the fallback exists: %v", got)
	}
	r.Update(config.SourceUpdate{Source: "docker", Entrypoints: []config.Entrypoint{route("maint", "/", "m.test")}})
	if got := codesFor(store.All(), "app"); len(got) != 0 {
		t.Fatalf("after the fallback appeared: %v", got)
	}
	if got := fallbackOf(r.Snapshot(), "app"); got != "maint" {
		t.Fatalf("fallback %q", got)
	}
}

// The breaker view says where open-state traffic goes, and the event
// stream says when a route starts and stops using its fallback.
func TestFallbackViewAndEvents(t *testing.T) {
	r := New(Options{})
	defer r.Close()
	stale := route("cached", "/", "c.test")
	cb := config.DefaultCircuitBreaker()
	cb.Fallback.ServeStale = time.Minute
	stale.CircuitBreaker = &cb
	plain := route("plain", "/", "p.test")
	pcb := config.DefaultCircuitBreaker()
	plain.CircuitBreaker = &pcb
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{
		withFallback(route("app", "/", "a.test"), "maint"), route("maint", "/", "m.test"), stale, plain,
	}})
	want := map[string][2]string{"app": {"fallback", "maint"}, "cached": {"stale", ""}, "plain": {"reject", ""}}
	for _, b := range r.Breakers() {
		if w := want[b.Route]; b.OpenTraffic != w[0] || b.Fallback != w[1] {
			t.Errorf("%s: open traffic %q fallback %q, want %v", b.Route, b.OpenTraffic, b.Fallback, w)
		}
	}

	events, stop := r.Subscribe(64)
	defer stop()
	for _, id := range []string{"app", "plain"} {
		if err := r.ControlBreaker(id, status.ActionOpen, "test"); err != nil {
			t.Fatal(err)
		}
	}
	_ = r.ControlBreaker("app", status.ActionOpen, "test") // no transition: no second event
	for _, id := range []string{"app", "plain"} {
		if err := r.ControlBreaker(id, status.ActionClose, "test"); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	deadline := time.After(5 * time.Second)
	for len(got) < 2 {
		select {
		case e := <-events:
			if e.Type != status.EventFallback {
				continue
			}
			fe := e.Data.(status.FallbackEvent)
			got = append(got, strings.Join([]string{fe.Route, fe.Kind, fe.Fallback, fe.Change}, " "))
		case <-deadline:
			t.Fatalf("fallback events so far: %v", got)
		}
	}
	if want := []string{"app fallback maint started", "app fallback maint stopped"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	// Events are published synchronously: what is left is in the channel.
	for {
		select {
		case e := <-events:
			if e.Type == status.EventFallback {
				t.Fatalf("extra fallback event %+v", e.Data)
			}
		default:
			return
		}
	}
}

// With scope=backend the route uses its fallback once the last of its
// backends' breakers has opened, and stops as soon as one closes.
func TestFallbackEventsScopeBackend(t *testing.T) {
	r := New(Options{})
	defer r.Close()
	app := withFallback(route("app", "/", "a.test"), "maint")
	app.CircuitBreaker.Scope = config.ScopeBackend
	app.Backends = []config.Backend{{Address: "127.0.0.1", Port: 1, Weight: 1}, {Address: "127.0.0.1", Port: 2, Weight: 1}}
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{app, route("maint", "/", "m.test")}})
	events, stop := r.Subscribe(64)
	defer stop()
	guards := r.Snapshot().mustRoute(t, "app").state.guards()
	if len(guards) != 2 {
		t.Fatalf("%d backend breakers", len(guards))
	}
	var changes []string
	drain := func() {
		for {
			select {
			case e := <-events:
				if fe, ok := e.Data.(status.FallbackEvent); ok {
					changes = append(changes, fe.Change)
				}
			default:
				return
			}
		}
	}
	guards[0].b.ForceOpen()
	drain()
	if len(changes) != 0 {
		t.Fatalf("one backend open of two: %v", changes)
	}
	guards[1].b.ForceOpen()
	drain()
	guards[0].b.ForceClose()
	drain()
	guards[1].b.ForceClose()
	drain()
	if !slices.Equal(changes, []string{"started", "stopped"}) {
		t.Fatalf("changes %v", changes)
	}
}

// Rebuilds reuse unchanged routes (a write to one entrypoint of 10,000
// recompiles only it), but a route's fallback is resolved against each
// snapshot: when the fallback route is rewritten, the routes falling back
// to it point at the new one, and no route of the previous snapshot (which
// requests may still be reading) is changed.
func TestFallbackFollowsRewrittenTarget(t *testing.T) {
	r := New(Options{})
	defer r.Close()
	app := withFallback(route("app", "/", "a.test"), "maint")
	maint := route("maint", "/", "m.test")
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{app, maint}})
	before := r.Snapshot()
	oldApp, _ := before.Route("app")
	oldMaint, _ := before.Route("maint")
	if oldApp.Fallback() != oldMaint {
		t.Fatalf("first snapshot: app falls back to %v, want maint", oldApp.Fallback())
	}
	maint.Backends = append(maint.Backends, config.Backend{Address: "10.9.9.9", Port: 80, Weight: 1})
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{app, maint}})
	after := r.Snapshot()
	newApp, _ := after.Route("app")
	newMaint, _ := after.Route("maint")
	if newMaint == oldMaint {
		t.Fatal("maint was not rebuilt although its backends changed")
	}
	if newApp.Fallback() != newMaint {
		t.Errorf("after maint changed: app falls back to a route of another snapshot")
	}
	if oldApp.Fallback() != oldMaint {
		t.Errorf("the previous snapshot's app was changed: it falls back to %p, want %p", oldApp.Fallback(), oldMaint)
	}
}
