package breaker

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// pollUntil polls cond until it holds or a generous deadline passes.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling interval, not synchronisation
	}
}

type transitions struct {
	mu sync.Mutex
	s  []string
}

func (tr *transitions) RecordTransition(name string, from, to State) {
	tr.mu.Lock()
	tr.s = append(tr.s, name+":"+from.String()+">"+to.String())
	tr.mu.Unlock()
}

func (tr *transitions) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.s)
}

// Behaviour 16: the convenience API on the real clock.
func TestConvenienceAPI(t *testing.T) {
	b := New("payments", 3, 20*time.Millisecond)
	if b.Name() != "payments" || b.State() != Closed {
		t.Fatalf("new breaker %q in %v", b.Name(), b.State())
	}
	var cb, obs transitions
	b.OnStateChange(cb.RecordTransition)
	b.SetObserver(&obs)

	// Failures must be consecutive.
	for range 2 {
		b.RecordFailure()
	}
	b.RecordSuccess()
	for range 2 {
		b.RecordFailure()
	}
	if b.State() != Closed || !b.CanExecute() {
		t.Fatal("opened without 3 consecutive failures")
	}
	b.RecordFailure()
	if b.State() != Open || b.CanExecute() {
		t.Fatal("3 consecutive failures did not open it")
	}
	if r := b.Stats().LastTransition.Rule; r != RuleConsecutiveFailures {
		t.Fatalf("rule %v", r)
	}
	pollUntil(t, "half-open after the timeout", func() bool { return b.State() == HalfOpen })
	if !b.CanExecute() {
		t.Fatal("half-open refused the trial call")
	}
	if b.CanExecute() {
		t.Fatal("half-open admitted a second concurrent trial call")
	}
	b.RecordFailure()
	if b.State() != Open {
		t.Fatal("failed trial did not re-open")
	}
	pollUntil(t, "half-open again", func() bool { return b.CanExecute() })
	b.RecordSuccess()
	if b.State() != Closed {
		t.Fatal("successful trial did not close")
	}
	b.RecordSuccess() // closed: just counted
	want := []string{
		"payments:closed>open", "payments:open>half-open", "payments:half-open>open",
		"payments:open>half-open", "payments:half-open>closed",
	}
	if got := cb.get(); !slices.Equal(got, want) {
		t.Fatalf("OnStateChange saw %v, want %v", got, want)
	}
	if got := obs.get(); !slices.Equal(got, want) {
		t.Fatalf("observer saw %v, want %v", got, want)
	}
}

func TestConvenienceRecordWhileOpenIgnored(t *testing.T) {
	b := New("x", 1, time.Hour)
	b.RecordFailure()
	b.RecordSuccess()
	if b.State() != Open {
		t.Fatal("a success recorded while open closed the breaker")
	}
	if New("y", 0, 0).Params().ConsecutiveFailures != 1 {
		t.Fatal("maxFailures 0 not clamped to 1")
	}
}

// A record without a token, in each state, and beside tokens: it is
// reported as the admission it settles, and never disturbs a token's own
// report or the admission count.
func TestConvenienceRecordSettles(t *testing.T) {
	h := newHarness(t, Params{MinRequests: 4, ConsecutiveFailures: 2, Cooldown: time.Second, HalfOpenProbes: 2, SuccessesToClose: 2})
	b := h.b

	// Closed: a record counts toward the window, and a token reported
	// twice around it is still counted once.
	tok := b.Admit().Token
	tok.Report(Outcome{Result: Success})
	b.RecordSuccess()
	tok.Report(Outcome{Result: Success})
	if st := b.Stats(); st.WindowTotal != 2 || st.Successes != 2 || st.Admitted != 1 {
		t.Fatalf("closed: window %d, successes %d, admitted %d; want 2, 2, 1", st.WindowTotal, st.Successes, st.Admitted)
	}

	// Half-open with no probe outstanding: a record is a probe result.
	b.RecordFailure()
	b.RecordFailure()
	h.clock.Advance(2 * time.Second)
	if b.State() != HalfOpen {
		t.Fatalf("state %v, want half-open", b.State())
	}
	b.RecordSuccess()
	if st := b.Stats(); st.ProbeSuccesses != 1 || st.ProbesInFlight != 0 {
		t.Fatalf("half-open: %d probe successes, %d in flight; want 1, 0", st.ProbeSuccesses, st.ProbesInFlight)
	}

	// Half-open with probes outstanding: a record settles the oldest, whose
	// own report is then ignored; the other probe's report still counts.
	first := b.Admit().Token
	h.clock.Advance(time.Millisecond)
	second := b.Admit().Token
	b.RecordFailure() // settles first: re-opens
	if b.State() != Open {
		t.Fatalf("state %v after a failed record in half-open, want open", b.State())
	}
	first.Report(Outcome{Result: Success})
	second.Report(Outcome{Result: Success})
	if b.State() != Open {
		t.Fatal("a report of the previous half-open generation closed the breaker")
	}

	// Open: ignored.
	before := b.Stats()
	b.RecordSuccess()
	if st := b.Stats(); st.Successes != before.Successes || st.State != Open {
		t.Fatalf("open: a record was counted (%d successes, was %d) or changed the state (%v)", st.Successes, before.Successes, st.State)
	}

	// Half-open again: a record settles the oldest probe, the other's
	// report closes the breaker.
	h.clock.Advance(time.Hour)
	first = b.Admit().Token
	h.clock.Advance(time.Millisecond)
	second = b.Admit().Token
	b.RecordSuccess()
	first.Report(Outcome{Result: Success}) // already settled: ignored
	if st := b.Stats(); st.State != HalfOpen || st.ProbeSuccesses != 1 || st.ProbesInFlight != 1 {
		t.Fatalf("half-open: %v, %d probe successes, %d in flight; want half-open, 1, 1", st.State, st.ProbeSuccesses, st.ProbesInFlight)
	}
	second.Report(Outcome{Result: Success})
	if b.State() != Closed {
		t.Fatalf("state %v, want closed after two probe successes", b.State())
	}
}
