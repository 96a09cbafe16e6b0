package breaker

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a manually advanced Clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// recorder collects transitions delivered to OnTransition.
type recorder struct {
	mu sync.Mutex
	ts []Transition
}

func (r *recorder) record(t Transition) {
	r.mu.Lock()
	r.ts = append(r.ts, t)
	r.mu.Unlock()
}

func (r *recorder) all() []Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Transition(nil), r.ts...)
}

// events renders transitions as "opened:error_ratio", "half-open", "closed".
func (r *recorder) events() []string {
	var out []string
	for _, t := range r.all() {
		e := t.Event()
		if t.Rule != RuleNone {
			e += ":" + t.Rule.String()
		}
		out = append(out, e)
	}
	return out
}

type harness struct {
	t     *testing.T
	b     *Breaker
	clock *fakeClock
	rec   *recorder
}

func newHarness(t *testing.T, p Params) *harness {
	t.Helper()
	if _, errs := p.Validate(); len(errs) > 0 {
		t.Fatalf("test params invalid: %v", errs)
	}
	c := newFakeClock()
	b := NewWithParams("test", p, Options{Clock: c, Rand: func() float64 { return 0.5 }})
	r := &recorder{}
	b.OnTransition(r.record)
	return &harness{t: t, b: b, clock: c, rec: r}
}

// do admits one request and reports o; it fails the test if not admitted.
func (h *harness) do(o Outcome) {
	h.t.Helper()
	d := h.b.Admit()
	if !d.Admitted {
		h.t.Fatalf("request rejected in state %v (retry after %v)", h.b.State(), d.RetryAfter)
	}
	d.Token.Report(o)
}

func (h *harness) succeed(n int) {
	h.t.Helper()
	for range n {
		h.do(Outcome{Result: Success})
	}
}

func (h *harness) fail(n int) {
	h.t.Helper()
	for range n {
		h.do(Outcome{Result: Failure})
	}
}

// outcomes runs a script: S success, F failure, N neutral, s slow success
// (1h), f slow failure.
func (h *harness) outcome(c byte) Outcome {
	switch c {
	case 'S':
		return Outcome{Result: Success}
	case 'F':
		return Outcome{Result: Failure}
	case 'N':
		return Outcome{Result: Neutral}
	case 's':
		return Outcome{Result: Success, Elapsed: time.Hour}
	case 'f':
		return Outcome{Result: Failure, Elapsed: time.Hour}
	}
	h.t.Fatalf("bad script byte %q", c)
	return Outcome{}
}

func (h *harness) wantState(want State) {
	h.t.Helper()
	if got := h.b.State(); got != want {
		h.t.Fatalf("state = %v, want %v", got, want)
	}
}

// trip opens a closed breaker whose params trip on consecutive failures
// or the ratio, by failing until it opens.
func (h *harness) trip() {
	h.t.Helper()
	for i := 0; h.b.State() == Closed; i++ {
		if i > MaxMinRequests {
			h.t.Fatal("breaker never tripped")
		}
		h.fail(1)
	}
}

// toHalfOpen advances the clock past the open period.
func (h *harness) toHalfOpen() {
	h.t.Helper()
	st := h.b.Stats()
	if st.State != Open {
		h.t.Fatalf("toHalfOpen from %v", st.State)
	}
	h.clock.Advance(st.LastTransition.RetryAfter)
	h.wantState(HalfOpen)
}
