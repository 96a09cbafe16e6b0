package router

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// fakeStore is a BreakerStore that records what the router asks.
type fakeStore struct {
	mu       sync.Mutex
	joined   map[string]func(action, by string)
	left     []string
	controls []string
	fail     error
	fleet    bool
}

func (f *fakeStore) Join(name string, _ *breaker.Breaker, control func(action, by string)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.joined[name] = control
	return func() {
		f.mu.Lock()
		f.left = append(f.left, name)
		f.mu.Unlock()
	}
}

// Control applies the action "fleet-wide": here, through the control
// function of the joined breaker, as the real store does on this replica.
func (f *fakeStore) Control(_ context.Context, name, action, by string) error {
	f.mu.Lock()
	f.controls = append(f.controls, name+" "+action+" "+by)
	ctl, err := f.joined[name], f.fail
	f.mu.Unlock()
	if err != nil {
		return err
	}
	ctl(action, by)
	return nil
}

func (f *fakeStore) Shared(string) (bool, int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fleet, 42, 7
}

func routeWithBreaker(cb bool) config.Entrypoint {
	e := config.Entrypoint{ID: "web", Source: config.SourceAPI, Hosts: []string{"web.test"}, Path: "/",
		Backends: []config.Backend{{Address: "127.0.0.1", Port: 1, Weight: 1}}}
	if cb {
		e.CircuitBreaker = &config.CircuitBreaker{Params: breaker.DefaultParams()}
	}
	return e
}

func TestBreakerStoreWiring(t *testing.T) {
	fs := &fakeStore{joined: map[string]func(string, string){}}
	r := New(Options{BreakerStore: fs})
	defer r.Close()
	events, cancel := r.Subscribe(16)
	defer cancel()
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{routeWithBreaker(true)}})
	if fs.joined["web"] == nil {
		t.Fatal("the route's breaker did not join the store")
	}

	// The view says local until the store says fleet.
	if b, _ := r.Breaker("web"); b.Store != status.StoreLocal || b.FleetWindowTotal != 0 {
		t.Fatalf("view %+v, want store local without fleet figures", b)
	}
	fs.mu.Lock()
	fs.fleet = true
	fs.mu.Unlock()
	if b, _ := r.Breaker("web"); b.Store != status.StoreFleet || b.FleetWindowTotal != 42 || b.FleetWindowFailures != 7 {
		t.Fatalf("view %+v, want store fleet with the fleet window", b)
	}

	// Control goes through the store, which applies it here with its author.
	if err := r.ControlBreaker("web", status.ActionOpen, "alice"); err != nil {
		t.Fatal(err)
	}
	if got := fs.controls; len(got) != 1 || got[0] != "web open alice" {
		t.Fatalf("store controls %v", got)
	}
	ev := nextBreakerEvent(t, events)
	if ev.Event != "opened" || ev.By != "alice" || ev.Rule != "manual" {
		t.Fatalf("event %+v, want opened by alice (manual)", ev)
	}

	// A store that cannot be reached: the action applies here only.
	fs.mu.Lock()
	fs.fail = errors.New("store down")
	fs.mu.Unlock()
	if err := r.ControlBreaker("web", status.ActionClose, "bob"); err != nil {
		t.Fatal(err)
	}
	if ev := nextBreakerEvent(t, events); ev.Event != "closed" || ev.By != "bob" {
		t.Fatalf("event %+v, want closed by bob", ev)
	}

	// Dropping the breaker leaves the store.
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{routeWithBreaker(false)}})
	if got := fs.left; len(got) != 1 || got[0] != "web" {
		t.Fatalf("left %v, want [web]", got)
	}
}

func nextBreakerEvent(t *testing.T, ch <-chan status.Event) status.BreakerEvent {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e := <-ch:
			if be, ok := e.Data.(status.BreakerEvent); ok {
				return be
			}
		case <-deadline:
			t.Fatal("no breaker event")
		}
	}
}
