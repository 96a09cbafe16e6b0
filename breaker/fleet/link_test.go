package fleet

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/breaker/fleet/redistest"
	"github.com/levee-proxy/levee/diagnostics"
)

// TestLink: the fallback rule's state machine on an injected clock. The
// breaker joins at 0; a step is a flush ending at ms: good ("+"), failed
// ("-") or garbage ("!"), and the mode it leads to.
func TestLink(t *testing.T) {
	rule := linkRule{fallbackFlushes: 3, fallbackAfter: time.Second, rejoinFlushes: 2}
	type step struct {
		at   int // ms
		kind byte
		want linkMode
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"joins at the first good flush", []step{{0, '-', linkJoining}, {50, '-', linkJoining}, {100, '+', linkFleet}}},
		{"a store gone from the join on", []step{{50, '-', linkJoining}, {500, '-', linkJoining}, {1000, '-', linkLocal},
			{1050, '+', linkLocal}, {1100, '+', linkFleet}}},
		{"one late flush keeps the fleet", []step{{0, '+', linkFleet}, {50, '-', linkLate}, {100, '+', linkFleet}}},
		{"many failures within the time stay late", []step{{0, '+', linkFleet},
			{50, '-', linkLate}, {100, '-', linkLate}, {150, '-', linkLate}, {200, '-', linkLate}, {999, '-', linkLate}}},
		{"time alone is not enough", []step{{0, '+', linkFleet}, {1500, '-', linkLate}, {1550, '-', linkLate}, {1600, '-', linkLocal}}},
		{"count and time: local", []step{{0, '+', linkFleet},
			{50, '-', linkLate}, {500, '-', linkLate}, {1000, '-', linkLocal}}},
		{"a good flush restarts both counts", []step{{0, '+', linkFleet},
			{50, '-', linkLate}, {900, '-', linkLate}, {950, '+', linkFleet}, {1000, '-', linkLate}, {1100, '-', linkLate}, {1900, '-', linkLate},
			{1950, '-', linkLocal}}},
		{"rejoins after rejoinFlushes good ones in a row", []step{{0, '+', linkFleet},
			{400, '-', linkLate}, {800, '-', linkLate}, {1200, '-', linkLocal},
			{1250, '+', linkLocal}, {1300, '-', linkLocal}, {1350, '+', linkLocal}, {1400, '+', linkFleet}}},
		{"local stays local on failures", []step{{0, '+', linkFleet},
			{400, '-', linkLate}, {800, '-', linkLate}, {1200, '-', linkLocal}, {5000, '-', linkLocal}}},
		{"garbage falls back at once", []step{{0, '+', linkFleet}, {50, '!', linkLocal}, {100, '+', linkLocal}, {150, '+', linkFleet}}},
		{"garbage before joining", []step{{0, '!', linkLocal}, {50, '+', linkLocal}, {100, '+', linkFleet}}},
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := link{lastGood: t0} // joined at t0
			for i, st := range tc.steps {
				now := t0.Add(time.Duration(st.at) * time.Millisecond)
				switch st.kind {
				case '+':
					l.observe(true, now, rule)
				case '-':
					l.observe(false, now, rule)
				case '!':
					l.fallBack()
				}
				if l.mode != st.want {
					t.Fatalf("step %d (%c at %dms): mode %v, want %v", i, st.kind, st.at, l.mode, st.want)
				}
			}
		})
	}
}

// TestStallsKeepTheFleetState: three replicas flushing every 50 ms, the
// fleet half-open with its one probe in flight; the store stalls for
// 150 ms three times (three flush timeouts each). No replica falls back,
// so none grants itself a probe slot: requests asked of every replica all
// along reach the "backend" (are admitted) exactly once, the probe.
func TestStallsKeepTheFleetState(t *testing.T) {
	srv := redistest.Start(t)
	p := fleetParams
	p.ProbeTimeout = time.Minute // the probe's lease outlives the test
	var rs []*replica
	for range 3 {
		rs = append(rs, newReplicaOpts(t, srv.URL(), "stall", p, Options{FlushInterval: 50 * time.Millisecond}))
	}
	eventually(t, "all follow", func() bool { return rs[0].b.Following() && rs[1].b.Following() && rs[2].b.Following() })
	report(rs[0].b, 40, breaker.Failure)
	for i, r := range rs {
		eventually(t, fmt.Sprintf("replica %d half-open", i), func() bool { return r.b.State() == breaker.HalfOpen })
	}

	var admitted atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if d := r.b.Admit(); d.Admitted {
					admitted.Add(1) // never reported: the probe is in flight
				}
				time.Sleep(time.Millisecond) // pacing the load, not synchronising
			}
		}()
	}
	eventually(t, "the probe", func() bool { return admitted.Load() > 0 })
	for range 3 {
		srv.Stall(150 * time.Millisecond)
		errs := value(rs[0].s.metrics.errors)
		if errs == 0 {
			t.Fatal("no flush failed during a 150 ms stall: the test does not stall the store")
		}
		for _, r := range rs {
			flushes := flushCount(r.s)
			eventually(t, "flushes after the stall", func() bool { return flushCount(r.s) >= flushes+3 })
		}
	}
	for i, r := range rs {
		if !r.b.Following() || r.b.State() != breaker.HalfOpen {
			t.Errorf("replica %d after the stalls: following %v, state %v; want following, half-open", i, r.b.Following(), r.b.State())
		}
		if got := r.codes(); len(got) != 0 {
			t.Errorf("replica %d diagnostics %v after 150 ms stalls, want none", i, got)
		}
	}
	if n := admitted.Load(); n != 1 {
		t.Fatalf("%d probes admitted in one half-open period with HalfOpenProbes=1", n)
	}
}

func flushCount(s *Store) uint64 {
	var h dto.Metric
	_ = s.metrics.flushSeconds.Write(&h)
	return h.GetHistogram().GetSampleCount()
}

// TestStoreGoneByTheRule: a stopped store is late (the breaker keeps the
// fleet's open state and its diagnostics stay quiet) until
// FallbackFlushes failures spanning FallbackAfter; then the breaker judges
// locally (W075). Back, it rejoins after RejoinFlushes good flushes.
func TestStoreGoneByTheRule(t *testing.T) {
	srv := redistest.Start(t)
	const after = 300 * time.Millisecond
	r := newReplicaOpts(t, srv.URL(), "gone", fleetParams, Options{FlushInterval: time.Hour, Timeout: time.Second,
		FallbackFlushes: 2, FallbackAfter: after, RejoinFlushes: 2})
	flushAll(r)
	report(r.b, 40, breaker.Failure)
	flushAll(r)
	eventually(t, "open", func() bool { return r.b.State() == breaker.Open })
	srv.Stop()
	stopped := time.Now()
	flushAll(r)
	flushAll(r)
	if time.Since(stopped) < after {
		if !r.b.Following() || len(r.codes()) != 0 {
			t.Fatalf("two failed flushes within %v: following %v, diagnostics %v; want the fleet kept", after, r.b.Following(), r.codes())
		}
	}
	eventually(t, "the fallback", func() bool {
		flushAll(r)
		return !r.b.Following()
	})
	if waited := time.Since(stopped); waited < after {
		t.Fatalf("fell back %v after the store stopped, before FallbackAfter %v", waited, after)
	}
	if got := r.codes(); len(got) != 1 || got[0] != diagnostics.StoreUnreachable {
		t.Fatalf("diagnostics %v after the fallback, want [W075]", got)
	}
	srv.Restart()
	eventually(t, "a good flush", func() bool {
		flushAll(r)
		return value(r.s.metrics.fallback.WithLabelValues("gone")) == 1 && r.s.member("gone").goodFlushes() == 1
	})
	if r.b.Following() {
		t.Fatal("rejoined after one good flush, RejoinFlushes is 2")
	}
	flushAll(r)
	if !r.b.Following() || len(r.codes()) != 0 {
		t.Fatalf("after two good flushes: following %v, diagnostics %v", r.b.Following(), r.codes())
	}
}

func (m *member) goodFlushes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.link.goods
}

// TestLateStoreTakesBackUnusedLeases: a lease the replica holds unused
// when a flush fails goes back with that flush's batch, and is not used
// while the store is late: the store may expire it before it answers
// again, and hand it to another replica.
func TestLateStoreTakesBackUnusedLeases(t *testing.T) {
	srv := redistest.Start(t)
	p := fleetParams
	p.ProbeTimeout = time.Minute
	var rs []*replica
	for range 3 {
		rs = append(rs, newReplicaOpts(t, srv.URL(), "lease", p, Options{FlushInterval: time.Hour, Timeout: time.Second}))
	}
	flushAll(rs...)
	tripFleet(t, rs)
	r := rs[0]
	if d := r.b.Admit(); d.Admitted {
		t.Fatal("a probe before any lease")
	}
	r.s.Flush(context.Background()) // asks for a lease, gets it
	srv.Stop()
	r.s.Flush(context.Background()) // fails: late
	if !r.b.Following() {
		t.Fatal("one failed flush made the replica judge locally")
	}
	if d := r.b.Admit(); d.Admitted {
		t.Fatal("a probe on a lease held through a failed flush")
	}
}
