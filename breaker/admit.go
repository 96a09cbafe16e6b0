package breaker

import (
	"math"
	"time"
)

const (
	fastClosed = 1
	fastOpen   = 2
)

// Admit decides whether a request may go ahead. It never allocates; in the
// closed state (outside a recovery ramp) it takes no lock and reads no
// clock.
func (b *Breaker) Admit() Decision {
	w := b.fast.Load()
	if w&fastClosed != 0 {
		return Decision{Admitted: true, Token: b.closedToken(w >> 2)}
	}
	if w&fastOpen != 0 {
		if d, ok := b.rejectFast(); ok {
			return d
		}
	}
	b.mu.Lock()
	d := b.admitLocked(b.now())
	deliver := len(b.queue) > 0 && !b.dispatching
	b.mu.Unlock()
	if deliver {
		b.dispatch()
	}
	return d
}

// rejectFast rejects without the lock while the open period runs. The
// forced case reads no clock.
func (b *Breaker) rejectFast() (Decision, bool) {
	until := b.rejectUntil.Load()
	var ra time.Duration
	if until == math.MaxInt64 {
		ra = time.Duration(b.forcedRetryAfter.Load())
	} else {
		now := b.now()
		if now >= until {
			return Decision{}, false // half-open is due: the locked path moves there
		}
		ra = ceilSeconds(time.Duration(until - now))
	}
	b.fastRejected.Add(1)
	return Decision{RetryAfter: ra}, true
}

func (b *Breaker) closedToken(gen uint64) Token {
	s := b.seq.Add(1)
	return Token{b: b, gen: gen, seq: s, kind: kindClosed}
}

func (b *Breaker) admitLocked(now int64) Decision {
	b.advanceLocked(now)
	switch b.state {
	case Open:
		var ra time.Duration
		if b.forced {
			ra = ceilSeconds(b.p.Cooldown)
		} else {
			ra = ceilSeconds(time.Duration(b.openUntil - now))
		}
		return b.rejectLocked(ra)
	case HalfOpen:
		if b.following {
			return b.admitFollowingProbeLocked(now)
		}
		for i := range b.probes {
			s := &b.probes[i]
			if !s.busy {
				s.busy = true
				s.seq++
				s.deadline = now + int64(b.p.ProbeTimeout)
				b.admitted++
				return Decision{Admitted: true, Token: Token{b: b, gen: b.gen, seq: s.seq, slot: int32(i), kind: kindProbe}}
			}
		}
		return b.rejectLocked(time.Second)
	}
	if b.ramping {
		// Error diffusion: each request adds the current share; a request
		// is admitted when a whole one has accumulated. The admitted share
		// follows the ramp exactly, with no randomness and no memory of
		// earlier (smaller) shares.
		b.rampAcc += b.rampShare(now)
		if b.rampAcc < 1 {
			return b.rejectLocked(time.Second)
		}
		b.rampAcc--
	}
	return Decision{Admitted: true, Token: b.closedToken(b.gen)}
}

func (b *Breaker) rejectLocked(ra time.Duration) Decision {
	b.rejected++
	if b.p.Mode == Shadow {
		return Decision{Admitted: true, RetryAfter: ra}
	}
	return Decision{RetryAfter: ra}
}

// ceilSeconds rounds d up to whole seconds, at least one.
func ceilSeconds(d time.Duration) time.Duration {
	if d <= time.Second {
		return time.Second
	}
	return (d + time.Second - 1) / time.Second * time.Second
}

func (b *Breaker) rampShare(now int64) float64 {
	return float64(now-b.rampStart) / float64(b.p.RecoveryDuration)
}

// advanceLocked applies the transitions due by time alone: open to
// half-open once the open period is over, end of the recovery ramp, expiry
// of unreported probes.
func (b *Breaker) advanceLocked(now int64) {
	switch b.state {
	case Open:
		if !b.forced && !b.following && now >= b.openUntil {
			b.transitionLocked(HalfOpen, RuleNone, now, 0)
		}
	case Closed:
		if b.ramping && now-b.rampStart >= int64(b.p.RecoveryDuration) {
			b.ramping = false
			b.publishLocked()
		}
	}
	if b.state == HalfOpen {
		for i := range b.probes {
			if s := &b.probes[i]; s.busy && now >= s.deadline {
				s.busy = false // a late report finds the slot free or re-used: ignored
			}
		}
	}
}
