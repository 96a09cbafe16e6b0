package router

import (
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/fakeclock"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// A manual transition's status names who forced it and when; the
// breaker's own transitions name no one.
func TestLastTransitionNamesWhoForcedIt(t *testing.T) {
	clock := fakeclock.New(epoch)
	r := New(Options{Clock: clock})
	defer r.Close()
	ep := route("app", "/", "app.test")
	cb := config.DefaultCircuitBreaker()
	ep.CircuitBreaker = &cb
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep}})

	clock.Advance(time.Second)
	if err := r.ControlBreaker("app", status.ActionOpen, "admin@10.0.0.7:51234"); err != nil {
		t.Fatal(err)
	}
	st, ok := r.Breaker("app")
	if !ok || st.LastTransition == nil {
		t.Fatalf("no last transition: %+v", st)
	}
	if lt := st.LastTransition; lt.By != "admin@10.0.0.7:51234" || lt.Rule != "manual" || !lt.At.Equal(epoch.Add(time.Second)) {
		t.Errorf("last transition %+v, want manual by admin@10.0.0.7:51234 at epoch+1s", lt)
	}
	clock.Advance(time.Second)
	if err := r.ControlBreaker("app", status.ActionClose, "admin@10.0.0.8:1"); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.Breaker("app"); st.LastTransition.By != "admin@10.0.0.8:1" {
		t.Errorf("after close: by %q, want admin@10.0.0.8:1", st.LastTransition.By)
	}
}
