package breaker

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Clock tells the time. Only differences between readings are used, so a
// clock needs to be monotonic, not accurate.
type Clock interface{ Now() time.Time }

// Options are a breaker's collaborators.
type Options struct {
	// Clock is the time source; nil means the process's monotonic clock.
	Clock Clock
	// Rand returns a number in [0, 1) for cooldown jitter; nil means
	// math/rand/v2.Float64.
	Rand func() float64
}

// Decision is the answer of Admit.
type Decision struct {
	// Admitted is true when the request may go ahead. In Shadow mode it is
	// always true.
	Admitted bool
	// RetryAfter is set when the request is (or, in Shadow mode, would
	// have been) rejected: whole seconds until the breaker will admit
	// again, at least 1s; 1s in half-open and during the recovery ramp.
	RetryAfter time.Duration
	// Token records the outcome of an admitted request. A shadow-mode
	// admission that would have been rejected gets a Token whose reports
	// are ignored, exactly as the rejected request would have no outcome.
	Token Token
}

type tokenKind uint8

const (
	kindNone tokenKind = iota
	kindClosed
	kindProbe
)

// Token is an admission ticket. It is a small value: copy it freely, report
// it once. The zero Token ignores reports.
//
// Guarantees. A report is ignored when the breaker has changed state since
// the admission (generation), and when a half-open probe is reported twice
// or after the probe timeout freed its slot (per-slot sequence number).
// Closed-state admissions carry a unique admission number, and the breaker
// remembers the numbers of the last reports in a ring of 512 (indexed by
// number modulo 512): a second report of the same token is ignored unless,
// in between, a later admission with the same number modulo 512 was
// reported; only then is the duplicate counted. A first report is never
// mistaken for a duplicate, so it is never lost, however long the request
// takes.
type Token struct {
	b    *Breaker
	gen  uint64
	seq  uint64
	slot int32
	kind tokenKind
}

// Probe reports whether the token holds a half-open probe slot.
func (t Token) Probe() bool { return t.kind == kindProbe }

// reportedSlots is the size of the ring of recently reported closed-state
// admission numbers.
const reportedSlots = 512

// cacheLinePad keeps the hot atomics of Breaker on separate cache lines.
type cacheLinePad [64]byte

// Breaker is a circuit breaker. Create it with NewWithParams or New; all
// methods are safe for concurrent use.
type Breaker struct {
	// fast is gen<<2 | fastClosed while the closed state admits without
	// the lock (closed, no recovery ramp), gen<<2 | fastOpen while an
	// enforcing open breaker rejects without the lock, gen<<2 otherwise.
	fast atomic.Uint64
	// rejectUntil is, with fastOpen, the end of the open period
	// (monotonic ns; math.MaxInt64 when forced).
	rejectUntil atomic.Int64
	// forcedRetryAfter is the Retry-After of a forced-open breaker.
	forcedRetryAfter atomic.Int64
	_                cacheLinePad
	// seq numbers closed-state admissions.
	seq atomic.Uint64
	_   cacheLinePad
	// fastRejected counts lock-free rejections.
	fastRejected atomic.Uint64
	_            cacheLinePad

	name  string
	clock Clock
	rand  func() float64
	base  time.Time // time zero of the monotonic nanoseconds used inside

	mu    sync.Mutex
	p     Params
	state State
	gen   uint64

	win    window
	consec int
	// reported holds the admission numbers of recent closed-state reports
	// (see Token).
	reported [reportedSlots]uint64

	forced    bool
	trips     int
	openedAt  int64
	openUntil int64
	everOpen  bool

	probes         []probeSlot
	probeSuccesses int

	ramping   bool
	rampStart int64
	rampAcc   float64

	admitted, rejected            uint64 // besides seq (lock-free closed admissions)
	seqAtReset                    uint64
	successes, failures, neutrals uint64

	last Transition

	// sharing (see share.go)
	tallying, following bool
	tally               Tally
	leases              int
	remoteEpoch         uint64

	// event delivery
	queue       []Transition
	dispatching bool
	callbacks   []func(Transition) // copy-on-write
	observer    Observer
}

type probeSlot struct {
	busy     bool
	seq      uint64
	deadline int64
}

// NewWithParams returns a closed breaker. p is validated; invalid fields
// take their defaults (use Params.Validate first to learn about them).
func NewWithParams(name string, p Params, opt Options) *Breaker {
	p, _ = p.Validate()
	b := &Breaker{name: name, clock: opt.Clock, rand: opt.Rand, p: p}
	if b.rand == nil {
		b.rand = rand.Float64
	}
	if b.clock != nil {
		b.base = b.clock.Now()
	} else {
		b.base = time.Now()
	}
	b.win = newWindow(&b.p)
	b.probes = make([]probeSlot, p.HalfOpenProbes)
	b.gen = 1
	b.publishLocked()
	return b
}

// Name returns the breaker's name.
func (b *Breaker) Name() string { return b.name }

// now returns monotonic nanoseconds since b.base. With the real clock this
// is a single monotonic read (time.Since on a monotonic base).
func (b *Breaker) now() int64 {
	if b.clock == nil {
		return int64(time.Since(b.base))
	}
	return int64(b.clock.Now().Sub(b.base))
}

func (b *Breaker) at(ns int64) time.Time { return b.base.Add(time.Duration(ns)) }

// publishLocked refreshes the lock-free admission word.
func (b *Breaker) publishLocked() {
	w := b.gen << 2
	switch {
	case b.state == Closed && !b.ramping:
		w |= fastClosed
	case b.state == Open && b.p.Mode == Enforce:
		until := b.openUntil
		if b.forced {
			until = math.MaxInt64
			b.forcedRetryAfter.Store(int64(ceilSeconds(b.p.Cooldown)))
		}
		b.rejectUntil.Store(until)
		w |= fastOpen
	}
	b.fast.Store(w)
}

// State returns the current state, applying any transition due by time
// (open to half-open).
func (b *Breaker) State() State {
	b.mu.Lock()
	b.advanceLocked(b.now())
	s := b.state
	deliver := len(b.queue) > 0 && !b.dispatching
	b.mu.Unlock()
	if deliver {
		b.dispatch()
	}
	return s
}

// Stats returns a snapshot of the breaker, applying any transition due by
// time first.
func (b *Breaker) Stats() Stats {
	b.mu.Lock()
	now := b.now()
	b.advanceLocked(now)
	b.win.advance(now)
	s := Stats{
		Name:                b.name,
		State:               b.state,
		Mode:                b.p.Mode,
		Generation:          b.gen,
		Forced:              b.forced,
		WindowTotal:         b.win.total,
		WindowFailures:      b.win.failures,
		WindowSlow:          b.win.slow,
		ConsecutiveFailures: b.consec,
		Admitted:            b.admitted + b.seq.Load() - b.seqAtReset,
		Rejected:            b.rejected + b.fastRejected.Load(),
		Successes:           b.successes,
		Failures:            b.failures,
		Neutral:             b.neutrals,
		ProbeSuccesses:      b.probeSuccesses,
		Trips:               b.trips,
		Recovering:          b.ramping,
		LastTransition:      b.last,
	}
	if b.win.total > 0 {
		s.FailureRatio = float64(b.win.failures) / float64(b.win.total)
		s.SlowRatio = float64(b.win.slow) / float64(b.win.total)
	}
	if b.everOpen {
		s.OpenedAt = b.at(b.openedAt)
	}
	if b.state == Open {
		if b.forced {
			s.RetryAfter = ceilSeconds(b.p.Cooldown)
		} else {
			s.RetryAfter = ceilSeconds(time.Duration(b.openUntil - now))
		}
	}
	if b.state == HalfOpen {
		for _, p := range b.probes {
			if p.busy {
				s.ProbesInFlight++
			}
		}
	}
	if b.ramping {
		s.RecoveryShare = b.rampShare(now)
	}
	deliver := len(b.queue) > 0 && !b.dispatching
	b.mu.Unlock()
	if deliver {
		b.dispatch()
	}
	return s
}

// SetParams swaps the parameters; the state carries on. A window whose kind
// (count or time) or size changed starts empty. An open period already
// running keeps its end; the new cooldown applies from the next opening.
// Fewer probe slots drop the excess slots (their reports are ignored).
func (b *Breaker) SetParams(p Params) {
	p, _ = p.Validate()
	b.mu.Lock()
	if !b.win.sameShape(&p) {
		b.win = newWindow(&p)
	}
	if len(b.probes) != p.HalfOpenProbes {
		probes := make([]probeSlot, p.HalfOpenProbes)
		copy(probes, b.probes)
		b.probes = probes
	}
	if p.RecoveryDuration == 0 {
		b.ramping = false
	}
	b.p = p
	b.publishLocked()
	b.mu.Unlock()
}

// Params returns the current (validated) parameters.
func (b *Breaker) Params() Params {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.p
}
