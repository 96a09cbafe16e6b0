package breaker

import (
	"slices"
	"testing"
	"time"
)

// Behaviour 9: outcomes admitted before a transition are ignored; the
// generation changes only on transitions, so a slow closed-state failure
// always counts.
func TestGenerations(t *testing.T) {
	t.Run("late success cannot close, late failure cannot re-open or extend", func(t *testing.T) {
		h := newHarness(t, Params{MinRequests: 2, Cooldown: 10 * time.Second})
		early := []Token{h.b.Admit().Token, h.b.Admit().Token, h.b.Admit().Token}
		h.trip()
		genOpen := h.b.Stats().Generation
		early[0].Report(Outcome{Result: Failure, RetryAfter: time.Hour})
		st := h.b.Stats()
		if st.RetryAfter != 10*time.Second || st.Generation != genOpen {
			t.Fatalf("late failure extended or changed the open period: %+v", st)
		}
		h.toHalfOpen()
		early[1].Report(Outcome{Result: Success})
		h.wantState(HalfOpen)
		early[2].Report(Outcome{Result: Failure})
		h.wantState(HalfOpen)
		h.succeed(1)
		h.wantState(Closed)
	})

	t.Run("slow failure in the closed state always counts", func(t *testing.T) {
		for _, window := range []time.Duration{0, 10 * time.Second} {
			h := newHarness(t, Params{MinRequests: 1000, ConsecutiveFailures: 1, Window: window})
			tok := h.b.Admit().Token
			h.clock.Advance(time.Hour) // far beyond any window rotation
			// Rotate windows and admit more requests than there are pending
			// ring slots: no generation change, and the report is not lost.
			for range 3 * reportedSlots {
				h.succeed(1)
			}
			gen := h.b.Stats().Generation
			tok.Report(Outcome{Result: Failure, Elapsed: time.Hour})
			if st := h.b.Stats(); st.State != Open || st.Generation != gen+1 {
				t.Fatalf("window %v: slow failure ignored: %+v", window, st)
			}
		}
	})

	t.Run("generation changes only on transitions", func(t *testing.T) {
		h := newHarness(t, Params{MinRequests: 1, Window: time.Second})
		g0 := h.b.Stats().Generation
		for range 50 {
			h.clock.Advance(300 * time.Millisecond)
			h.succeed(1)
		}
		if g := h.b.Stats().Generation; g != g0 {
			t.Fatalf("generation moved from %d to %d without a transition", g0, g)
		}
		h.trip()
		h.toHalfOpen()
		h.succeed(1)
		for i, tr := range h.rec.all() {
			if tr.Generation != g0+uint64(i)+1 {
				t.Fatalf("transition %d generation %d, want %d", i, tr.Generation, g0+uint64(i)+1)
			}
		}
	})

	t.Run("double reports are ignored", func(t *testing.T) {
		h := newHarness(t, Params{MinRequests: 3})
		tok := h.b.Admit().Token
		for range 5 {
			tok.Report(Outcome{Result: Failure})
		}
		if st := h.b.Stats(); st.WindowTotal != 1 || st.Failures != 1 || st.State != Closed {
			t.Fatalf("closed token reported 5 times counted more than once: %+v", st)
		}
		// Half-open: one probe reported twice must not count as two successes.
		h = newHarness(t, Params{MinRequests: 1, HalfOpenProbes: 2, SuccessesToClose: 2})
		h.trip()
		h.toHalfOpen()
		probe := h.b.Admit().Token
		probe.Report(Outcome{Result: Success})
		probe.Report(Outcome{Result: Success})
		if st := h.b.Stats(); st.State != HalfOpen || st.ProbeSuccesses != 1 {
			t.Fatalf("double probe report counted twice: %+v", st)
		}
		var zero Token
		zero.Report(Outcome{Result: Failure}) // the zero token is inert
	})
}

// Behaviour 9b: jitter, upstream Retry-After, recovery ramp, shadow mode.
func TestOpenDuration(t *testing.T) {
	cases := []struct {
		name     string
		p        Params
		rand     float64
		upstream time.Duration
		want     time.Duration
	}{
		{name: "cooldown", p: Params{Cooldown: 10 * time.Second}, want: 10 * time.Second},
		{name: "jitter adds a random fraction", p: Params{Cooldown: 10 * time.Second, CooldownJitter: 0.2}, rand: 0.5, want: 11 * time.Second},
		{name: "jitter with rand 0", p: Params{Cooldown: 10 * time.Second, CooldownJitter: 1}, rand: 0, want: 10 * time.Second},
		{name: "upstream Retry-After extends", p: Params{Cooldown: 10 * time.Second, MaxCooldown: time.Minute}, upstream: 30 * time.Second, want: 30 * time.Second},
		{name: "upstream Retry-After capped at maxCooldown", p: Params{Cooldown: 10 * time.Second, MaxCooldown: 20 * time.Second}, upstream: time.Hour, want: 20 * time.Second},
		{name: "upstream Retry-After shorter than cooldown", p: Params{Cooldown: 10 * time.Second}, upstream: time.Second, want: 10 * time.Second},
		{name: "upstream capped at default maxCooldown = cooldown", p: Params{Cooldown: 10 * time.Second}, upstream: time.Minute, want: 10 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			p.MinRequests = 1
			c := newFakeClock()
			b := NewWithParams("x", p, Options{Clock: c, Rand: func() float64 { return tc.rand }})
			b.Admit().Token.Report(Outcome{Result: Failure, RetryAfter: tc.upstream})
			st := b.Stats()
			if st.State != Open || st.LastTransition.RetryAfter != tc.want {
				t.Fatalf("open for %v (state %v), want %v", st.LastTransition.RetryAfter, st.State, tc.want)
			}
			c.Advance(tc.want - 1)
			if b.State() != Open {
				t.Fatal("half-open early")
			}
			c.Advance(1)
			if b.State() != HalfOpen {
				t.Fatal("not half-open at the end of the open period")
			}
		})
	}
}

func TestUpstreamRetryAfterOnProbeFailure(t *testing.T) {
	h := newHarness(t, Params{MinRequests: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
	h.trip()
	h.toHalfOpen()
	h.do(Outcome{Result: Failure, RetryAfter: 30 * time.Second})
	if d := h.b.Stats().LastTransition.RetryAfter; d != 30*time.Second {
		t.Fatalf("re-open for %v, want 30s", d)
	}
}

func TestRecoveryRamp(t *testing.T) {
	h := newHarness(t, Params{MinRequests: 50, Cooldown: time.Second, RecoveryDuration: 10 * time.Second})
	h.trip()
	h.toHalfOpen()
	h.succeed(1)
	h.wantState(Closed)
	admittedShare := func() float64 {
		n := 0
		for range 1000 {
			d := h.b.Admit()
			if d.Admitted {
				n++
				d.Token.Report(Outcome{Result: Success})
			} else if d.RetryAfter != time.Second {
				t.Fatalf("ramp rejection with retry-after %v, want 1s", d.RetryAfter)
			}
		}
		return float64(n) / 1000
	}
	if s := admittedShare(); s > 0.01 {
		t.Fatalf("share right after closing %v, want ~0", s)
	}
	h.clock.Advance(2500 * time.Millisecond)
	if s := admittedShare(); s < 0.24 || s > 0.26 {
		t.Fatalf("share at 25%% of the ramp %v", s)
	}
	h.clock.Advance(5 * time.Second)
	if s := admittedShare(); s < 0.74 || s > 0.76 {
		t.Fatalf("share at 75%% of the ramp %v", s)
	}
	if st := h.b.Stats(); !st.Recovering {
		t.Fatalf("not recovering: %+v", st)
	}
	// Trip rules are judged during the ramp.
	for h.b.State() == Closed {
		if d := h.b.Admit(); d.Admitted {
			d.Token.Report(Outcome{Result: Failure})
		}
	}
	h.wantState(Open)
	// And the ramp ends: full traffic after recoveryDuration.
	h.toHalfOpen()
	h.succeed(1)
	h.clock.Advance(10 * time.Second)
	if s := admittedShare(); s != 1 {
		t.Fatalf("share after the ramp %v, want 1", s)
	}
	if st := h.b.Stats(); st.Recovering {
		t.Fatal("still recovering after recoveryDuration")
	}
}

// Shadow mode never rejects, yet transitions and events are exactly those
// of enforce mode on the same traffic.
func TestShadowMode(t *testing.T) {
	run := func(mode Mode) (events []string, rejected uint64) {
		h := newHarness(t, Params{MinRequests: 4, Cooldown: 5 * time.Second, HalfOpenProbes: 2, RecoveryDuration: 4 * time.Second, Mode: mode})
		script := "SFSFFFFFFSSSSFFSFFSSSSSSSSSSSSSSSSSSSS"
		for i := range len(script) {
			d := h.b.Admit()
			if mode == Shadow && !d.Admitted {
				t.Fatalf("shadow rejected request %d", i)
			}
			// Requests the breaker rejects (or would reject) still get an
			// answer; report as a proxy would.
			d.Token.Report(h.outcome(script[i]))
			h.clock.Advance(time.Second)
		}
		return h.rec.events(), h.b.Stats().Rejected
	}
	enforce, rejE := run(Enforce)
	shadow, rejS := run(Shadow)
	if !slices.Equal(enforce, shadow) || len(enforce) < 4 {
		t.Fatalf("events differ or too few:\nenforce %v\nshadow  %v", enforce, shadow)
	}
	if rejE == 0 || rejE != rejS {
		t.Fatalf("rejections enforce %d, would-be rejections in shadow %d", rejE, rejS)
	}
}

func TestShadowDecisionCarriesWouldBeRetryAfter(t *testing.T) {
	h := newHarness(t, Params{MinRequests: 1, Cooldown: 7 * time.Second, Mode: Shadow})
	h.trip()
	d := h.b.Admit()
	if !d.Admitted || d.RetryAfter != 7*time.Second || d.Token.Probe() {
		t.Fatalf("shadow decision while open: %+v", d)
	}
}

// Behaviour 13: manual control.
func TestManualControl(t *testing.T) {
	t.Run("force open holds until released", func(t *testing.T) {
		h := newHarness(t, Params{Cooldown: time.Second})
		h.b.ForceOpen()
		h.clock.Advance(24 * time.Hour)
		h.wantState(Open)
		d := h.b.Admit()
		if d.Admitted || d.RetryAfter != time.Second {
			t.Fatalf("forced open admitted: %+v", d)
		}
		if st := h.b.Stats(); !st.Forced || st.LastTransition.Rule != RuleManual {
			t.Fatalf("stats %+v", st)
		}
		h.b.ForceClose()
		h.wantState(Closed)
		h.succeed(1)
		if ev := h.rec.events(); !slices.Equal(ev, []string{"opened:manual", "closed:manual"}) {
			t.Fatalf("events %v", ev)
		}
	})
	t.Run("force open an already open breaker holds it", func(t *testing.T) {
		h := newHarness(t, Params{MinRequests: 1, Cooldown: time.Second})
		h.trip()
		h.b.ForceOpen()
		h.clock.Advance(time.Hour)
		h.wantState(Open)
		h.b.Reset()
		h.wantState(Closed)
	})
	t.Run("force close from half-open and open", func(t *testing.T) {
		h := newHarness(t, Params{MinRequests: 1, Cooldown: time.Second, RecoveryDuration: time.Hour})
		h.trip()
		h.b.ForceClose()
		h.wantState(Closed)
		if st := h.b.Stats(); st.Recovering || st.Trips != 0 {
			t.Fatalf("manual close ramps or keeps backoff: %+v", st)
		}
		h.trip()
		if d := h.b.Stats().LastTransition.RetryAfter; d != time.Second {
			t.Fatalf("backoff not reset by force close: %v", d)
		}
		h.toHalfOpen()
		h.b.ForceClose()
		h.wantState(Closed)
	})
	t.Run("reset clears counters", func(t *testing.T) {
		h := newHarness(t, Params{MinRequests: 10})
		h.fail(3)
		h.b.Reset()
		st := h.b.Stats()
		if st.State != Closed || st.WindowTotal != 0 || st.Failures != 0 || st.Admitted != 0 {
			t.Fatalf("after reset: %+v", st)
		}
		if len(h.rec.all()) != 0 {
			t.Fatal("reset of a closed breaker emitted a transition")
		}
	})
}

// Behaviour 14: parameters swap while state carries on.
func TestSetParams(t *testing.T) {
	t.Run("state and same-shape window kept", func(t *testing.T) {
		h := newHarness(t, Params{MinRequests: 10})
		h.fail(4)
		h.b.SetParams(Params{MinRequests: 10, Threshold: 0.9})
		if st := h.b.Stats(); st.WindowTotal != 4 || st.ConsecutiveFailures != 4 {
			t.Fatalf("window not kept: %+v", st)
		}
		h.b.SetParams(Params{MinRequests: 5, Threshold: 0.9})
		if st := h.b.Stats(); st.WindowTotal != 0 {
			t.Fatalf("resized window kept its outcomes: %+v", st)
		}
		h.fail(5)
		h.wantState(Open)
		h.b.SetParams(Params{MinRequests: 5, Window: 10 * time.Second, Cooldown: time.Minute})
		h.wantState(Open)
		if st := h.b.Stats(); st.RetryAfter != 10*time.Second {
			t.Fatalf("running open period changed: %+v", st)
		}
	})
	t.Run("count to time window starts empty", func(t *testing.T) {
		h := newHarness(t, Params{MinRequests: 5})
		h.fail(2)
		h.b.SetParams(Params{MinRequests: 5, Window: 30 * time.Second})
		if st := h.b.Stats(); st.WindowTotal != 0 {
			t.Fatalf("window kind changed but kept outcomes: %+v", st)
		}
		h.fail(2)
		h.b.SetParams(Params{MinRequests: 7, Window: 30 * time.Second})
		if st := h.b.Stats(); st.WindowTotal != 2 {
			t.Fatalf("time window of the same size dropped outcomes: %+v", st)
		}
	})
	t.Run("probe slots resized in half-open", func(t *testing.T) {
		h := newHarness(t, Params{MinRequests: 1})
		h.trip()
		h.toHalfOpen()
		h.b.Admit()
		h.b.SetParams(Params{MinRequests: 1, HalfOpenProbes: 2})
		if !h.b.Admit().Admitted || h.b.Admit().Admitted {
			t.Fatal("want exactly one more probe after growing to 2 slots")
		}
		if got := h.b.Params().HalfOpenProbes; got != 2 {
			t.Fatalf("Params().HalfOpenProbes = %d", got)
		}
	})
}

// The lock-free rejection path answers as the locked one does.
func TestForceOpenAfterTripUsesCooldownRetryAfter(t *testing.T) {
	h := newHarness(t, Params{MinRequests: 1, Cooldown: 4 * time.Second, MaxCooldown: time.Minute})
	h.do(Outcome{Result: Failure, RetryAfter: 50 * time.Second})
	if d := h.b.Admit(); d.RetryAfter != 50*time.Second {
		t.Fatalf("tripped: retry after %v, want 50s", d.RetryAfter)
	}
	h.b.ForceOpen()
	h.clock.Advance(time.Hour)
	for range 3 {
		if d := h.b.Admit(); d.Admitted || d.RetryAfter != 4*time.Second {
			t.Fatalf("forced: %+v, want rejected with the cooldown 4s", d)
		}
	}
	if st := h.b.Stats(); st.Rejected != 4 || st.State != Open {
		t.Fatalf("stats %+v", st)
	}
}

func TestForceCloseEndsRecoveryRamp(t *testing.T) {
	h := newHarness(t, Params{MinRequests: 1, RecoveryDuration: time.Hour})
	h.trip()
	h.toHalfOpen()
	h.succeed(1)
	if d := h.b.Admit(); d.Admitted {
		t.Fatal("admitted at the very start of the ramp")
	}
	h.b.ForceClose()
	if st := h.b.Stats(); st.Recovering || !h.b.Admit().Admitted {
		t.Fatalf("force close did not end the ramp: %+v", st)
	}
	if got := h.rec.events(); !slices.Equal(got, []string{"opened:error_ratio", "half-open", "closed"}) {
		t.Fatalf("ending a ramp emitted a transition: %v", got)
	}
}
