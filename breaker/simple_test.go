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
