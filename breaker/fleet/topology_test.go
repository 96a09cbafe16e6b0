package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/breaker/fleet/redistest"
)

// TestTopologies runs the fleet's core (a trip on combined evidence,
// exact counts, fleet-wide control) on a Redis Cluster and through a
// Sentinel.
func TestTopologies(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"cluster", func(t *testing.T) string { return redistest.StartCluster(t, 3) }},
		{"sentinel", func(t *testing.T) string { return redistest.StartSentinel(t, redistest.Start(t)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.url(t)
			// several breakers, so that a cluster spreads them over slots
			for _, name := range []string{"a", "b", "c"} {
				rs := threeNamed(t, url, name, fleetParams)
				for _, r := range rs {
					report(r.b, 8, breaker.Success)
					report(r.b, 12, breaker.Failure)
				}
				flushAll(rs...)
				for i, r := range rs {
					eventually(t, fmt.Sprintf("%s: replica %d open", name, i), func() bool { return r.b.State() == breaker.Open })
				}
				if c := counts(t, url, rs[0].s.CountsKey(name)); c["success"] != 24 || c["failure"] != 36 {
					t.Fatalf("%s: counts %v, want success 24 failure 36", name, c)
				}
				if err := rs[2].s.Control(context.Background(), name, "close", "op"); err != nil {
					t.Fatal(err)
				}
				for i, r := range rs {
					eventually(t, fmt.Sprintf("%s: replica %d closed", name, i), func() bool { return r.b.State() == breaker.Closed })
				}
			}
		})
	}
}

// TestFleetRules: the consecutive-failures rule across batches (a batch
// with a success restarts the streak), and the slow-call rule on the
// fleet window.
func TestFleetRules(t *testing.T) {
	srv := redistest.Start(t)
	fail := breaker.Outcome{Result: breaker.Failure}
	ok := breaker.Outcome{Result: breaker.Success}
	t.Run("consecutive failures", func(t *testing.T) {
		p := breaker.Params{Threshold: 1, MinRequests: 1000, ConsecutiveFailures: 5, Window: 10 * time.Second, Cooldown: time.Minute}
		a, b := newReplica(t, srv.URL(), "cf", p, 0), newReplica(t, srv.URL(), "cf", p, 0)
		flushAll(a, b)
		steps := []struct {
			r    *replica
			os   []breaker.Outcome
			rule string // "" = still closed
		}{
			{a, []breaker.Outcome{fail, fail, fail}, ""},     // streak 3
			{b, []breaker.Outcome{fail, ok, fail, fail}, ""}, // a success: streak 2
			{a, []breaker.Outcome{fail, fail}, ""},           // 4
			{b, []breaker.Outcome{fail}, "consecutive_failures"},
		}
		for i, s := range steps {
			for _, o := range s.os {
				s.r.b.Admit().Token.Report(o)
			}
			flushAll(s.r)
			if s.rule == "" {
				if st := s.r.b.State(); st != breaker.Closed {
					t.Fatalf("step %d: %v, want closed", i, st)
				}
				continue
			}
			eventually(t, "trip", func() bool { return a.b.State() == breaker.Open && b.b.State() == breaker.Open })
			// The observer hears of the transition after the breaker's
			// lock is released: the state can be read open just before.
			eventually(t, "the opening event", func() bool { return len(a.eventList()) > 0 })
			if got := a.eventList(); len(got) != 1 || got[0] != "opened:"+s.rule {
				t.Fatalf("events %v, want opened:%s", got, s.rule)
			}
		}
	})
	t.Run("slow calls", func(t *testing.T) {
		p := breaker.Params{Threshold: 1, MinRequests: 4, Window: 10 * time.Second, SlowCallDuration: 100 * time.Millisecond,
			SlowCallThreshold: 0.5, Cooldown: time.Minute}
		a, b := newReplica(t, srv.URL(), "slow", p, 0), newReplica(t, srv.URL(), "slow", p, 0)
		flushAll(a, b)
		slow := breaker.Outcome{Result: breaker.Success, Elapsed: 200 * time.Millisecond}
		a.b.Admit().Token.Report(slow)
		a.b.Admit().Token.Report(ok)
		b.b.Admit().Token.Report(slow)
		flushAll(a, b)
		if a.b.State() != breaker.Closed {
			t.Fatal("tripped below minRequests")
		}
		b.b.Admit().Token.Report(ok)
		flushAll(b)
		eventually(t, "slow trip", func() bool { return a.b.State() == breaker.Open })
		eventually(t, "the opening event", func() bool { return len(a.eventList()) > 0 })
		if got := a.eventList(); len(got) != 1 || got[0] != "opened:slow_calls" {
			t.Fatalf("events %v, want opened:slow_calls", got)
		}
	})
}

// TestIdleLeaseReturned: a replica granted a lease that no request used
// by its next flush gives it back, so another replica probes without
// waiting for probeTimeout.
func TestIdleLeaseReturned(t *testing.T) {
	srv := redistest.Start(t)
	p := fleetParams
	p.ProbeTimeout = time.Hour
	rs := threeNamed(t, srv.URL(), "idle", p)
	tripFleet(t, rs)
	a, b := rs[0], rs[1]
	if a.b.Admit().Admitted {
		t.Fatal("admitted a probe without a lease")
	}
	flushAll(a) // grants a lease to a
	flushAll(a) // no request took it: returned
	if b.b.Admit().Admitted {
		t.Fatal("admitted a probe without a lease")
	}
	flushAll(b)
	if !b.b.Admit().Admitted {
		t.Fatal("replica b got no lease although a returned its idle one")
	}
	if a.b.Admit().Admitted {
		t.Fatal("replica a still probes with the lease it returned")
	}
}
