package fleet

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/breaker/fleet/redistest"
	"github.com/levee-proxy/levee/diagnostics"
)

// replica is one simulated Levee process: a store and one breaker.
type replica struct {
	s       *Store
	b       *breaker.Breaker
	mu      sync.Mutex
	events  []string
	actions []string
	diags   atomic.Pointer[[]diagnostics.Diagnostic]
}

func (r *replica) record(t breaker.Transition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := t.Event()
	if t.Rule != breaker.RuleNone {
		e += ":" + t.Rule.String()
	}
	r.events = append(r.events, e)
}

func (r *replica) eventList() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func (r *replica) codes() []diagnostics.Code {
	p := r.diags.Load()
	if p == nil {
		return nil
	}
	var out []diagnostics.Code
	for _, d := range *p {
		out = append(out, d.Code)
	}
	return out
}

// newReplica starts a store on url with a manual flush (interval: an hour)
// unless interval is given, and joins a breaker named name.
func newReplica(t *testing.T, url, name string, p breaker.Params, interval time.Duration) *replica {
	t.Helper()
	if interval == 0 {
		interval = time.Hour
	}
	return newReplicaOpts(t, url, name, p, atOnce(Options{FlushInterval: interval, Timeout: time.Second}))
}

// newReplicaOpts is newReplica with the store's options (the client, Rand
// and OnDiagnostics are set here).
func newReplicaOpts(t *testing.T, url, name string, p breaker.Params, o Options) *replica {
	t.Helper()
	client, err := NewClient(url)
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{}
	o.Client, o.Rand = client, func() float64 { return 0 }
	o.OnDiagnostics = func(ds []diagnostics.Diagnostic) { r.diags.Store(&ds) }
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	r.s = s
	r.b = breaker.NewWithParams(name, p, breaker.Options{})
	r.b.OnTransition(r.record)
	s.Join(name, r.b, func(action, by string) {
		r.mu.Lock()
		r.actions = append(r.actions, action+" by "+by)
		r.mu.Unlock()
		switch action {
		case "open":
			r.b.ForceOpen()
		case "close":
			r.b.ForceClose()
		case "reset":
			r.b.Reset()
		}
	})
	return r
}

// atOnce makes a store fall back at its first failed flush and rejoin at
// its first good one: for the tests of what a fallback does rather than
// of when it happens (TestLink, TestStallsKeepTheFleetState).
func atOnce(o Options) Options {
	o.FallbackFlushes, o.FallbackAfter, o.RejoinFlushes = 1, time.Nanosecond, 1
	return o
}

func flushAll(rs ...*replica) {
	for _, r := range rs {
		r.s.Flush(context.Background())
	}
}

// eventually polls cond until it holds or 5s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func report(b *breaker.Breaker, n int, res breaker.Result) {
	for range n {
		if d := b.Admit(); d.Admitted {
			d.Token.Report(breaker.Outcome{Result: res})
		}
	}
}

func counts(t *testing.T, url, key string) map[string]int {
	t.Helper()
	c, _ := NewClient(url)
	defer c.Close()
	m, err := c.HGetAll(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for k, v := range m {
		out[k], _ = strconv.Atoi(v)
	}
	return out
}

var fleetParams = breaker.Params{Threshold: 0.5, MinRequests: 30, Window: 10 * time.Second, Cooldown: 300 * time.Millisecond, HalfOpenProbes: 1, ProbeTimeout: 400 * time.Millisecond}

func three(t *testing.T, url string, p breaker.Params) []*replica {
	return threeNamed(t, url, "app", p)
}

func threeNamed(t *testing.T, url, name string, p breaker.Params) []*replica {
	rs := []*replica{newReplica(t, url, name, p, 0), newReplica(t, url, name, p, 0), newReplica(t, url, name, p, 0)}
	flushAll(rs...) // join: follow the fleet from now on
	for i, r := range rs {
		if !r.b.Following() {
			t.Fatalf("replica %d does not follow the fleet after a flush", i)
		}
	}
	return rs
}

// TestFleetTripsOnCombinedEvidence: no replica alone has MinRequests
// outcomes, the fleet has, and its ratio trips every replica once.
func TestFleetTripsOnCombinedEvidence(t *testing.T) {
	srv := redistest.Start(t)
	rs := three(t, srv.URL(), fleetParams)
	for _, r := range rs {
		report(r.b, 8, breaker.Success)
		report(r.b, 12, breaker.Failure) // 20 each: below MinRequests alone
	}
	for _, r := range rs {
		if r.b.State() != breaker.Closed {
			t.Fatal("a replica tripped on its own evidence")
		}
	}
	flushAll(rs...)
	for i, r := range rs {
		eventually(t, fmt.Sprintf("replica %d open", i), func() bool { return r.b.State() == breaker.Open })
	}
	for i, r := range rs {
		// The observer hears of the transition after the breaker's lock
		// is released: the state can be read open just before.
		eventually(t, fmt.Sprintf("replica %d opening event", i), func() bool { return len(r.eventList()) > 0 })
		if got := r.eventList(); len(got) != 1 || got[0] != "opened:error_ratio" {
			t.Errorf("replica %d events %v, want one opened:error_ratio", i, got)
		}
	}
	c := counts(t, srv.URL(), rs[0].s.CountsKey("app"))
	if c["success"] != 24 || c["failure"] != 36 {
		t.Errorf("fleet counts %v, want success 24 failure 36", c)
	}
}

// TestExactCountsUnderConcurrency: concurrent reporters on three
// replicas flushing every 2ms; the store's counts equal what was reported.
func TestExactCountsUnderConcurrency(t *testing.T) {
	srv := redistest.Start(t)
	p := breaker.Params{Threshold: 1, MinRequests: 100_000, Window: 10 * time.Second}
	var rs []*replica
	for range 3 {
		rs = append(rs, newReplica(t, srv.URL(), "count", p, 2*time.Millisecond))
	}
	const perWorker, workers = 2000, 8
	var wg sync.WaitGroup
	for _, r := range rs {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := breaker.Success
				if w%4 == 0 {
					res = breaker.Failure
				}
				report(r.b, perWorker, res)
			}()
		}
	}
	wg.Wait()
	want := map[string]int{"success": 3 * 6 * perWorker, "failure": 3 * 2 * perWorker}
	var got map[string]int
	defer func() { t.Logf("got %v want %v", got, want) }()
	eventually(t, "exact counts", func() bool {
		got = counts(t, srv.URL(), rs[0].s.CountsKey("count"))
		return got["success"] == want["success"] && got["failure"] == want["failure"]
	})
}

// TestRetriedBatchCountedOnce sends one batch twice (a retry after a lost
// answer): the counts move once.
func TestRetriedBatchCountedOnce(t *testing.T) {
	srv := redistest.Start(t)
	r := newReplica(t, srv.URL(), "retry", fleetParams, 0)
	report(r.b, 5, breaker.Success)
	m := r.s.member("retry")
	m.mu.Lock()
	b, _ := m.nextBatch(r.s.opts.Replica, time.Now(), time.Minute)
	args := r.s.args(m, b, time.Now())
	m.mu.Unlock()
	keys := []string{m.keys[0], m.keys[1], m.keys[2], m.keys[3], m.keys[0] + ":batch:" + b.id}
	for i := range 2 {
		c := []call{{m: m, b: b, keys: keys, args: args}}
		r.s.run(context.Background(), c)
		rep, err := parseReply(c[0].cmd)
		if err != nil {
			t.Fatal(err)
		}
		if rep.dup != (i == 1) {
			t.Fatalf("send %d: dup=%v", i, rep.dup)
		}
	}
	if c := counts(t, srv.URL(), r.s.CountsKey("retry")); c["success"] != 5 {
		t.Fatalf("counts %v, want success 5", c)
	}
}

// tripFleet trips the three replicas and waits for half-open.
func tripFleet(t *testing.T, rs []*replica) {
	t.Helper()
	report(rs[0].b, 40, breaker.Failure)
	flushAll(rs...)
	for _, r := range rs {
		eventually(t, "open", func() bool { return r.b.State() == breaker.Open })
	}
	eventually(t, "half-open", func() bool {
		flushAll(rs...)
		return rs[0].b.State() == breaker.HalfOpen && rs[1].b.State() == breaker.HalfOpen && rs[2].b.State() == breaker.HalfOpen
	})
}

// TestOneProbePerHalfOpen: every replica wants probes, the fleet admits
// exactly HalfOpenProbes, and their success closes every replica.
func TestOneProbePerHalfOpen(t *testing.T) {
	srv := redistest.Start(t)
	for _, probes := range []int{1, 2} {
		t.Run(strconv.Itoa(probes), func(t *testing.T) {
			p := fleetParams
			p.HalfOpenProbes, p.SuccessesToClose, p.ProbeTimeout = probes, probes, time.Minute
			rs := threeNamed(t, srv.URL(), "p"+strconv.Itoa(probes), p)
			tripFleet(t, rs)
			var tokens []breaker.Token
			for range 5 { // rounds: ask, flush (lease demand), ask again
				for _, r := range rs {
					for range 3 {
						if d := r.b.Admit(); d.Admitted {
							tokens = append(tokens, d.Token)
						}
					}
				}
				flushAll(rs...)
			}
			if len(tokens) != probes {
				t.Fatalf("fleet admitted %d probes, want %d", len(tokens), probes)
			}
			for _, tk := range tokens {
				tk.Report(breaker.Outcome{Result: breaker.Success})
			}
			flushAll(rs...)
			for i, r := range rs {
				eventually(t, fmt.Sprintf("replica %d closed", i), func() bool { return r.b.State() == breaker.Closed })
			}
		})
	}
}

// TestDeadProbeHolderFreesItsLease: the replica holding the only lease
// stops without reporting; another replica gets a lease once probeTimeout
// has passed, not before.
func TestDeadProbeHolderFreesItsLease(t *testing.T) {
	srv := redistest.Start(t)
	rs := three(t, srv.URL(), fleetParams)
	tripFleet(t, rs)
	var holder int = -1
	eventually(t, "a lease", func() bool {
		for i, r := range rs {
			if d := r.b.Admit(); d.Admitted {
				holder = i
				return true
			}
		}
		flushAll(rs...)
		return false
	})
	_ = rs[holder].s.Close() // dies holding the lease
	leased := time.Now()
	var others []*replica
	for i, r := range rs {
		if i != holder {
			others = append(others, r)
		}
	}
	eventually(t, "a new lease", func() bool {
		for _, r := range others {
			if d := r.b.Admit(); d.Admitted {
				d.Token.Report(breaker.Outcome{Result: breaker.Success})
				return true
			}
		}
		flushAll(others...)
		return false
	})
	if waited := time.Since(leased); waited < fleetParams.ProbeTimeout-50*time.Millisecond {
		t.Fatalf("a second lease after %v, before probeTimeout %v", waited, fleetParams.ProbeTimeout)
	}
	flushAll(others...)
	for _, r := range others {
		eventually(t, "closed", func() bool { return r.b.State() == breaker.Closed })
	}
}

// TestFallbackAndRejoin: the store stops (W075, local judgement, local
// trips still work), comes back empty (rejoined, no stale trip).
func TestFallbackAndRejoin(t *testing.T) {
	srv := redistest.Start(t)
	p := fleetParams
	p.MinRequests = 10
	rs := three(t, srv.URL(), p)
	srv.Stop()
	flushAll(rs...)
	for i, r := range rs {
		if r.b.Following() {
			t.Fatalf("replica %d still follows a stopped store", i)
		}
		if got := r.codes(); len(got) != 1 || got[0] != diagnostics.StoreUnreachable {
			t.Fatalf("replica %d diagnostics %v, want [W075]", i, got)
		}
	}
	report(rs[0].b, 10, breaker.Failure) // local evidence trips locally
	if rs[0].b.State() != breaker.Open {
		t.Fatal("a local fallback breaker did not trip on its own evidence")
	}
	report(rs[1].b, 9, breaker.Success)
	srv.Restart()
	flushAll(rs...)
	for i, r := range rs {
		if !r.b.Following() || len(r.codes()) != 0 {
			t.Fatalf("replica %d not rejoined: following=%v diagnostics %v", i, r.b.Following(), r.codes())
		}
		if r.b.State() != breaker.Closed {
			t.Fatalf("replica %d state %v after rejoining an empty store, want closed", i, r.b.State())
		}
	}
	flushAll(rs...)
	c := counts(t, srv.URL(), rs[0].s.CountsKey("app"))
	if c["failure"] != 10 || c["success"] != 9 {
		t.Fatalf("counts after rejoin %v: outcomes judged locally must reach the fleet's exact counts", c)
	}
	for _, r := range rs {
		if r.b.State() != breaker.Closed {
			t.Fatal("stale local outcomes tripped the fleet after the rejoin")
		}
	}
}

// TestGarbageStore: keys of the wrong type, a flushed script cache and a
// corrupt state all end in fallback with W076 (or a transparent reload),
// never a panic; repairing the keys rejoins.
func TestGarbageStore(t *testing.T) {
	srv := redistest.Start(t)
	r := newReplica(t, srv.URL(), "g", fleetParams, 0)
	flushAll(r)
	c, _ := NewClient(srv.URL())
	defer c.Close()
	ctx := context.Background()
	keys := r.s.keys("g")
	cases := []struct {
		name    string
		break_  func() error
		repair  func() error
		garbage bool
	}{
		{"script flushed", func() error { return c.ScriptFlush(ctx).Err() }, func() error { return nil }, false},
		{"state is a string", func() error { return c.Del(ctx, keys[0]).Err() }, nil, true},
		{"window is a list", func() error { c.Del(ctx, keys[1]); return c.RPush(ctx, keys[1], "x").Err() }, func() error { return c.Del(ctx, keys[1]).Err() }, true},
		{"counts is a set", func() error { c.Del(ctx, keys[2]); return c.SAdd(ctx, keys[2], "x").Err() }, func() error { return c.Del(ctx, keys[2]).Err() }, true},
		{"state fields corrupt", func() error { return c.HSet(ctx, keys[0], "gen", "x", "thr", "nan?").Err() }, func() error { return c.Del(ctx, keys[0]).Err() }, true},
		{"state unknown", func() error { return c.HSet(ctx, keys[0], "state", "ajar").Err() }, func() error { return c.Del(ctx, keys[0]).Err() }, true},
	}
	cases[1].break_ = func() error { c.Del(ctx, keys[0]); return c.Set(ctx, keys[0], "oops", 0).Err() }
	cases[1].repair = func() error { return c.Del(ctx, keys[0]).Err() }
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.break_(); err != nil {
				t.Fatal(err)
			}
			report(r.b, 3, breaker.Success)
			flushAll(r)
			if !tc.garbage {
				if !r.b.Following() || len(r.codes()) != 0 {
					t.Fatalf("following=%v diagnostics %v; want a transparent script reload", r.b.Following(), r.codes())
				}
				return
			}
			if r.b.Following() {
				t.Fatal("still following a store that answers garbage")
			}
			if got := r.codes(); len(got) != 1 || got[0] != diagnostics.StoreGarbage {
				t.Fatalf("diagnostics %v, want [W076]", got)
			}
			if err := tc.repair(); err != nil {
				t.Fatal(err)
			}
			flushAll(r)
			if !r.b.Following() || len(r.codes()) != 0 {
				t.Fatalf("after repair: following=%v diagnostics %v", r.b.Following(), r.codes())
			}
		})
	}
}

// TestManualControlFleetWide: an action through one replica reaches every
// replica once, with its author.
func TestManualControlFleetWide(t *testing.T) {
	srv := redistest.Start(t)
	rs := three(t, srv.URL(), fleetParams)
	if err := rs[1].s.Control(context.Background(), "app", "open", "alice"); err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		eventually(t, fmt.Sprintf("replica %d forced open", i), func() bool { return r.b.Stats().Forced })
	}
	for i, r := range rs {
		r.mu.Lock()
		got := append([]string(nil), r.actions...)
		r.mu.Unlock()
		if len(got) != 1 || got[0] != "open by alice" {
			t.Errorf("replica %d actions %v, want [open by alice]", i, got)
		}
	}
	// Flushes keep it open (the store holds it), then a close releases all.
	flushAll(rs...)
	if err := rs[2].s.Control(context.Background(), "app", "close", "bob"); err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		eventually(t, fmt.Sprintf("replica %d closed", i), func() bool { return r.b.State() == breaker.Closed })
	}
	flushAll(rs...)
	for _, r := range rs {
		if r.b.State() != breaker.Closed {
			t.Fatal("a flush re-opened a breaker the operator closed")
		}
	}
}

// TestParamsMismatch: a replica with older, different parameters reports
// W077; the fleet judges with the newer set.
func TestParamsMismatch(t *testing.T) {
	srv := redistest.Start(t)
	old := newReplica(t, srv.URL(), "pm", fleetParams, 0)
	flushAll(old) // stores its params (version: now)
	p := fleetParams
	p.MinRequests = 5
	newer := newReplica(t, srv.URL(), "pm", p, 0)
	time.Sleep(2 * time.Millisecond) // versions are milliseconds: make the second one newer
	flushAll(newer, old)
	if got := old.codes(); len(got) != 1 || got[0] != diagnostics.StoreParamsMismatch {
		t.Fatalf("old replica diagnostics %v, want [W077]", got)
	}
	if got := newer.codes(); len(got) != 0 {
		t.Fatalf("newer replica diagnostics %v, want none", got)
	}
	report(old.b, 5, breaker.Failure) // 5 < the old set's 30, enough for the newer set
	flushAll(old)
	eventually(t, "trip with the newer parameters", func() bool { return old.b.State() == breaker.Open })
}

var _ = redis.Nil
