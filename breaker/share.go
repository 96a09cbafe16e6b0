package breaker

import "time"

// Sharing a breaker's state with other processes (a fleet of replicas).
//
// Two switches, both off by default, let a coordinator outside this
// package (the router's breaker store) share a breaker without this
// package knowing how:
//
//   - StartTally makes every accepted report also count into a Tally,
//     which TakeTally hands out and resets. The coordinator sends tallies
//     to its store in batches; the request path pays nothing more than the
//     report it already makes (a few additions under the lock it holds).
//   - SetFollowing(true) stops the breaker from deciding transitions
//     itself: closed-state outcomes no longer trip it, probe outcomes no
//     longer close or re-open it, and an open breaker does not move to
//     half-open when its period ends. The coordinator decides and calls
//     Apply. In half-open, a following breaker admits only as many probes
//     as Apply granted (leases held elsewhere), and counts the requests it
//     had to turn away for want of a lease (Tally.WantProbes).
//
// SetFollowing(false) hands the decisions back: the breaker judges again
// from its own window (which kept filling while it followed), so falling
// back to local judgement needs no warm-up.

// Tally is what a breaker counted since the last TakeTally.
type Tally struct {
	// Epoch is the remote epoch (see Remote) the window figures below
	// belong to.
	Epoch uint64
	// Successes, Failures and Neutral count every accepted report
	// (closed-state and probe), whatever the epoch: an exact account of
	// the outcomes this breaker reported.
	Successes, Failures, Neutral uint64
	// WindowTotal, WindowFailures and WindowSlow are the closed-state
	// outcomes that count toward the trip rules, in Epoch (neutral
	// outcomes excluded, as in the local window).
	WindowTotal, WindowFailures, WindowSlow uint64
	// Streak is the number of failures at the end of the batch (since its
	// last success); Broken says a success was reported in the batch, so
	// the streak before the batch has ended.
	Streak uint64
	Broken bool
	// ProbeSuccesses and ProbeFailures are half-open probe results in
	// Epoch (a probe slower than SlowCallDuration is a failure);
	// ProbesDone counts every probe report, neutral ones too (each frees
	// its lease).
	ProbeSuccesses, ProbeFailures, ProbesDone uint64
	// WantProbes counts half-open admissions refused for want of a lease.
	WantProbes uint64
	// ReturnedLeases are probe leases given back unused: TakeTally returns
	// the leases no request took since the previous TakeTally, so that a
	// replica whose traffic stopped does not hold the fleet's probes.
	ReturnedLeases uint64
}

// Empty reports whether the tally holds nothing to send.
func (t Tally) Empty() bool {
	return t.Successes == 0 && t.Failures == 0 && t.Neutral == 0 && t.ProbesDone == 0 && t.WantProbes == 0 &&
		t.ReturnedLeases == 0
}

// Remote is a state decided outside the breaker, for Apply.
type Remote struct {
	// Epoch numbers the remote state; it changes on every remote
	// transition. Apply ignores nothing by itself: the caller applies
	// newer epochs only.
	Epoch uint64
	State State
	// Rule is why the state was entered, for the transition event.
	Rule Rule
	// OpenFor is, for a timed opening, how much of the open period is
	// left; Forced holds the breaker open until released.
	OpenFor time.Duration
	Forced  bool
	// Trips is the remote backoff exponent.
	Trips int
	// GrantProbes adds half-open probe leases this breaker may use.
	GrantProbes int
}

// StartTally makes accepted reports count into the tally (see Tally).
func (b *Breaker) StartTally() {
	b.mu.Lock()
	b.tallying = true
	b.mu.Unlock()
}

// StopTally stops counting and discards the tally.
func (b *Breaker) StopTally() {
	b.mu.Lock()
	b.tallying = false
	b.tally = Tally{Epoch: b.remoteEpoch}
	b.mu.Unlock()
}

// TakeTally returns the tally and starts a new one. Leases still unused
// go back with it (Tally.ReturnedLeases): the caller calls TakeTally
// periodically, and a lease that waited a whole period found no request.
func (b *Breaker) TakeTally() Tally {
	b.mu.Lock()
	t := b.tally
	if b.following && b.leases > 0 {
		t.ReturnedLeases += uint64(b.leases)
		b.leases = 0
	}
	b.tally = Tally{Epoch: b.remoteEpoch}
	b.mu.Unlock()
	return t
}

// SetFollowing switches between deciding transitions locally (false, the
// default) and following the states given to Apply (true). Switching back
// to local returns unused probe leases: the local half-open rules apply.
func (b *Breaker) SetFollowing(on bool) {
	b.mu.Lock()
	b.following = on
	b.leases = 0
	if !on {
		b.advanceLocked(b.now())
	}
	b.publishLocked()
	deliver := len(b.queue) > 0 && !b.dispatching
	b.mu.Unlock()
	if deliver {
		b.dispatch()
	}
}

// Following reports whether the breaker follows a remote state.
func (b *Breaker) Following() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.following
}

// Epoch returns the epoch of the last Remote applied (0 if none).
func (b *Breaker) Epoch() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.remoteEpoch
}

// Apply moves the breaker to a state decided elsewhere. A different state
// is a transition like any other (new generation, event with r.Rule). The
// same open or half-open state in a new epoch starts a new generation
// without an event, so that probes and tokens of the earlier epoch are
// ignored; closed stays closed in the same generation, so that requests
// under way when a replica joins the fleet are still counted. A new
// epoch also empties the
// tally's window and probe figures (they belonged to the old epoch) and
// keeps its exact counts. Closing through Apply starts the recovery ramp
// as a local close does (unless the rule is RuleManual).
func (b *Breaker) Apply(r Remote) {
	b.mu.Lock()
	now := b.now()
	newEpoch := r.Epoch != b.remoteEpoch
	if newEpoch {
		b.remoteEpoch = r.Epoch
		b.tally = Tally{Epoch: r.Epoch, Successes: b.tally.Successes, Failures: b.tally.Failures, Neutral: b.tally.Neutral}
		b.leases = 0
	}
	switch {
	case r.State != b.state:
		if r.State == Open {
			b.openedAt, b.everOpen = now, true
		}
		from := b.state
		b.transitionLocked(r.State, r.Rule, now, r.OpenFor)
		if r.State == Closed && from == HalfOpen && r.Rule != RuleManual && b.p.RecoveryDuration > 0 {
			b.ramping, b.rampStart, b.rampAcc = true, now, 0
		}
	case newEpoch && r.State != Closed:
		b.newGenerationLocked()
	}
	b.forced = r.State == Open && r.Forced
	if r.State == Open {
		b.openUntil = now + int64(r.OpenFor)
	}
	b.trips = r.Trips
	if r.State == HalfOpen {
		b.leases += r.GrantProbes
	}
	b.publishLocked()
	deliver := len(b.queue) > 0 && !b.dispatching
	b.mu.Unlock()
	if deliver {
		b.dispatch()
	}
}

// newGenerationLocked starts a generation in the same state: outstanding
// tokens are ignored from now on, probe slots are free.
func (b *Breaker) newGenerationLocked() {
	b.gen++
	for i := range b.probes {
		b.probes[i].busy = false
	}
	b.probeSuccesses = 0
}

// tallyClosedLocked counts a closed-state outcome into the tally.
func (b *Breaker) tallyClosedLocked(o Outcome, slow bool) {
	t := &b.tally
	switch o.Result {
	case Success:
		t.Successes++
		t.WindowTotal++
		t.Streak, t.Broken = 0, true
	case Failure:
		t.Failures++
		t.WindowTotal++
		t.WindowFailures++
		t.Streak++
	default:
		t.Neutral++
		return
	}
	if slow {
		t.WindowSlow++
	}
}

// tallyProbeLocked counts a probe outcome into the tally.
func (b *Breaker) tallyProbeLocked(o Outcome) {
	t := &b.tally
	t.ProbesDone++
	switch {
	case o.Result == Failure:
		t.Failures++
		t.ProbeFailures++
	case o.Result == Success:
		t.Successes++
		if b.p.slowRule() && o.Elapsed > b.p.SlowCallDuration {
			t.ProbeFailures++
		} else {
			t.ProbeSuccesses++
		}
	default:
		t.Neutral++
	}
}

// admitFollowingProbeLocked admits a half-open probe on a granted lease.
func (b *Breaker) admitFollowingProbeLocked(now int64) Decision {
	if b.leases > 0 {
		for i := range b.probes {
			s := &b.probes[i]
			if !s.busy {
				b.leases--
				s.busy = true
				s.seq++
				s.deadline = now + int64(b.p.ProbeTimeout)
				b.admitted++
				return Decision{Admitted: true, Token: Token{b: b, gen: b.gen, seq: s.seq, slot: int32(i), kind: kindProbe}}
			}
		}
	}
	if b.tallying {
		b.tally.WantProbes++
	}
	return b.rejectLocked(time.Second)
}
