package breaker

import (
	"slices"
	"testing"
	"time"
)

// Behaviours 1, 3, 4 and 10 (closed state): each script is reported one
// outcome at a time; the breaker must stay closed until exactly tripAt
// (index into the script, -1 = never) and then open with rule.
func TestClosedStateRules(t *testing.T) {
	slow := func(p Params) Params {
		p.SlowCallDuration, p.SlowCallThreshold = 100*time.Millisecond, 0.5
		return p
	}
	cases := []struct {
		name   string
		p      Params
		script string
		tripAt int
		rule   Rule
		// window figures after the script when it does not trip
		wantTotal, wantFailures int
	}{
		{name: "no trip before minRequests", p: Params{MinRequests: 4}, script: "FFF", tripAt: -1, wantTotal: 3, wantFailures: 3},
		{name: "trips at ratio == threshold at minRequests", p: Params{MinRequests: 4}, script: "FSFS", tripAt: 3, rule: RuleErrorRatio},
		{name: "below threshold stays closed", p: Params{MinRequests: 4}, script: "FSSS", tripAt: -1, wantTotal: 4, wantFailures: 1},
		{name: "float boundary 0.3 == 3/10", p: Params{Threshold: 0.3, MinRequests: 10}, script: "SSSSSSSFFF", tripAt: 9, rule: RuleErrorRatio},
		{name: "just below 0.3", p: Params{Threshold: 0.3, MinRequests: 10}, script: "SSSSSSSSFF", tripAt: -1, wantTotal: 10, wantFailures: 2},
		{name: "oldest outcome leaves the window", p: Params{Threshold: 0.75, MinRequests: 4}, script: "FFSSSSF", tripAt: -1, wantTotal: 4, wantFailures: 1},
		{name: "sliding window trips once recent failures dominate", p: Params{Threshold: 0.75, MinRequests: 4}, script: "SSSSFFF", tripAt: 6, rule: RuleErrorRatio},
		{name: "threshold 1 needs all failures", p: Params{Threshold: 1, MinRequests: 3}, script: "FFSFFF", tripAt: 5, rule: RuleErrorRatio},
		{name: "neutral counts neither way", p: Params{MinRequests: 2}, script: "FNNNN", tripAt: -1, wantTotal: 1, wantFailures: 1},
		{name: "consecutive trips independently of the ratio", p: Params{MinRequests: 100, ConsecutiveFailures: 3}, script: "SSSSSSSSFFF", tripAt: 10, rule: RuleConsecutiveFailures},
		{name: "a success resets the streak", p: Params{MinRequests: 100, ConsecutiveFailures: 3}, script: "FFSFFSFF", tripAt: -1, wantTotal: 8, wantFailures: 6},
		{name: "neutral does not reset the streak", p: Params{MinRequests: 100, ConsecutiveFailures: 3}, script: "FFNF", tripAt: 3, rule: RuleConsecutiveFailures},
		{name: "slow calls trip at slowCallThreshold", p: slow(Params{Threshold: 1, MinRequests: 4}), script: "SsSs", tripAt: 3, rule: RuleSlowCalls},
		{name: "slow failures count as slow", p: slow(Params{Threshold: 1, MinRequests: 4}), script: "SfSs", tripAt: 3, rule: RuleSlowCalls},
		{name: "slow below threshold", p: slow(Params{Threshold: 1, MinRequests: 4}), script: "SSSs", tripAt: -1, wantTotal: 4},
		{name: "slow rule off without threshold", p: Params{Threshold: 1, MinRequests: 2, SlowCallDuration: time.Millisecond}, script: "ssss", tripAt: -1, wantTotal: 2},
		{name: "error ratio wins over slow when both fire", p: slow(Params{MinRequests: 2}), script: "ff", tripAt: 1, rule: RuleErrorRatio},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.p)
			for i := range len(tc.script) {
				h.do(h.outcome(tc.script[i]))
				want := Closed
				if tc.tripAt >= 0 && i >= tc.tripAt {
					want = Open
				}
				if got := h.b.State(); got != want {
					t.Fatalf("after %q: state %v, want %v", tc.script[:i+1], got, want)
				}
				if want == Open {
					break
				}
			}
			st := h.b.Stats()
			if tc.tripAt >= 0 {
				if st.LastTransition.Rule != tc.rule {
					t.Fatalf("rule %v, want %v", st.LastTransition.Rule, tc.rule)
				}
				return
			}
			if st.WindowTotal != tc.wantTotal || st.WindowFailures != tc.wantFailures {
				t.Fatalf("window %d/%d failures, want %d/%d", st.WindowFailures, st.WindowTotal, tc.wantFailures, tc.wantTotal)
			}
		})
	}
}

// Slow means strictly slower than slowCallDuration.
func TestSlowCallBoundary(t *testing.T) {
	h := newHarness(t, Params{Threshold: 1, MinRequests: 2, SlowCallDuration: time.Second, SlowCallThreshold: 1})
	h.do(Outcome{Result: Success, Elapsed: time.Second})
	h.do(Outcome{Result: Success, Elapsed: time.Second})
	if st := h.b.Stats(); st.WindowSlow != 0 || st.State != Closed {
		t.Fatalf("calls of exactly slowCallDuration counted slow: %+v", st)
	}
	h.do(Outcome{Result: Success, Elapsed: time.Second + 1})
	h.do(Outcome{Result: Success, Elapsed: time.Second + 1})
	h.wantState(Open)
}

// Behaviour 2: time window. Window 10s = ten 1s buckets; an outcome leaves
// the window when its bucket is ten buckets old.
func TestTimeWindow(t *testing.T) {
	type step struct {
		advance time.Duration
		script  string
	}
	cases := []struct {
		name                    string
		steps                   []step
		wantState               State
		wantTotal, wantFailures int
	}{
		{
			name:      "burst long ago does not count",
			steps:     []step{{0, "FFFF"}, {time.Minute, "F"}},
			wantState: Closed, wantTotal: 1, wantFailures: 1,
		},
		{
			name:      "outcomes within the window add up",
			steps:     []step{{0, "FFFF"}, {5 * time.Second, "F"}},
			wantState: Open,
		},
		{
			name:      "last instant of the oldest bucket still counts",
			steps:     []step{{500 * time.Millisecond, "FFFF"}, {9499 * time.Millisecond, "F"}}, // t=9.999s
			wantState: Open,
		},
		{
			name:      "bucket boundary: the oldest bucket drops at 10s",
			steps:     []step{{500 * time.Millisecond, "FFFF"}, {9500 * time.Millisecond, "F"}}, // t=10s
			wantState: Closed, wantTotal: 1, wantFailures: 1,
		},
		{
			name:      "partial ageing keeps recent buckets",
			steps:     []step{{0, "SS"}, {3 * time.Second, "FF"}, {8 * time.Second, "F"}}, // t=11s: SS gone, FF (t=3s) kept
			wantState: Closed, wantTotal: 3, wantFailures: 3,
		},
		{
			name:      "successes age out, letting failures trip",
			steps:     []step{{0, "SSSSSSS"}, {9 * time.Second, "FFF"}, {time.Second, "FF"}},
			wantState: Open,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Params{MinRequests: 5, Window: 10 * time.Second})
			for _, s := range tc.steps {
				h.clock.Advance(s.advance)
				for i := range len(s.script) {
					h.do(h.outcome(s.script[i]))
				}
			}
			st := h.b.Stats()
			if st.State != tc.wantState {
				t.Fatalf("state %v, want %v (window %d/%d)", st.State, tc.wantState, st.WindowFailures, st.WindowTotal)
			}
			if tc.wantState == Closed && (st.WindowTotal != tc.wantTotal || st.WindowFailures != tc.wantFailures) {
				t.Fatalf("window %d/%d failures, want %d/%d", st.WindowFailures, st.WindowTotal, tc.wantFailures, tc.wantTotal)
			}
		})
	}
}

// Behaviour 5: while open, every request is rejected with the whole
// seconds until half-open, rounded up, at least 1s.
func TestOpenRejectsWithRetryAfter(t *testing.T) {
	cases := []struct {
		cooldown time.Duration
		elapsed  time.Duration
		want     time.Duration
	}{
		{10 * time.Second, 0, 10 * time.Second},
		{10 * time.Second, 500 * time.Millisecond, 10 * time.Second},
		{10 * time.Second, time.Second, 9 * time.Second},
		{10 * time.Second, 9200 * time.Millisecond, time.Second},
		{10 * time.Second, 9999 * time.Millisecond, time.Second},
		{2500 * time.Millisecond, 0, 3 * time.Second},
		{300 * time.Millisecond, 0, time.Second},
	}
	for _, tc := range cases {
		h := newHarness(t, Params{MinRequests: 1, Cooldown: tc.cooldown})
		h.trip()
		h.clock.Advance(tc.elapsed)
		for range 3 {
			d := h.b.Admit()
			if d.Admitted || d.RetryAfter != tc.want {
				t.Fatalf("cooldown %v after %v: decision %+v, want rejected with %v", tc.cooldown, tc.elapsed, d, tc.want)
			}
			d.Token.Report(Outcome{Result: Success}) // a rejected decision's token is inert
		}
		if st := h.b.Stats(); st.State != Open || st.Rejected != 3 || st.RetryAfter != tc.want {
			t.Fatalf("stats %+v", st)
		}
	}
	// Once the cooldown is over the next request is a probe.
	h := newHarness(t, Params{MinRequests: 1, Cooldown: 10 * time.Second})
	h.trip()
	h.clock.Advance(10 * time.Second)
	if d := h.b.Admit(); !d.Admitted || !d.Token.Probe() {
		t.Fatalf("after cooldown: %+v, want a probe", d)
	}
}

// Behaviour 6: backoff doubles per consecutive trip up to maxCooldown and
// restarts after a full close.
func TestBackoff(t *testing.T) {
	h := newHarness(t, Params{MinRequests: 1, Cooldown: time.Second, MaxCooldown: 5 * time.Second})
	h.trip()
	var got []time.Duration
	for range 5 {
		st := h.b.Stats()
		got = append(got, st.LastTransition.RetryAfter)
		// Not half-open a nanosecond early.
		h.clock.Advance(st.LastTransition.RetryAfter - 1)
		h.wantState(Open)
		h.clock.Advance(1)
		h.wantState(HalfOpen)
		h.fail(1) // failed probe re-opens with the next backoff step
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	if !slices.Equal(got, want) {
		t.Fatalf("open durations %v, want %v", got, want)
	}
	h.toHalfOpen()
	h.succeed(1)
	h.wantState(Closed)
	h.trip()
	if d := h.b.Stats().LastTransition.RetryAfter; d != time.Second {
		t.Fatalf("after a full close the open duration is %v, want the base cooldown 1s", d)
	}
}

// Behaviour 7: half-open admits exactly halfOpenProbes at a time, rejects
// the rest with 1s, closes after successesToClose consecutive successes.
func TestHalfOpen(t *testing.T) {
	p := Params{MinRequests: 2, Cooldown: 10 * time.Second, HalfOpenProbes: 3, SuccessesToClose: 2}

	t.Run("probe slots and closing", func(t *testing.T) {
		h := newHarness(t, p)
		h.trip()
		h.toHalfOpen()
		var probes []Token
		for range 3 {
			d := h.b.Admit()
			if !d.Admitted || !d.Token.Probe() {
				t.Fatalf("probe not admitted: %+v", d)
			}
			probes = append(probes, d.Token)
		}
		for range 2 {
			if d := h.b.Admit(); d.Admitted || d.RetryAfter != time.Second {
				t.Fatalf("beyond the probe slots: %+v, want rejected with 1s", d)
			}
		}
		if st := h.b.Stats(); st.ProbesInFlight != 3 {
			t.Fatalf("probes in flight %d", st.ProbesInFlight)
		}
		probes[0].Report(Outcome{Result: Success})
		h.wantState(HalfOpen)
		// A freed slot admits the next request.
		d := h.b.Admit()
		if !d.Admitted || !d.Token.Probe() {
			t.Fatalf("freed slot not reused: %+v", d)
		}
		probes[1].Report(Outcome{Result: Success})
		h.wantState(Closed)
		st := h.b.Stats()
		if st.WindowTotal != 0 || st.ConsecutiveFailures != 0 || st.Trips != 0 {
			t.Fatalf("close did not clear window and counters: %+v", st)
		}
		// Probes of the half-open generation reported after closing are ignored.
		probes[2].Report(Outcome{Result: Failure})
		d.Token.Report(Outcome{Result: Failure})
		h.wantState(Closed)
		if got := h.b.Stats().WindowTotal; got != 0 {
			t.Fatalf("late probe outcomes entered the closed window: %d", got)
		}
		if ev := h.rec.events(); !slices.Equal(ev, []string{"opened:error_ratio", "half-open", "closed"}) {
			t.Fatalf("events %v", ev)
		}
	})

	t.Run("successes must be consecutive", func(t *testing.T) {
		h := newHarness(t, Params{MinRequests: 1, SuccessesToClose: 2})
		h.trip()
		h.toHalfOpen()
		h.succeed(1)
		h.do(Outcome{Result: Neutral}) // neutral neither closes nor re-opens
		h.wantState(HalfOpen)
		h.succeed(1)
		h.wantState(Closed)
	})

	t.Run("any probe failure re-opens", func(t *testing.T) {
		h := newHarness(t, p)
		h.trip()
		h.toHalfOpen()
		a, b := h.b.Admit().Token, h.b.Admit().Token
		a.Report(Outcome{Result: Success})
		b.Report(Outcome{Result: Failure})
		h.wantState(Open)
		if r := h.b.Stats().LastTransition.Rule; r != RuleHalfOpenProbeFailed {
			t.Fatalf("rule %v", r)
		}
	})

	t.Run("slow probe counts as failed", func(t *testing.T) {
		h := newHarness(t, Params{Threshold: 1, MinRequests: 1, SlowCallDuration: time.Second, SlowCallThreshold: 1})
		h.trip()
		h.toHalfOpen()
		h.do(Outcome{Result: Success, Elapsed: 2 * time.Second})
		h.wantState(Open)
	})

	t.Run("neutral frees the slot", func(t *testing.T) {
		h := newHarness(t, Params{MinRequests: 1})
		h.trip()
		h.toHalfOpen()
		tok := h.b.Admit().Token
		if h.b.Admit().Admitted {
			t.Fatal("second probe admitted with one slot")
		}
		tok.Report(Outcome{Result: Neutral})
		h.wantState(HalfOpen)
		if !h.b.Admit().Admitted {
			t.Fatal("neutral outcome did not free the probe slot")
		}
	})
}

// Behaviour 8: an unreported probe frees its slot after probeTimeout; its
// late report is ignored.
func TestProbeTimeout(t *testing.T) {
	h := newHarness(t, Params{MinRequests: 1, Cooldown: 10 * time.Second, ProbeTimeout: 5 * time.Second})
	h.trip()
	h.toHalfOpen()
	hung := h.b.Admit()
	if !hung.Admitted {
		t.Fatal("probe rejected")
	}
	h.clock.Advance(5*time.Second - 1)
	if h.b.Admit().Admitted {
		t.Fatal("slot freed before probeTimeout")
	}
	h.clock.Advance(1)
	next := h.b.Admit()
	if !next.Admitted || !next.Token.Probe() {
		t.Fatalf("slot not freed after probeTimeout: %+v", next)
	}
	hung.Token.Report(Outcome{Result: Success}) // late: must not close
	h.wantState(HalfOpen)
	hung.Token.Report(Outcome{Result: Failure}) // late: must not re-open
	h.wantState(HalfOpen)
	next.Token.Report(Outcome{Result: Success})
	h.wantState(Closed)
}

// Default probeTimeout is the cooldown.
func TestProbeTimeoutDefaultsToCooldown(t *testing.T) {
	h := newHarness(t, Params{MinRequests: 1, Cooldown: 3 * time.Second})
	h.trip()
	h.toHalfOpen()
	h.b.Admit()
	h.clock.Advance(3 * time.Second)
	if !h.b.Admit().Admitted {
		t.Fatal("probe slot not freed after the cooldown")
	}
}
