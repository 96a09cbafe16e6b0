package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/levee-proxy/levee/breaker"
)

func (s *Store) flushLoop(ctx context.Context) {
	defer s.done.Done()
	t := time.NewTicker(s.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Flush(ctx)
		}
	}
}

// call is one member's script call in a flush round.
type call struct {
	m    *member
	b    *batch
	keys []string
	args []any
	cmd  *redis.Cmd
}

// Flush runs one flush round now: every shared breaker's batch goes to
// the store in one pipeline, and each breaker applies the answer (or
// falls back to local judgement when there is none). The flush loop calls
// it every FlushInterval; tests call it directly.
func (s *Store) Flush(ctx context.Context) {
	members := s.snapshotMembers()
	if len(members) == 0 {
		s.publishDiagnostics()
		return
	}
	now := time.Now()
	calls := make([]call, 0, len(members))
	outcomes := 0
	for _, m := range members {
		m.mu.Lock()
		b, dropped := m.nextBatch(s.opts.Replica, now, s.opts.RetryFor)
		if dropped {
			s.metrics.dropped.Inc()
			b, _ = m.nextBatch(s.opts.Replica, now, s.opts.RetryFor)
		}
		args := s.args(m, b, now)
		m.mu.Unlock()
		outcomes += int(b.t.Successes + b.t.Failures + b.t.Neutral)
		keys := []string{m.keys[0], m.keys[1], m.keys[2], m.keys[3], m.keys[0] + ":batch:" + b.id}
		calls = append(calls, call{m: m, b: b, keys: keys, args: args})
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	start := time.Now()
	s.run(ctx, calls)
	end := time.Now()
	s.metrics.flushSeconds.Observe(end.Sub(start).Seconds())
	s.metrics.batchOutcomes.Observe(float64(outcomes))
	for i := range calls {
		s.settle(&calls[i], end)
	}
	s.publishDiagnostics()
}

// args builds a member's script arguments (m.mu held).
func (s *Store) args(m *member, b *batch, now time.Time) []any {
	t := b.t
	a := make([]any, 0, argCount)
	a = append(a, s.opts.Replica)
	a = append(a, m.paramsArgs(now, s.opts.Window)...)
	a = append(a, t.Successes, t.Failures, t.Neutral, t.Epoch,
		t.WindowTotal, t.WindowFailures, t.WindowSlow, t.Streak, b2i(t.Broken),
		t.ProbeSuccesses, t.ProbeFailures, t.ProbesDone+t.ReturnedLeases, t.WantProbes,
		s.opts.Rand(), s.channel, m.name, keyTTL.Milliseconds(), batchTTL.Milliseconds())
	return a
}

// run sends the calls in one pipeline by script digest, and once more
// with the script source for those the store did not know (NOSCRIPT: a
// restarted or flushed store). The batch ids make the second send safe.
func (s *Store) run(ctx context.Context, calls []call) {
	pipe := s.client.Pipeline()
	for i := range calls {
		calls[i].cmd = flushScript.EvalSha(ctx, pipe, calls[i].keys, calls[i].args...)
	}
	_, _ = pipe.Exec(ctx)
	var again []int
	for i := range calls {
		if err := calls[i].cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return
	}
	pipe = s.client.Pipeline()
	for _, i := range again {
		calls[i].cmd = flushScript.Eval(ctx, pipe, calls[i].keys, calls[i].args...)
	}
	_, _ = pipe.Exec(ctx)
}

// settle applies one call's answer, which arrived (or failed) at now.
func (s *Store) settle(c *call, now time.Time) {
	m := c.m
	rep, err := parseReply(c.cmd)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		s.metrics.errors.Inc()
		s.failed(m, err, now)
		s.metrics.window.WithLabelValues(m.name, "local").Set(float64(m.b.Stats().WindowTotal))
		return
	}
	if m.pending == c.b {
		m.pending = nil
	}
	if !rep.dup {
		s.metrics.flushed.WithLabelValues(m.name).Add(float64(c.b.t.Successes + c.b.t.Failures + c.b.t.Neutral))
	}
	m.window = Window{Total: rep.winTotal, Failures: rep.winFailures, Slow: rep.winSlow}
	m.mismatch = rep.mismatch
	follow := m.link.observe(true, now, s.rule).following()
	switch {
	case m.local && follow:
		s.rejoin(m, rep)
	case !m.local:
		s.applyLocked(m, rep.remote, rep.gen)
	}
	// else: local still, counting good flushes toward the rejoin
	st := m.b.Stats()
	s.metrics.window.WithLabelValues(m.name, "fleet").Set(float64(rep.winTotal))
	s.metrics.window.WithLabelValues(m.name, "local").Set(float64(st.WindowTotal))
	if !m.local {
		s.metrics.fallback.WithLabelValues(m.name).Set(0)
	}
}

// failed takes a failed flush into account (m.mu held). An answer that
// makes no sense hands the breaker to local judgement at once; no answer
// does only once the store is gone by the fallback rule. Until then the
// store is late and the breaker keeps the fleet's last state. Its probe
// leases follow the usual rule: those unused went back with the batch the
// flush took (TakeTally), so a late store leaves none to probe on.
func (s *Store) failed(m *member, err error, now time.Time) {
	if isGarbage(err) {
		m.link.fallBack()
	} else {
		m.link.observe(false, now, s.rule)
	}
	switch m.link.mode {
	case linkLate, linkJoining:
		// joining: local anyway, and not yet a store gone
		s.log.Debug().Str("event", "breaker_store_late").Str("breaker", m.name).Int("failed_flushes", m.link.fails).
			Err(err).Msg("breaker store late: breaker keeps the fleet state")
	case linkLocal:
		s.fallback(m, err)
	}
}

// applyLocked applies a fleet state newer than (or as new as) the one
// the breaker has; an older answer (an event overtook it) is ignored.
func (s *Store) applyLocked(m *member, r breaker.Remote, gen uint64) {
	if gen < m.epoch {
		return
	}
	m.epoch = gen
	m.b.Apply(r)
}

// fallback hands the breaker back to local judgement (m.mu held).
func (s *Store) fallback(m *member, err error) {
	garbage := isGarbage(err)
	if !m.local || m.why == "" {
		ev := s.log.Warn().Str("event", "breaker_store_fallback").Str("breaker", m.name).Err(err).
			Int("failed_flushes", m.link.fails)
		ev.Msg("breaker store unavailable: breaker judges locally")
	}
	// The diagnostic names what made the breaker fall back; it changes
	// only when the kind of failure does, not with every failed flush.
	if !m.local || m.why == "" || m.garbage != garbage {
		m.why, m.garbage = err.Error(), garbage
	}
	m.local = true
	m.b.SetFollowing(false)
	s.metrics.fallback.WithLabelValues(m.name).Set(1)
}

// rejoin makes a local breaker follow the fleet again (m.mu held). The
// outcomes it judged locally meanwhile go to the fleet as exact counts
// only, so that the fleet window sees no stale burst.
func (s *Store) rejoin(m *member, rep reply) {
	m.carry = exactOnly(m.b.TakeTally())
	m.epoch = rep.gen
	m.b.Apply(rep.remote)
	m.b.SetFollowing(true)
	if m.why != "" {
		s.log.Info().Str("event", "breaker_store_rejoined").Str("breaker", m.name).
			Str("state", rep.remote.State.String()).Msg("breaker store reachable again: breaker follows the fleet")
	}
	m.local, m.why, m.garbage = false, "", false
}

// isGarbage tells an answer the store gave but that makes no sense (wrong
// key type, script error, malformed reply) from no answer at all.
func isGarbage(err error) bool {
	var re redis.Error
	return errors.As(err, &re) || errors.Is(err, errMalformed)
}

var errMalformed = errors.New("malformed reply")

// reply is the flush script's answer.
type reply struct {
	remote                         breaker.Remote
	gen                            uint64
	dup, mismatch                  bool
	winTotal, winFailures, winSlow int
}

func parseReply(cmd *redis.Cmd) (reply, error) {
	if err := cmd.Err(); err != nil {
		return reply{}, err
	}
	v, err := cmd.Slice()
	if err != nil {
		return reply{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if len(v) < 14 {
		return reply{}, fmt.Errorf("%w: %d fields, want 14", errMalformed, len(v))
	}
	ints := make([]int64, 13)
	for i, x := range v[:13] {
		if i == 0 || i == 12 {
			continue
		}
		n, ok := x.(int64)
		if !ok {
			return reply{}, fmt.Errorf("%w: field %d is %T", errMalformed, i, x)
		}
		ints[i] = n
	}
	state, ok1 := v[0].(string)
	rule, ok2 := v[12].(string)
	st, ok3 := parseState(state)
	if !ok1 || !ok2 || !ok3 || ints[1] <= 0 {
		return reply{}, fmt.Errorf("%w: state %v rule %v generation %d", errMalformed, v[0], v[12], ints[1])
	}
	return reply{
		remote: breaker.Remote{Epoch: uint64(ints[1]), State: st, Rule: parseRule(rule),
			OpenFor: time.Duration(ints[2]) * time.Millisecond, Forced: ints[3] == 1,
			Trips: int(ints[4]), GrantProbes: int(ints[5])},
		gen: uint64(ints[1]), dup: ints[6] == 1, mismatch: ints[7] == 1,
		winTotal: int(ints[8]), winFailures: int(ints[9]), winSlow: int(ints[10]),
	}, nil
}

func parseState(s string) (breaker.State, bool) {
	switch s {
	case "closed":
		return breaker.Closed, true
	case "open":
		return breaker.Open, true
	case "half-open":
		return breaker.HalfOpen, true
	}
	return 0, false
}

func parseRule(s string) breaker.Rule {
	for r := breaker.RuleNone; r <= breaker.RuleManual; r++ {
		if r.String() == s {
			return r
		}
	}
	return breaker.RuleNone
}
