package router

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// teapot answers every request 418 itself.
type teapot struct{}

func (teapot) Name() string        { return "teapot" }
func (teapot) Stage() policy.Stage { return policy.StageHeaders }
func (teapot) Serve(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
	w.WriteHeader(http.StatusTeapot)
}

// The router compiles exactly the kinds it is given (Options.Policies):
// a kind is a policy, with no branch of the router naming it, and its
// diagnostics name the route.
func TestRouterCompilesTheKindsItIsGiven(t *testing.T) {
	kind := policy.Kind{Name: "teapot", Stage: policy.StageHeaders, Compile: func(in policy.Input) (policy.Policy, []diagnostics.Diagnostic) {
		if in.Entrypoint.Name != "a" {
			return nil, nil
		}
		return teapot{}, []diagnostics.Diagnostic{in.Diag(diagnostics.BadCompress, "teapot", "none", "a teapot", "")}
	}}
	r := New(Options{Policies: []policy.Kind{kind}})
	defer r.Close()
	a := route("a", "/", "a.test")
	a.Access.IPAllowList = &config.IPAllowList{} // not a kind of this router
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{a, route("b", "/", "b.test")}})

	for host, want := range map[string]int{"a.test": http.StatusTeapot, "b.test": http.StatusNoContent} {
		rt := r.Snapshot().Match(http.MethodGet, host, "/")
		rec := httptest.NewRecorder()
		rt.Policies().Serve(rec, httptest.NewRequest(http.MethodGet, "http://"+host+"/", nil),
			http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
		if rec.Code != want {
			t.Errorf("%s: status %d, want %d", host, rec.Code, want)
		}
	}
	var found bool
	for _, d := range r.store.All() {
		found = found || (d.Code == diagnostics.BadCompress && d.Source.ObjectName == "a" && d.Message == "a teapot")
	}
	if !found {
		t.Errorf("the kind's diagnostic is not reported for route a: %v", r.store.All())
	}
}

// A policy's reference to another route is checked when the snapshot is
// built: an unknown name is W078 on the route (until the route appears),
// a known one is what the request path finds by the name.
func TestPolicyReferencesAreResolved(t *testing.T) {
	r := New(Options{})
	defer r.Close()
	app := route("app", "/", "app.test")
	app.Transform.Errors = &config.ErrorPages{Status: "500-599", Route: "pages", Query: config.DefaultErrorQuery, Timeout: time.Second}
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{app}})
	w078 := func() int {
		n := 0
		for _, d := range r.store.All() {
			if d.Code == diagnostics.ErrorServiceUnknown && d.Source.ObjectID == "app" && d.Key == "errors.route" {
				n++
			}
		}
		return n
	}
	if w078() != 1 {
		t.Fatalf("no W078 for an unknown pages route: %v", r.store.All())
	}
	if _, ok := r.Snapshot().Named("pages"); ok {
		t.Fatal("an unknown name is found")
	}
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{app, route("pages", "/", "pages.test")}})
	if w078() != 0 {
		t.Fatalf("W078 stays after the route appeared: %v", r.store.All())
	}
	if rt, ok := r.Snapshot().Named("pages"); !ok || rt.ID() != "pages" {
		t.Fatalf("Named(pages) = %v, %v", rt, ok)
	}
}
