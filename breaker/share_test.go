package breaker

import (
	"reflect"
	"testing"
	"time"
)

// TestShare drives a shared breaker through scripted steps: each step is
// an action, and the state and tally after it are checked.
func TestShare(t *testing.T) {
	type step struct {
		name string
		do   func(b *Breaker, c *fakeClock) // action
		// want
		state     State
		admitted  int   // of 5 admissions tried after the action (reported as fail), -1 = skip
		tally     Tally // taken after the admissions; compared when checkTally
		checkTal  bool
		wantEvent []string
	}
	p := Params{Threshold: 0.5, MinRequests: 4, Cooldown: time.Second, HalfOpenProbes: 2}
	fail := Outcome{Result: Failure}
	ok := Outcome{Result: Success}
	report := func(b *Breaker, os ...Outcome) {
		for _, o := range os {
			b.Admit().Token.Report(o)
		}
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"following does not trip on its own window", []step{
			{name: "fail 10", do: func(b *Breaker, _ *fakeClock) {
				report(b, fail, fail, ok, fail, fail, fail, fail, fail, fail, fail)
			}, state: Closed, admitted: -1, checkTal: true, tally: Tally{
				Successes: 1, Failures: 9, WindowTotal: 10, WindowFailures: 9, Streak: 7, Broken: true}},
			{name: "fallback judges the same window at the next outcome", do: func(b *Breaker, _ *fakeClock) {
				b.SetFollowing(false)
				report(b, fail)
			}, state: Open, admitted: -1, wantEvent: []string{"opened:error_ratio"}},
		}},
		{"apply open, stays open past its period until told", []step{
			{name: "open", do: func(b *Breaker, _ *fakeClock) {
				b.Apply(Remote{Epoch: 2, State: Open, Rule: RuleErrorRatio, OpenFor: time.Second, Trips: 1})
			}, state: Open, admitted: 0, wantEvent: []string{"opened:error_ratio"}},
			{name: "period over", do: func(_ *Breaker, c *fakeClock) { c.Advance(2 * time.Second) },
				state: Open, admitted: 0},
			{name: "half-open, one lease", do: func(b *Breaker, _ *fakeClock) {
				b.Apply(Remote{Epoch: 3, State: HalfOpen, GrantProbes: 1})
			}, state: HalfOpen, admitted: 1, checkTal: true, wantEvent: []string{"opened:error_ratio", "half-open"},
				// one probe admitted and failed; four refused for want of a lease
				tally: Tally{Epoch: 3, Failures: 1, ProbeFailures: 1, ProbesDone: 1, WantProbes: 4}},
			{name: "the probe failure alone does not re-open", do: func(*Breaker, *fakeClock) {},
				state: HalfOpen, admitted: 0},
			{name: "a lease nobody used goes back", do: func(b *Breaker, _ *fakeClock) {
				b.Apply(Remote{Epoch: 3, State: HalfOpen, GrantProbes: 1})
			}, state: HalfOpen, admitted: -1, checkTal: true, tally: Tally{Epoch: 3, WantProbes: 5, ReturnedLeases: 1}}, // 5 refused in the step before
			{name: "returned: no admission on it", do: func(*Breaker, *fakeClock) {},
				state: HalfOpen, admitted: 0},
			{name: "a second lease", do: func(b *Breaker, _ *fakeClock) {
				b.Apply(Remote{Epoch: 3, State: HalfOpen, GrantProbes: 1})
			}, state: HalfOpen, admitted: 1},
			{name: "closed by the fleet", do: func(b *Breaker, _ *fakeClock) {
				b.Apply(Remote{Epoch: 4, State: Closed})
			}, state: Closed, admitted: 5, wantEvent: []string{"opened:error_ratio", "half-open", "closed"}},
		}},
		{"a new epoch drops window figures, keeps exact counts", []step{
			{name: "outcomes", do: func(b *Breaker, _ *fakeClock) { report(b, fail, ok) }, state: Closed, admitted: -1},
			{name: "same state, new epoch", do: func(b *Breaker, _ *fakeClock) {
				b.Apply(Remote{Epoch: 9, State: Closed})
			}, state: Closed, admitted: -1, checkTal: true,
				tally: Tally{Epoch: 9, Successes: 1, Failures: 1}},
		}},
		{"joining keeps requests under way counted", []step{
			{name: "admitted before, reported after joining", do: func(b *Breaker, _ *fakeClock) {
				d := b.Admit()
				b.Apply(Remote{Epoch: 5, State: Closed})
				d.Token.Report(ok)
			}, state: Closed, admitted: -1, checkTal: true, tally: Tally{Epoch: 5, Successes: 1, WindowTotal: 1, Broken: true}},
		}},
		{"a half-open epoch change voids earlier probes", []step{
			{name: "probe under epoch 2", do: func(b *Breaker, _ *fakeClock) {
				b.Apply(Remote{Epoch: 2, State: HalfOpen, GrantProbes: 1})
				d := b.Admit()
				b.Apply(Remote{Epoch: 3, State: HalfOpen})
				d.Token.Report(ok)
			}, state: HalfOpen, admitted: 0, checkTal: true, tally: Tally{Epoch: 3, WantProbes: 5}},
		}},
		{"fallback in open moves to half-open on the local clock", []step{
			{name: "open", do: func(b *Breaker, c *fakeClock) {
				b.Apply(Remote{Epoch: 2, State: Open, Rule: RuleErrorRatio, OpenFor: time.Second})
				c.Advance(1500 * time.Millisecond)
			}, state: Open, admitted: -1},
			{name: "fallback", do: func(b *Breaker, _ *fakeClock) { b.SetFollowing(false) },
				state: HalfOpen, admitted: 1, wantEvent: []string{"opened:error_ratio", "half-open", "opened:half_open_probe_failed"}}, // the failed probe re-opens it
		}},
		{"forced by the fleet", []step{
			{name: "forced", do: func(b *Breaker, c *fakeClock) {
				b.Apply(Remote{Epoch: 2, State: Open, Rule: RuleManual, Forced: true})
				c.Advance(time.Hour)
			}, state: Open, admitted: 0},
			{name: "fallback keeps it forced", do: func(b *Breaker, _ *fakeClock) { b.SetFollowing(false) },
				state: Open, admitted: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeClock()
			b := NewWithParams("x", p, Options{Clock: c, Rand: func() float64 { return 0 }})
			rec := &recorder{}
			b.OnTransition(rec.record)
			b.StartTally()
			b.SetFollowing(true)
			for _, s := range tt.steps {
				s.do(b, c)
				if got := b.State(); got != s.state {
					t.Fatalf("%s: state %v, want %v", s.name, got, s.state)
				}
				if s.admitted >= 0 {
					n := 0
					for range 5 {
						if d := b.Admit(); d.Admitted {
							n++
							d.Token.Report(fail)
						}
					}
					if n != s.admitted {
						t.Fatalf("%s: admitted %d of 5, want %d", s.name, n, s.admitted)
					}
				}
				if s.checkTal {
					if got := b.TakeTally(); !reflect.DeepEqual(got, s.tally) {
						t.Fatalf("%s: tally\n got %+v\nwant %+v", s.name, got, s.tally)
					}
				}
				if s.wantEvent != nil {
					if got := rec.events(); !reflect.DeepEqual(got, s.wantEvent) {
						t.Fatalf("%s: events %v, want %v", s.name, got, s.wantEvent)
					}
				}
			}
		})
	}
}

// TestTallyOffByDefault checks that a breaker nobody shares counts nothing
// into a tally and judges as before.
func TestTallyOffByDefault(t *testing.T) {
	b := NewWithParams("x", Params{MinRequests: 2}, Options{Clock: newFakeClock()})
	for range 2 {
		b.Admit().Token.Report(Outcome{Result: Failure})
	}
	if got := b.TakeTally(); !got.Empty() {
		t.Fatalf("tally %+v, want empty", got)
	}
	if b.State() != Open {
		t.Fatal("a local breaker must still trip")
	}
}
