package ratelimit

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/fleetsync"
	"github.com/levee-proxy/levee/router/policy/internal/fleetsynctest"
	"github.com/levee-proxy/levee/router/policy/internal/policytest"
)

// fakeRedis models the store's script (package fleetstore) in Go: one
// bucket per route and key, refilled by the store's clock, and the
// replicas that reconciled each route within live.
type fakeRedis struct {
	fleetsynctest.Outage
	mu      sync.Mutex
	clock   *policytest.Clock
	live    time.Duration
	buckets map[string]*fakeBucket
	members map[string]map[string]time.Time
}

type fakeBucket struct {
	tokens float64
	ts     time.Time
}

func newFakeRedis(clk *policytest.Clock) *fakeRedis {
	return &fakeRedis{clock: clk, live: time.Second, buckets: map[string]*fakeBucket{}, members: map[string]map[string]time.Time{}}
}

// replica is one replica's view of the fake store.
type replica struct {
	store *fakeRedis
	name  string
}

func (r replica) Reconcile(_ context.Context, spends []Spend) ([]Budget, error) {
	s := r.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.Call(); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	out := make([]Budget, len(spends))
	for i, sp := range spends {
		id := sp.Route + "\x00" + sp.Key
		b := s.buckets[id]
		if b == nil {
			b = &fakeBucket{tokens: float64(sp.Burst), ts: now}
			s.buckets[id] = b
		}
		b.tokens = min(float64(sp.Burst), b.tokens+now.Sub(b.ts).Seconds()*sp.Rate) - float64(sp.Spent)
		b.tokens = max(b.tokens, -float64(sp.Burst))
		b.ts = now
		m := s.members[sp.Route]
		if m == nil {
			m = map[string]time.Time{}
			s.members[sp.Route] = m
		}
		m[r.name] = now
		n := 0
		for _, t := range m {
			if now.Sub(t) <= s.live {
				n++
			}
		}
		out[i] = Budget{Tokens: b.tokens, Replicas: n}
	}
	return out, nil
}

// node is one replica: its Fleet and its compiled fleet policy.
type node struct {
	fleet *Fleet
	pol   policy.Policy
	diags fleetsynctest.Diagnostics
}

func newNode(t *testing.T, store *fakeRedis, name string, clk *policytest.Clock, cfg config.RateLimit) *node {
	t.Helper()
	return newNodeOf(t, replica{store, name}, clk, cfg, zerolog.Nop())
}

// newNodeOf is a replica of the store shared, logging to log.
func newNodeOf(t *testing.T, shared SharedBuckets, clk *policytest.Clock, cfg config.RateLimit, log zerolog.Logger) *node {
	t.Helper()
	n := &node{}
	n.fleet = NewFleet(FleetOptions{Shared: shared, Now: clk.Now,
		Options: fleetsync.Options{FlushInterval: 100 * time.Millisecond, OnDiagnostics: n.diags.Report, Logger: log}})
	cfg.Scope = config.ScopeFleet
	ep := &config.Entrypoint{ID: "app@docker"}
	ep.Access.RateLimit = &cfg
	p, ds := Kind(n.fleet).Compile(policy.Input{Entrypoint: ep, Env: policy.Env{Route: ep.ID, Now: clk.Now}, State: policytest.State{}})
	if len(ds) != 0 {
		t.Fatalf("compile: %v", ds)
	}
	if _, ok := p.(*FleetPolicy); !ok {
		t.Fatalf("compiled %T, want *FleetPolicy", p)
	}
	n.pol = p
	return n
}

// try sends k requests from one client and returns how many were
// admitted.
func (n *node) try(k int) int {
	ok := 0
	for range k {
		if policytest.Run(n.pol, policytest.Request("192.0.2.1:1")).Code == http.StatusOK {
			ok++
		}
	}
	return ok
}

// run drives the nodes for d: every 10ms each sends perTick requests,
// every 100ms each flushes. It returns the requests admitted per node.
func run(clk *policytest.Clock, nodes []*node, d time.Duration, perTick int) []int {
	got := make([]int, len(nodes))
	for tick := 0; time.Duration(tick)*10*time.Millisecond < d; tick++ {
		clk.Advance(10 * time.Millisecond)
		for i, n := range nodes {
			got[i] += n.try(perTick)
		}
		if tick%10 == 9 {
			for _, n := range nodes {
				n.fleet.Flush(context.Background())
			}
		}
	}
	return got
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// Replicas spending from one fleet limit admit the limit together, not
// once each: within the burst plus a flush interval's share per replica.
func TestFleetReplicasShareOneLimit(t *testing.T) {
	cfg := config.RateLimit{Average: 20, Period: time.Second, Burst: 10, SourceCriterion: config.CriterionIP}
	for _, c := range []struct {
		name     string
		replicas int
		perTick  []int // requests per 10ms tick, per replica (cycled)
	}{
		{"two busy replicas", 2, []int{5}},
		{"three busy replicas", 3, []int{5}},
		{"one busy, one light", 2, []int{5, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := &policytest.Clock{T: time.Unix(1_000_000, 0)}
			store := newFakeRedis(clk)
			var nodes []*node
			for i := range c.replicas {
				nodes = append(nodes, newNode(t, store, string(rune('a'+i)), clk, cfg))
			}
			const secs = 5
			got := make([]int, c.replicas)
			for tick := range secs * 100 {
				clk.Advance(10 * time.Millisecond)
				for i, n := range nodes {
					got[i] += n.try(c.perTick[i%len(c.perTick)])
				}
				if tick%10 == 9 {
					for _, n := range nodes {
						n.fleet.Flush(context.Background())
					}
				}
			}
			total := sum(got)
			// The bound of the docs: the limit, the burst, and each
			// replica's whole local bucket before its first
			// reconciliation plus one flush interval's traffic
			// (0.1s x average).
			upper := cfg.Average*secs + cfg.Burst + c.replicas*(cfg.Burst+cfg.Average/10)
			lower := cfg.Average * secs * 8 / 10
			if total > upper || total < lower {
				t.Fatalf("admitted %v = %d over %ds, want %d-%d (the fleet limit is %d/s, burst %d)", got, total, secs, lower, upper, cfg.Average, cfg.Burst)
			}
			t.Logf("admitted %v = %d (limit %d)", got, total, cfg.Average*secs+cfg.Burst)
		})
	}
}

// A fleet bucket emptied by the replicas refills at the average.
func TestFleetRefill(t *testing.T) {
	cfg := config.RateLimit{Average: 10, Period: time.Second, Burst: 10, SourceCriterion: config.CriterionIP}
	clk := &policytest.Clock{T: time.Unix(1_000_000, 0)}
	store := newFakeRedis(clk)
	a, b := newNode(t, store, "a", clk, cfg), newNode(t, store, "b", clk, cfg)
	nodes := []*node{a, b}
	run(clk, nodes, time.Second, 5) // both spend everything
	if got := run(clk, nodes, 200*time.Millisecond, 5); sum(got) > 6 {
		t.Fatalf("an emptied fleet bucket admitted %v in 0.2s, want about 2", got)
	}
	// 2s idle (one flush each to learn): the fleet refills to its burst.
	clk.Advance(2 * time.Second)
	for _, n := range nodes {
		n.fleet.Flush(context.Background())
	}
	if got := sum(run(clk, nodes, 100*time.Millisecond, 20)); got < cfg.Burst/2 || got > cfg.Burst+4 {
		t.Fatalf("after 2s idle the fleet admitted %d at once, want about its burst %d", got, cfg.Burst)
	}
}

// The store failing makes each replica enforce the whole limit locally
// (fails to local, not open) with W059 once; the store back, the limit
// is shared again and W059 goes.
func TestFleetStoreErrorsFailToLocal(t *testing.T) {
	cfg := config.RateLimit{Average: 10, Period: time.Second, Burst: 10, SourceCriterion: config.CriterionIP}
	clk := &policytest.Clock{T: time.Unix(1_000_000, 0)}
	store := newFakeRedis(clk)
	a, b := newNode(t, store, "a", clk, cfg), newNode(t, store, "b", clk, cfg)
	nodes := []*node{a, b}
	run(clk, nodes, 2*time.Second, 5)
	if got := a.diags.Codes(); a.fleet.Local() || got != "" {
		t.Fatalf("healthy store: local=%v diagnostics %q", a.fleet.Local(), got)
	}
	store.Set(errors.New("connection refused"))
	got := run(clk, nodes, 3*time.Second, 5)
	if !a.fleet.Local() || !b.fleet.Local() {
		t.Fatal("failing store: the limits are not local")
	}
	if got := a.diags.Codes(); got != "W059" || a.diags.Changes()[0][0].Source.Provider != DiagnosticsSource {
		t.Fatalf("diagnostics %v, want W059 once from %s", a.diags.Changes(), DiagnosticsSource)
	}
	if a.fleet.Errors() < 20 {
		t.Fatalf("%d errors counted over 30 failed flushes", a.fleet.Errors())
	}
	// Each replica alone: about the whole limit each (not open: not
	// every one of the 1,500 requests each sent).
	for i, g := range got {
		if g < cfg.Average*3*8/10 || g > cfg.Average*3+2*cfg.Burst {
			t.Fatalf("replica %d admitted %d in 3s with the store down, want about %d (the whole limit, locally)", i, g, cfg.Average*3)
		}
	}
	store.Set(nil)
	run(clk, nodes, time.Second, 5)
	if got := a.diags.Codes(); a.fleet.Local() || got != "W059 -" {
		t.Fatalf("store back: local=%v diagnostics %q, want W059 cleared", a.fleet.Local(), got)
	}
	if got := sum(run(clk, nodes, 3*time.Second, 5)); got > cfg.Average*3+2*(cfg.Burst+cfg.Average/10) {
		t.Fatalf("store back: admitted %d in 3s, want the shared limit (about %d)", got, cfg.Average*3)
	}
}

// What operators see of the store lost and back: the log lines and
// W059 name the rate limits.
func TestFleetStoreLostLogAndDiagnostic(t *testing.T) {
	clk := &policytest.Clock{T: time.Unix(1_000_000, 0)}
	store := newFakeRedis(clk)
	var log fleetsynctest.Log
	cfg := config.RateLimit{Average: 10, Period: time.Second, Burst: 10}
	a := newNodeOf(t, replica{store, "a"}, clk, cfg, zerolog.New(&log))
	a.try(1)
	store.Set(errors.New("connection refused"))
	a.fleet.Flush(t.Context())
	store.Set(nil)
	a.fleet.Flush(t.Context())
	fleetsynctest.CheckLostAndBack(t, &log, &a.diags,
		"warn rate_limit_store_lost: fleet rate limits are enforced locally until the breaker store answers again",
		"info rate_limit_store_back: fleet rate limits are shared again",
		diagnostics.New(diagnostics.RateStoreLost, diagnostics.Source{Provider: "rate-limit-store", ObjectName: "rateLimit"}, "", "",
			"local rate limits", "the breaker store did not answer the rate-limit reconciliation: connection refused",
			"check the --breaker-store address and the store's health"))

	b := newNodeOf(t, bucketsFunc(func(context.Context, []Spend) ([]Budget, error) { return nil, nil }), clk, cfg, zerolog.Nop())
	b.try(1)
	b.fleet.Flush(t.Context())
	if ch := b.diags.Changes(); len(ch) != 1 || ch[0][0].Message != "the breaker store did not answer the rate-limit reconciliation: the store answered a different number of budgets" {
		t.Fatalf("an answer of no budgets to one spend: %v", ch)
	}
}

// bucketsFunc is a SharedBuckets.
type bucketsFunc func(context.Context, []Spend) ([]Budget, error)

func (f bucketsFunc) Reconcile(ctx context.Context, sp []Spend) ([]Budget, error) { return f(ctx, sp) }

// An idle replica whose limits are local asks the store anyway, and
// learns that it is back.
func TestFleetIdleRecovery(t *testing.T) {
	clk := &policytest.Clock{T: time.Unix(1_000_000, 0)}
	store := newFakeRedis(clk)
	a := newNode(t, store, "a", clk, config.RateLimit{Average: 10, Period: time.Second, Burst: 10})
	a.try(1)
	store.Set(errors.New("timeout"))
	a.fleet.Flush(context.Background())
	if !a.fleet.Local() {
		t.Fatal("not local after a failed flush")
	}
	store.Set(nil)
	a.fleet.Flush(context.Background())
	if a.fleet.Local() {
		t.Fatal("still local after a good (empty) reconciliation")
	}
	calls := store.Calls()
	a.fleet.Flush(context.Background())
	if store.Calls() != calls {
		t.Fatal("a healthy idle replica asked the store")
	}
}

// Keys synced per flush are bounded; the rest wait for later flushes
// with their spending kept.
func TestFleetKeysPerFlushBounded(t *testing.T) {
	clk := &policytest.Clock{T: time.Unix(1_000_000, 0)}
	store := newFakeRedis(clk)
	n := &node{}
	n.fleet = NewFleet(FleetOptions{Shared: replica{store, "a"}, Now: clk.Now, Options: fleetsync.Options{MaxKeysPerFlush: 3}})
	ep := &config.Entrypoint{ID: "app@docker"}
	ep.Access.RateLimit = &config.RateLimit{Average: 10, Period: time.Second, Burst: 10, Scope: config.ScopeFleet}
	p, _ := Kind(n.fleet).Compile(policy.Input{Entrypoint: ep, Env: policy.Env{Route: ep.ID, Now: clk.Now}, State: policytest.State{}})
	for i := range 5 {
		policytest.Run(p, policytest.Request("192.0.2."+string(rune('1'+i))+":1"))
	}
	n.fleet.Flush(context.Background())
	if n.fleet.Synced() != 3 || len(store.buckets) != 3 {
		t.Fatalf("first flush synced %d keys (%d in the store), want 3", n.fleet.Synced(), len(store.buckets))
	}
	n.fleet.Flush(context.Background())
	if n.fleet.Synced() != 5 || len(store.buckets) != 5 {
		t.Fatalf("second flush: %d synced, %d in the store, want 5", n.fleet.Synced(), len(store.buckets))
	}
	for id, b := range store.buckets {
		if b.tokens != 9 {
			t.Fatalf("%q: %v tokens, want 9 (one request charged)", id, b.tokens)
		}
	}
}

// scope=fleet without a store is W068 and a local limit.
func TestFleetWithoutStore(t *testing.T) {
	ep := &config.Entrypoint{ID: "app@docker"}
	ep.Access.RateLimit = &config.RateLimit{Average: 1, Period: time.Hour, Burst: 1, Scope: config.ScopeFleet}
	p, ds := Kind(nil).Compile(policy.Input{Entrypoint: ep, Env: policy.Env{Route: ep.ID}, State: policytest.State{}})
	if len(ds) != 1 || ds[0].Code != diagnostics.RateFleetWithoutStore {
		t.Fatalf("diagnostics %v, want W068", ds)
	}
	if _, ok := p.(*Policy); !ok {
		t.Fatalf("compiled %T, want the local *Policy", p)
	}
	if policytest.Run(p, policytest.Request("192.0.2.1:1")).Code != 200 || policytest.Run(p, policytest.Request("192.0.2.1:1")).Code != 429 {
		t.Fatal("the local limit does not apply")
	}
}

// Fleet names are the same in every process (unlike Key's seeded
// hashes), and bounded in length.
func TestFleetNamesStable(t *testing.T) {
	r := policytest.Request("192.0.2.1:1")
	r.Host = "App.Test.:80"
	r.Header.Set("X-Api-Key", string(make([]byte, 10_000)))
	for _, crit := range []string{config.CriterionIP, config.CriterionHost, "header:X-Api-Key"} {
		a, b := NewCriterion(crit, policy.Env{}), NewCriterion(crit, policy.Env{})
		na, ok1 := a.FleetName(r)
		nb, ok2 := b.FleetName(r)
		if !ok1 || !ok2 || na != nb || len(na) > 64 {
			t.Fatalf("%s: %q and %q", crit, na, nb)
		}
	}
	h := NewCriterion(config.CriterionHost, policy.Env{})
	r2 := policytest.Request("192.0.2.1:1")
	r2.Host = "app.test"
	n1, _ := h.FleetName(r)
	n2, _ := h.FleetName(r2)
	if n1 != n2 {
		t.Fatalf("host spellings named apart: %q %q", n1, n2)
	}
}

// Requests and flushes at once (for go test -race): every admitted
// request is charged to the store exactly once.
func TestFleetConcurrentServeAndFlush(t *testing.T) {
	clk := &policytest.Clock{T: time.Unix(1_000_000, 0)}
	store := newFakeRedis(clk)
	cfg := config.RateLimit{Average: 1_000_000, Period: time.Second, Burst: 1_000_000, SourceCriterion: config.CriterionIP}
	n := newNode(t, store, "a", clk, cfg)
	stop := fleetsynctest.Flushing(n.fleet.Flush)
	var wg sync.WaitGroup
	var admitted sync.Map
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := 0
			for range 2000 {
				r := policytest.Request("192.0.2." + string(rune('1'+g)) + ":1")
				if policytest.Run(n.pol, r).Code == http.StatusOK {
					k++
				}
			}
			admitted.Store(g, k)
		}()
	}
	wg.Wait()
	stop()
	n.fleet.Flush(context.Background())
	total := 0
	admitted.Range(func(_, v any) bool { total += v.(int); return true })
	charged := 0.0
	for _, b := range store.buckets {
		charged += float64(cfg.Burst) - b.tokens
	}
	if total != 8000 || charged != float64(total) {
		t.Fatalf("admitted %d, charged %v, want 8000 both", total, charged)
	}
}

// A key new to a replica starts with its share by the route's replica
// count, not the whole burst, once the route was reconciled.
func TestFleetNewKeyStartsWithShare(t *testing.T) {
	cfg := config.RateLimit{Average: 1, Period: time.Hour, Burst: 10, SourceCriterion: config.CriterionIP}
	clk := &policytest.Clock{T: time.Unix(1_000_000, 0)}
	store := newFakeRedis(clk)
	a, b := newNode(t, store, "a", clk, cfg), newNode(t, store, "b", clk, cfg)
	for _, n := range []*node{a, b} {
		n.try(1)
		n.fleet.Flush(context.Background())
	}
	a.try(1) // a hears of b
	a.fleet.Flush(context.Background())
	got := 0
	for range 10 {
		if policytest.Run(a.pol, policytest.Request("192.0.2.99:1")).Code == http.StatusOK {
			got++
		}
	}
	if got != 5 {
		t.Fatalf("a new key on a route of two replicas admitted %d at once, want 5 (half the burst)", got)
	}
}
