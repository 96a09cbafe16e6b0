package breaker

import (
	"time"
)

// Report records the outcome of the admitted request. It never allocates;
// reports the breaker must ignore (see Token) are dropped.
func (t Token) Report(o Outcome) {
	b := t.b
	if b == nil || t.kind == kindNone {
		return
	}
	b.mu.Lock()
	b.reportLocked(t, o)
	deliver := len(b.queue) > 0 && !b.dispatching
	b.mu.Unlock()
	if deliver {
		b.dispatch()
	}
}

// reportLocked is the one way an outcome reaches the rules, for both APIs:
// it drops the reports the breaker must ignore (see Token) and applies the
// others as closed-state or probe outcomes.
func (b *Breaker) reportLocked(t Token, o Outcome) {
	if t.gen != b.gen {
		return
	}
	switch t.kind {
	case kindClosed:
		// Admission numbers start at 1; 0 is a report without a token
		// (RecordSuccess, RecordFailure), with nothing to deduplicate.
		if t.seq != 0 {
			r := &b.reported[t.seq%reportedSlots]
			if *r == t.seq {
				return
			}
			*r = t.seq
		}
		b.recordClosedLocked(o)
	case kindProbe:
		if int(t.slot) < len(b.probes) {
			s := &b.probes[t.slot]
			if s.busy && s.seq == t.seq {
				s.busy = false
				b.recordProbeLocked(o)
			}
		}
	}
}

func (b *Breaker) countLocked(r Result) {
	switch r {
	case Success:
		b.successes++
	case Failure:
		b.failures++
	default:
		b.neutrals++
	}
}

// recordClosedLocked applies a closed-state outcome and trips if a rule
// fires. The clock is read only for a time window or a trip.
func (b *Breaker) recordClosedLocked(o Outcome) {
	b.countLocked(o.Result)
	p := &b.p
	if b.tallying {
		b.tallyClosedLocked(o, p.slowRule() && o.Elapsed > p.SlowCallDuration)
	}
	if o.Result != Success && o.Result != Failure {
		return
	}
	var flags uint8
	if o.Result == Failure {
		flags = flagFailure
		b.consec++
	} else {
		b.consec = 0
	}
	if p.slowRule() && o.Elapsed > p.SlowCallDuration {
		flags |= flagSlow
	}
	var now int64
	haveNow := false
	if b.win.timed {
		now, haveNow = b.now(), true
	}
	filled := b.win.add(flags, now)
	if b.following {
		return // the window keeps filling for a fallback; the fleet judges
	}
	// A plain success cannot raise a full count window's ratios (it
	// replaces an outcome at least as good), so it is judged only when it
	// fills the window. Time windows are always judged: ageing can raise
	// the ratios between reports.
	if flags == 0 && !filled && !b.win.timed {
		return
	}

	rule := RuleNone
	switch {
	case p.ConsecutiveFailures > 0 && b.consec >= p.ConsecutiveFailures:
		rule = RuleConsecutiveFailures
	case b.win.total >= p.MinRequests && float64(b.win.failures)/float64(b.win.total) >= p.Threshold:
		rule = RuleErrorRatio
	case p.slowRule() && b.win.total >= p.MinRequests && b.win.slow > 0 &&
		float64(b.win.slow)/float64(b.win.total) >= p.SlowCallThreshold:
		rule = RuleSlowCalls
	}
	if rule == RuleNone {
		return
	}
	if !haveNow {
		now = b.now()
	}
	var upstream time.Duration
	if o.Result == Failure {
		upstream = o.RetryAfter
	}
	b.tripLocked(rule, now, upstream)
}

// recordProbeLocked applies a half-open probe outcome. A probe slower than
// SlowCallDuration (with the slow-call rule on) counts as failed.
func (b *Breaker) recordProbeLocked(o Outcome) {
	b.countLocked(o.Result)
	if b.tallying {
		b.tallyProbeLocked(o)
	}
	if b.following {
		return // the fleet judges probes
	}
	p := &b.p
	switch {
	case o.Result == Failure || (o.Result == Success && p.slowRule() && o.Elapsed > p.SlowCallDuration):
		var upstream time.Duration
		if o.Result == Failure {
			upstream = o.RetryAfter
		}
		b.tripLocked(RuleHalfOpenProbeFailed, b.now(), upstream)
	case o.Result == Success:
		b.probeSuccesses++
		if b.probeSuccesses >= p.SuccessesToClose {
			now := b.now()
			b.transitionLocked(Closed, RuleNone, now, 0)
			if p.RecoveryDuration > 0 {
				b.ramping = true
				b.rampStart = now
				b.rampAcc = 0
				b.publishLocked()
			}
		}
	}
}

// openDuration is cooldown·2^trips capped at MaxCooldown, at least the
// upstream Retry-After (also capped), plus jitter.
func (b *Breaker) openDuration(upstream time.Duration) time.Duration {
	p := &b.p
	d := p.Cooldown
	for i := 0; i < b.trips && d < p.MaxCooldown; i++ {
		d *= 2
	}
	d = min(d, p.MaxCooldown)
	if upstream > d {
		d = min(upstream, p.MaxCooldown)
	}
	if p.CooldownJitter > 0 {
		d += time.Duration(p.CooldownJitter * b.rand() * float64(d))
	}
	return d
}

func (b *Breaker) tripLocked(rule Rule, now int64, upstream time.Duration) {
	d := b.openDuration(upstream)
	if b.trips < 62 {
		b.trips++
	}
	b.openedAt, b.openUntil, b.everOpen = now, now+int64(d), true
	b.transitionLocked(Open, rule, now, d)
}

// transitionLocked moves to state to, starts a new generation, resets the
// per-state bookkeeping and queues the event.
func (b *Breaker) transitionLocked(to State, rule Rule, now int64, openFor time.Duration) {
	from := b.state
	b.state = to
	b.gen++
	b.ramping = false
	switch to {
	case Closed:
		b.win.reset()
		b.consec = 0
		b.trips = 0
		b.forced = false
	case HalfOpen:
		for i := range b.probes {
			b.probes[i].busy = false
		}
		b.probeSuccesses = 0
	}
	b.publishLocked()
	b.last = Transition{Name: b.name, From: from, To: to, Rule: rule, At: b.at(now), RetryAfter: openFor, Generation: b.gen}
	if len(b.callbacks) > 0 || b.observer != nil {
		b.queue = append(b.queue, b.last)
	}
}
