package breaker

import "time"

// Observer receives state changes, e.g. to feed metrics.
type Observer interface {
	RecordTransition(name string, from, to State)
}

// New returns a breaker with the classic single-step behaviour (as in the
// ewrap/breaker package): maxFailures consecutive failures open it, after
// timeout it lets one trial call through (half-open), whose success closes
// it and whose failure re-opens it. maxFailures below 1 means 1; a timeout
// of 0 means the default cooldown. Use it with CanExecute, RecordSuccess and
// RecordFailure; the two-step Admit/Report API works on it too.
func New(name string, maxFailures int, timeout time.Duration) *Breaker {
	maxFailures = max(maxFailures, 1)
	if maxFailures > MaxMinRequests {
		maxFailures = MaxMinRequests
	}
	// Threshold 1 over a count window of maxFailures outcomes is the same
	// rule as maxFailures consecutive failures; both are set so that Stats
	// and events name it "consecutive_failures".
	return NewWithParams(name, Params{
		Threshold:           1,
		MinRequests:         maxFailures,
		ConsecutiveFailures: maxFailures,
		Cooldown:            timeout,
	}, Options{})
}

// CanExecute reports whether a call may go ahead now. In half-open it takes
// the probe slot, which the next RecordSuccess or RecordFailure frees (or the
// probe timeout, equal to the timeout given to New, if none comes).
func (b *Breaker) CanExecute() bool { return b.Admit().Admitted }

// RecordSuccess records a successful call, settling what is outstanding
// (see "Which API" in the package documentation).
func (b *Breaker) RecordSuccess() { b.record(Success) }

// RecordFailure records a failed call, settling what is outstanding (see
// "Which API" in the package documentation).
func (b *Breaker) RecordFailure() { b.record(Failure) }

// record reports an outcome that carries no Token as a report of the
// admission it settles (settledLocked), through Token.Report's path, under
// one hold of the lock.
func (b *Breaker) record(r Result) {
	b.mu.Lock()
	b.advanceLocked(b.now())
	if t := b.settledLocked(); t.kind != kindNone {
		b.reportLocked(t, Outcome{Result: r})
	}
	deliver := len(b.queue) > 0 && !b.dispatching
	b.mu.Unlock()
	if deliver {
		b.dispatch()
	}
}

// settledLocked returns the Token that a report without one settles. In the
// closed state it is a token of the current generation without an
// admission number: the outcome counts toward the window. In half-open it
// is the oldest outstanding probe's; with none outstanding, a probe slot is
// taken for the report alone, so that it acts as a probe result. While open
// there is none: the report is ignored.
func (b *Breaker) settledLocked() Token {
	switch b.state {
	case Closed:
		return Token{b: b, gen: b.gen, kind: kindClosed}
	case HalfOpen:
		slot := -1
		for i, s := range b.probes {
			if s.busy && (slot < 0 || s.deadline < b.probes[slot].deadline) {
				slot = i
			}
		}
		if slot < 0 {
			// None outstanding: every slot is free.
			slot = 0
			b.probes[0].busy = true
			b.probes[0].seq++
		}
		return Token{b: b, gen: b.gen, seq: b.probes[slot].seq, slot: int32(slot), kind: kindProbe}
	}
	return Token{}
}

// OnStateChange registers fn to be called on every state change, with the
// same delivery guarantees as OnTransition.
func (b *Breaker) OnStateChange(fn func(name string, from, to State)) {
	if fn == nil {
		return
	}
	b.OnTransition(func(t Transition) { fn(t.Name, t.From, t.To) })
}

// SetObserver sets the observer told of every state change (after the
// OnTransition callbacks, with the same delivery guarantees); nil removes it.
func (b *Breaker) SetObserver(o Observer) {
	b.mu.Lock()
	b.observer = o
	b.mu.Unlock()
}
