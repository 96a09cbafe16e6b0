package inflight

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/fleetsync"
	"github.com/levee-proxy/levee/router/policy/internal/fleetsynctest"
	"github.com/levee-proxy/levee/router/policy/internal/policytest"
)

// fakeStore models the store's script (package fleetstore): each
// replica's last count per route and key, the others' sum answered.
type fakeStore struct {
	fleetsynctest.Outage
	mu     sync.Mutex
	counts map[string]map[string]int64 // route\x00key -> replica -> count
}

func newFakeStore() *fakeStore { return &fakeStore{counts: map[string]map[string]int64{}} }

// replica is one replica's view of the fake store.
type replica struct {
	store *fakeStore
	name  string
}

func (r replica) Report(_ context.Context, counts []Count) ([]int64, error) {
	s := r.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.Call(); err != nil {
		return nil, err
	}
	out := make([]int64, len(counts))
	for i, c := range counts {
		id := c.Route + "\x00" + c.Key
		m := s.counts[id]
		if m == nil {
			m = map[string]int64{}
			s.counts[id] = m
		}
		m[r.name] = c.InFlight
		for rep, n := range m {
			if rep != r.name {
				out[i] += n
			}
		}
	}
	return out, nil
}

// node is one replica: its Fleet and its compiled fleet policy.
type node struct {
	fleet *Fleet
	pol   *FleetPolicy
	diags fleetsynctest.Diagnostics
}

func newNode(t *testing.T, store *fakeStore, name string, amount int, o ...fleetsync.Options) *node {
	t.Helper()
	return newNodeOf(t, replica{store, name}, amount, o...)
}

// newNodeOf is a replica of the store shared.
func newNodeOf(t *testing.T, shared SharedCounts, amount int, o ...fleetsync.Options) *node {
	t.Helper()
	n := &node{}
	opts := FleetOptions{Shared: shared}
	if len(o) > 0 {
		opts.Options = o[0]
	}
	opts.OnDiagnostics = n.diags.Report
	n.fleet = NewFleet(opts)
	ep := &config.Entrypoint{ID: "app@docker"}
	ep.Access.InFlight = &config.InFlight{Amount: amount, SourceCriterion: config.CriterionIP, Scope: config.ScopeFleet}
	p, ds := Kind(n.fleet).Compile(policy.Input{Entrypoint: ep, Env: policy.Env{Route: ep.ID}, State: policytest.State{}})
	if len(ds) != 0 {
		t.Fatalf("compile: %v", ds)
	}
	fp, ok := p.(*FleetPolicy)
	if !ok {
		t.Fatalf("compiled %T, want *FleetPolicy", p)
	}
	n.pol = fp
	return n
}

func (n *node) flush() { n.fleet.Flush(context.Background()) }

// hold starts k requests of client 192.0.2.1 that stay in flight until
// release is called; it returns once all were admitted.
func (n *node) hold(t *testing.T, k int) (release func()) {
	t.Helper()
	done := make(chan struct{})
	entered := make(chan struct{}, k)
	var wg sync.WaitGroup
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.pol.Serve(httptest.NewRecorder(), policytest.Request("192.0.2.1:1"), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				entered <- struct{}{}
				<-done
			}))
		}()
	}
	for range k {
		<-entered
	}
	return func() { close(done); wg.Wait() }
}

func (n *node) code() int { return policytest.Run(n.pol, policytest.Request("192.0.2.1:2")).Code }

// The others' counts make a replica refuse although it has none in
// flight itself; their requests ended, it admits again.
func TestFleetInFlightOthersCount(t *testing.T) {
	store := newFakeStore()
	a, b := newNode(t, store, "a", 2), newNode(t, store, "b", 2)
	release := a.hold(t, 2)
	a.flush()
	b.flush() // b has nothing listed yet: it learns nothing
	if got := b.code(); got != http.StatusOK {
		t.Fatalf("b before it heard of a: %d", got)
	}
	b.flush() // b reports its key (0) and hears a's 2
	res := policytest.Run(b.pol, policytest.Request("192.0.2.1:3"))
	if res.Code != http.StatusTooManyRequests || res.Header.Get(policy.HeaderDiagnostic) != policy.ReasonTooManyInFlight || res.Header.Get("Retry-After") != "1" {
		t.Fatalf("b with a holding the amount: %d %v", res.Code, res.Header)
	}
	if got := policytest.Run(b.pol, policytest.Request("192.0.2.2:1")).Code; got != http.StatusOK {
		t.Fatalf("another client on b: %d", got)
	}
	if got := a.code(); got != http.StatusTooManyRequests {
		t.Fatalf("a over its own amount: %d", got)
	}
	release()
	a.flush()
	b.flush()
	if got := b.code(); got != http.StatusOK {
		t.Fatalf("b after a's requests ended: %d", got)
	}
	// Every key idle on both: the lists empty, the flushes ask nothing.
	a.flush()
	b.flush()
	for _, n := range []*node{a, b} {
		if l := len(n.pol.route.list); l != 0 {
			t.Fatalf("%d idle counters still listed", l)
		}
	}
	calls := store.Calls()
	a.flush()
	if store.Calls() != calls {
		t.Fatal("a healthy idle replica asked the store")
	}
}

// One in flight on each of three replicas with amount 2: the third
// replica, having heard of the two, refuses.
func TestFleetInFlightSumOfOthers(t *testing.T) {
	store := newFakeStore()
	ns := []*node{newNode(t, store, "a", 2), newNode(t, store, "b", 2), newNode(t, store, "c", 2)}
	r1, r2 := ns[0].hold(t, 1), ns[1].hold(t, 1)
	defer r1()
	defer r2()
	if got := ns[2].code(); got != http.StatusOK {
		t.Fatalf("c before any reconciliation: %d", got)
	}
	for _, n := range ns {
		n.flush()
	}
	if got := ns[2].code(); got != http.StatusTooManyRequests {
		t.Fatalf("c with one in flight on a and b (amount 2): %d", got)
	}
}

// The store failing makes the limit local (each replica up to amount
// alone, not open) with W059 once; the store back, the others count
// again and W059 goes.
func TestFleetInFlightStoreErrorFailsToLocal(t *testing.T) {
	store := newFakeStore()
	a, b := newNode(t, store, "a", 2), newNode(t, store, "b", 2)
	release := a.hold(t, 2)
	defer release()
	b.code()
	a.flush()
	b.flush()
	if got := b.code(); got != http.StatusTooManyRequests {
		t.Fatalf("shared: %d", got)
	}
	store.Set(errors.New("connection refused"))
	b.flush()
	if !b.fleet.Local() || b.fleet.Errors() != 1 {
		t.Fatalf("failing store: local=%v errors=%d", b.fleet.Local(), b.fleet.Errors())
	}
	b.flush()
	if got := b.diags.Codes(); got != "W059" || b.diags.Changes()[0][0].Source.Provider != DiagnosticsSource {
		t.Fatalf("diagnostics %v, want W059 once from %s", b.diags.Changes(), DiagnosticsSource)
	}
	rb := b.hold(t, 2) // local: the whole amount on b
	if got := b.code(); got != http.StatusTooManyRequests {
		t.Fatalf("local b over amount: %d (fails open)", got)
	}
	rb()
	store.Set(nil)
	b.flush()
	if got := b.diags.Codes(); b.fleet.Local() || got != "W059 -" {
		t.Fatalf("store back: local=%v diagnostics %q, want W059 cleared", b.fleet.Local(), got)
	}
	if got := b.code(); got != http.StatusTooManyRequests {
		t.Fatalf("store back, a still holding 2: %d", got)
	}
}

// What operators see of the store lost and back: the log lines and
// W059 name the in-flight limits.
func TestFleetInFlightStoreLostLogAndDiagnostic(t *testing.T) {
	store := newFakeStore()
	var log fleetsynctest.Log
	a := newNode(t, store, "a", 1, fleetsync.Options{Logger: zerolog.New(&log)})
	a.code()
	store.Set(errors.New("connection refused"))
	a.flush()
	store.Set(nil)
	a.flush()
	fleetsynctest.CheckLostAndBack(t, &log, &a.diags,
		"warn in_flight_store_lost: fleet in-flight limits are enforced locally until the breaker store answers again",
		"info in_flight_store_back: fleet in-flight limits are shared again",
		diagnostics.New(diagnostics.RateStoreLost, diagnostics.Source{Provider: "in-flight-store", ObjectName: "inFlight"}, "", "",
			"local in-flight limits", "the breaker store did not answer the in-flight reconciliation: connection refused",
			"check the --breaker-store address and the store's health"))

	b := newNodeOf(t, countsFunc(func(context.Context, []Count) ([]int64, error) { return []int64{0, 0}, nil }), 1)
	b.code()
	b.flush()
	if ch := b.diags.Changes(); len(ch) != 1 || ch[0][0].Message != "the breaker store did not answer the in-flight reconciliation: the store answered a different number of counts" {
		t.Fatalf("an answer of two counts to one: %v", ch)
	}
}

// countsFunc is a SharedCounts.
type countsFunc func(context.Context, []Count) ([]int64, error)

func (f countsFunc) Report(ctx context.Context, cs []Count) ([]int64, error) { return f(ctx, cs) }

// An idle replica whose limits are local asks the store anyway, and
// learns that it is back.
func TestFleetInFlightIdleRecovery(t *testing.T) {
	store := newFakeStore()
	a := newNode(t, store, "a", 1)
	store.Set(errors.New("timeout"))
	a.code()
	a.flush()
	if !a.fleet.Local() {
		t.Fatal("not local after a failed flush")
	}
	store.Set(nil)
	a.flush() // reports the key (idle): back, and the key is dropped
	a.flush() // nothing listed: still back
	if a.fleet.Local() {
		t.Fatal("still local after good reconciliations")
	}
}

// scope=fleet without a store is W068 and a local limit.
func TestFleetInFlightWithoutStore(t *testing.T) {
	ep := &config.Entrypoint{ID: "app@docker"}
	ep.Access.InFlight = &config.InFlight{Amount: 1, Scope: config.ScopeFleet}
	p, ds := Kind(nil).Compile(policy.Input{Entrypoint: ep, Env: policy.Env{Route: ep.ID}, State: policytest.State{}})
	if len(ds) != 1 || ds[0].Code != diagnostics.RateFleetWithoutStore || !strings.Contains(ds[0].Key+ds[0].Message, "inFlight.scope") {
		t.Fatalf("diagnostics %v, want W068 on inFlight.scope", ds)
	}
	if _, ok := p.(*Policy); !ok {
		t.Fatalf("compiled %T, want the local *Policy", p)
	}
}

// Keys per flush are bounded; the flushes take the keys in use in turn.
func TestFleetInFlightKeysPerFlushBounded(t *testing.T) {
	store := newFakeStore()
	a := newNode(t, store, "a", 5, fleetsync.Options{MaxKeysPerFlush: 2})
	for i := range 5 {
		policytest.Run(a.pol, policytest.Request("192.0.2."+string(rune('1'+i))+":1"))
	}
	a.flush()
	if a.fleet.Synced() != 2 {
		t.Fatalf("first flush synced %d keys, want 2", a.fleet.Synced())
	}
	a.flush()
	a.flush()
	if a.fleet.Synced() != 5 || len(store.counts) != 5 {
		t.Fatalf("three flushes: %d synced, %d keys in the store, want 5", a.fleet.Synced(), len(store.counts))
	}
}

// Requests and flushes at once (for go test -race): every counter is
// back at zero and unlisted once the requests ended.
func TestFleetInFlightConcurrentServeAndFlush(t *testing.T) {
	store := newFakeStore()
	a := newNode(t, store, "a", 1_000)
	stop := fleetsynctest.Flushing(a.fleet.Flush)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				if got := policytest.Run(a.pol, policytest.Request("192.0.2."+string(rune('1'+g))+":1")).Code; got != http.StatusOK {
					t.Errorf("refused: %d", got)
					return
				}
			}
		}()
	}
	wg.Wait()
	stop()
	a.flush() // reports the zeros
	a.flush() // drops the idle keys
	for k, m := range store.counts {
		if m["a"] != 0 {
			t.Fatalf("%q: the store has %d in flight, want 0", k, m["a"])
		}
	}
	if l := len(a.pol.route.list); l != 0 {
		t.Fatalf("%d counters listed after every request ended", l)
	}
}

func BenchmarkFleetInFlight(b *testing.B) {
	store := newFakeStore()
	n := &node{}
	n.fleet = NewFleet(FleetOptions{Shared: replica{store, "a"}})
	ep := &config.Entrypoint{ID: "app@docker"}
	ep.Access.InFlight = &config.InFlight{Amount: 100, Scope: config.ScopeFleet}
	p, _ := Kind(n.fleet).Compile(policy.Input{Entrypoint: ep, Env: policy.Env{Route: ep.ID}, State: policytest.State{}})
	r := policytest.Request("192.0.2.1:1")
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	b.ReportAllocs()
	for b.Loop() {
		p.Serve(nil, r, next)
	}
}
