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
		if !b.forced && now >= b.openUntil {
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
	if o.Result != Success && o.Result != Failure {
		return
	}
	p := &b.p
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
