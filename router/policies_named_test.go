package router

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

func allowList(name string, ranges ...string) config.Policy {
	return config.Policy{Name: name, Access: config.AccessPolicies{IPAllowList: &config.IPAllowList{SourceRange: ranges}}}
}

func withPolicies(ep config.Entrypoint, names ...string) config.Entrypoint {
	ep.Policies = names
	return ep
}

func rangesOf(t *testing.T, s *Snapshot, id string) []string {
	t.Helper()
	rt, ok := s.Route(id)
	if !ok {
		t.Fatalf("no route %s", id)
	}
	if l := rt.Config().Access.IPAllowList; l != nil {
		return l.SourceRange
	}
	return nil
}

// A policy declared by one source applies to the routes of another that
// reference it, a change to it reaches every such route in one snapshot,
// and an unknown reference denies with E007.
func TestRouterResolvesNamedPolicies(t *testing.T) {
	store := diagnostics.NewStore()
	r := New(Options{Diagnostics: store})
	defer r.Close()
	r.Update(config.SourceUpdate{Source: config.SourceDocker, Policies: []config.Policy{allowList("office", "10.0.0.0/8")}})
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{
		withPolicies(route("a", "/", "a.test"), "office"), withPolicies(route("b", "/", "b.test"), "office"),
		withPolicies(route("c", "/", "c.test"), "offce"), route("d", "/", "d.test")}})
	s := r.Snapshot()
	for _, id := range []string{"a", "b"} {
		if got := rangesOf(t, s, id); !slices.Equal(got, []string{"10.0.0.0/8"}) {
			t.Errorf("route %s: sourceRange %v, want the policy's", id, got)
		}
	}
	if got := codesFor(store.All(), "c"); !slices.Equal(got, []string{string(diagnostics.UnknownPolicy)}) {
		t.Errorf("route c: codes %v, want E007", got)
	}
	rt, _ := s.Route("c")
	if len(rt.Config().Access.Unread) == 0 {
		t.Errorf("route c with an unknown policy does not deny")
	}
	if got := rangesOf(t, s, "d"); got != nil {
		t.Errorf("route d without policies got %v", got)
	}

	r.Update(config.SourceUpdate{Source: config.SourceDocker, Policies: []config.Policy{allowList("office", "192.168.0.0/16"), allowList("offce", "172.16.0.0/12")}})
	s = r.Snapshot()
	for id, want := range map[string]string{"a": "192.168.0.0/16", "b": "192.168.0.0/16", "c": "172.16.0.0/12"} {
		if got := rangesOf(t, s, id); !slices.Equal(got, []string{want}) {
			t.Errorf("after the change, route %s: sourceRange %v, want %s", id, got, want)
		}
	}
	if got := codesFor(store.All(), "c"); len(got) != 0 {
		t.Errorf("route c still has %v once its policy is declared", got)
	}

	// A patch of one route resolves it against every source's policies.
	r.Patch(config.SourcePatch{Source: config.SourceAPI, Put: []config.Entrypoint{withPolicies(route("e", "/", "e.test"), "office")}})
	if got := rangesOf(t, r.Snapshot(), "e"); !slices.Equal(got, []string{"192.168.0.0/16"}) {
		t.Errorf("patched route e: sourceRange %v", got)
	}

	// The policies' source leaving makes every reference unknown: deny.
	r.Update(config.SourceUpdate{Source: config.SourceDocker})
	for _, id := range []string{"a", "b", "e"} {
		rt, _ := r.Snapshot().Route(id)
		if len(rt.Config().Access.Unread) == 0 {
			t.Errorf("route %s serves although its policy is gone", id)
		}
	}
}

// A route that references an unknown policy answers 403
// policy-misconfigured, as one with an unread access key does, and the
// backend is never asked.
func TestUnknownPolicyDeniesRequests(t *testing.T) {
	r := New(Options{})
	defer r.Close()
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{withPolicies(route("a", "/", "a.test"), "nope")}})
	rt := r.Snapshot().Match(http.MethodGet, "a.test", "/")
	if rt == nil {
		t.Fatal("no route")
	}
	if !slices.Contains(rt.Config().Access.Unread, "policies=nope") {
		t.Fatalf("unread = %v", rt.Config().Access.Unread)
	}
	rec := httptest.NewRecorder()
	reached := false
	rt.Policies().Serve(rec, httptest.NewRequest(http.MethodGet, "http://a.test/", nil), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	if rec.Code != http.StatusForbidden || reached || rec.Header().Get("X-Levee-Diagnostic") != "policy-misconfigured" {
		t.Fatalf("status %d, diagnostic %q, backend reached %v: want 403 policy-misconfigured", rec.Code, rec.Header().Get("X-Levee-Diagnostic"), reached)
	}
}
