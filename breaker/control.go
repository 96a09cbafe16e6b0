package breaker

import ()

// ForceOpen opens the breaker (rule "manual") and holds it open, without
// half-open probing, until ForceClose or Reset. On a breaker already open
// it only holds it (no new transition, no event).
func (b *Breaker) ForceOpen() {
	b.mu.Lock()
	now := b.now()
	if b.state != Open {
		b.openedAt, b.everOpen = now, true
		b.transitionLocked(Open, RuleManual, now, 0)
	}
	b.forced = true
	b.publishLocked()
	deliver := len(b.queue) > 0 && !b.dispatching
	b.mu.Unlock()
	if deliver {
		b.dispatch()
	}
}

// ForceClose closes the breaker now (rule "manual"), releasing a ForceOpen:
// the window, streak and backoff restart, with no recovery ramp. The trip
// rules apply again from the next outcome. On a closed breaker it only ends
// a recovery ramp.
func (b *Breaker) ForceClose() {
	b.mu.Lock()
	if b.state != Closed {
		b.transitionLocked(Closed, RuleManual, b.now(), 0)
	} else if b.ramping {
		b.ramping = false
		b.publishLocked()
	}
	deliver := len(b.queue) > 0 && !b.dispatching
	b.mu.Unlock()
	if deliver {
		b.dispatch()
	}
}

// Reset returns the breaker to a fresh closed state: like ForceClose, and
// the window and cumulative counters are emptied even if it was closed.
// The generation is kept (it only grows), so tokens issued before a Reset
// that changed the state are ignored.
func (b *Breaker) Reset() {
	b.mu.Lock()
	if b.state != Closed {
		b.transitionLocked(Closed, RuleManual, b.now(), 0)
	}
	b.win.reset()
	b.consec, b.trips, b.forced, b.ramping = 0, 0, false, false
	b.admitted, b.rejected, b.successes, b.failures, b.neutrals = 0, 0, 0, 0, 0
	b.fastRejected.Store(0)
	b.seqAtReset = b.seq.Load()
	b.publishLocked()
	deliver := len(b.queue) > 0 && !b.dispatching
	b.mu.Unlock()
	if deliver {
		b.dispatch()
	}
}

// OnTransition registers fn to be called on every state transition.
//
// Callbacks run after the breaker's lock is released, in transition order,
// never two at a time, on the goroutine whose call caused the transition
// (or on one that is already delivering earlier events: a transition may
// be delivered after the call that caused it has returned). A callback may
// call any method of the breaker (State, Stats, even ForceOpen; transitions
// it causes are queued and delivered after it returns). It must not block
// for long or wait for another request on the same breaker: it holds up
// the request goroutine that delivers it, and every later event.
func (b *Breaker) OnTransition(fn func(Transition)) {
	if fn == nil {
		return
	}
	b.mu.Lock()
	cbs := make([]func(Transition), len(b.callbacks), len(b.callbacks)+1)
	copy(cbs, b.callbacks)
	b.callbacks = append(cbs, fn)
	b.mu.Unlock()
}

// dispatch delivers queued transitions unless another goroutine is already
// doing so (it will deliver ours too: it re-checks the queue under the lock
// before giving up the role).
func (b *Breaker) dispatch() {
	b.mu.Lock()
	if b.dispatching {
		b.mu.Unlock()
		return
	}
	b.dispatching = true
	defer func() {
		// Also on a panicking callback, so delivery is not wedged.
		b.mu.Lock()
		b.dispatching = false
		b.mu.Unlock()
	}()
	for len(b.queue) > 0 {
		t := b.queue[0]
		b.queue = b.queue[1:]
		if len(b.queue) == 0 {
			b.queue = b.queue[:0:0]
		}
		cbs, obs := b.callbacks, b.observer
		b.mu.Unlock()
		for _, fn := range cbs {
			fn(t)
		}
		if obs != nil {
			obs.RecordTransition(t.Name, t.From, t.To)
		}
		b.mu.Lock()
	}
	b.mu.Unlock()
}
