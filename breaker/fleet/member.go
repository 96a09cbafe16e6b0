package fleet

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/levee-proxy/levee/breaker"
)

func randFloat() float64 { return rand.Float64() }

// member is one shared breaker.
type member struct {
	name    string
	b       *breaker.Breaker
	control func(action, by string)
	keys    [4]string

	mu sync.Mutex // guards the fields below (flush loop and events)
	// link judges the store from this breaker's flushes; local is true
	// while the breaker judges locally (link not following): before the
	// first successful flush and during a fallback.
	link  link
	local bool
	// why says what made the breaker local (for its diagnostic); empty
	// before the first flush.
	why     string
	garbage bool
	// epoch is the store generation last applied; ctl the last control
	// action applied.
	epoch uint64
	ctl   int64
	// pending is the batch whose flush has not been acknowledged.
	pending *batch
	// carry are exact counts to add to the next batch (taken when
	// rejoining: their window figures were judged locally).
	carry  breaker.Tally
	seq    uint64
	window Window
	// params hash and the time it was first seen (its version).
	paramsHash    string
	paramsVersion int64
	mismatch      bool
}

// batch is one flush of one breaker: an id the store remembers, so that a
// retried batch is counted once.
type batch struct {
	id      string
	created time.Time
	t       breaker.Tally
}

// exactOnly keeps a tally's exact counts and drops what is judged (window,
// streak, probes, lease demand).
func exactOnly(t breaker.Tally) breaker.Tally {
	return breaker.Tally{Epoch: t.Epoch, Successes: t.Successes, Failures: t.Failures, Neutral: t.Neutral}
}

func addExact(t *breaker.Tally, c breaker.Tally) {
	t.Successes += c.Successes
	t.Failures += c.Failures
	t.Neutral += c.Neutral
}

// nextBatch returns the batch to send this round: the pending one if any
// (exact counts only once it is older than retryFor), else a new one with
// the breaker's tally.
func (m *member) nextBatch(replica string, now time.Time, retryFor time.Duration) (*batch, bool) {
	if p := m.pending; p != nil {
		if now.Sub(p.created) > batchGiveUp {
			m.pending = nil
			return nil, true // dropped
		}
		if now.Sub(p.created) > retryFor {
			p.t = exactOnly(p.t)
		}
		return p, false
	}
	t := m.b.TakeTally()
	if m.local {
		// judged locally: only the exact counts go to the fleet
		t = exactOnly(t)
	}
	addExact(&t, m.carry)
	m.carry = breaker.Tally{}
	m.seq++
	m.pending = &batch{id: replica + ":" + strconv.FormatUint(m.seq, 10), created: now, t: t}
	return m.pending, false
}

// paramsArgs returns the script's parameter arguments for the breaker's
// current parameters, with their hash and version.
func (m *member) paramsArgs(now time.Time, fleetWindow time.Duration) []any {
	p := m.b.Params()
	win := p.Window
	if win <= 0 {
		win = fleetWindow
	}
	slowThr := 0.0
	if p.SlowCallDuration > 0 {
		slowThr = p.SlowCallThreshold
	}
	args := []any{
		strconv.FormatFloat(p.Threshold, 'g', -1, 64), p.MinRequests, win.Milliseconds(), p.ConsecutiveFailures,
		strconv.FormatFloat(slowThr, 'g', -1, 64), p.Cooldown.Milliseconds(), p.MaxCooldown.Milliseconds(),
		p.HalfOpenProbes, p.SuccessesToClose, p.ProbeTimeout.Milliseconds(),
		strconv.FormatFloat(p.CooldownJitter, 'g', -1, 64),
	}
	var sb strings.Builder
	for _, a := range args {
		sb.WriteString(toString(a))
		sb.WriteByte('|')
	}
	if h := sb.String(); h != m.paramsHash {
		m.paramsHash, m.paramsVersion = h, now.UnixMilli()
	}
	return append(args, m.paramsHash, m.paramsVersion)
}

func toString(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
