package fleet

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/redis/go-redis/v9"
)

// listen subscribes to the event channel and waits, at most Timeout, for
// Redis to confirm it: once New returns, every announcement another
// replica makes reaches this one. A store that does not confirm in time
// does not hold up the start; go-redis subscribes when it can, and the
// next flush makes up for what was announced meanwhile.
func (s *Store) listen(ctx context.Context) *redis.PubSub {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	ps := s.client.Subscribe(ctx, s.channel)
	msg, err := ps.Receive(ctx)
	switch msg := msg.(type) {
	case *redis.Message: // an announcement beat the confirmation
		s.handle(msg.Payload)
	case nil:
		s.log.Warn().Str("event", "breaker_store_unconfirmed").Str("channel", s.channel).Err(err).
			Msg("breaker store events not confirmed yet: announcements are made up for by the flush until they are")
	}
	return ps
}

// subscribe applies the transitions and operator actions other replicas'
// scripts announce. go-redis re-subscribes by itself after a connection
// loss; a message lost meanwhile is made up for by the next flush, which
// answers the fleet state.
func (s *Store) subscribe(ctx context.Context, ps *redis.PubSub) {
	defer s.done.Done()
	defer ps.Close()
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			s.handle(msg.Payload)
		}
	}
}

func (s *Store) handle(payload string) {
	if err := s.onEvent(payload); err != nil {
		s.log.Warn().Str("event", "breaker_store_bad_event").Err(err).Msg("ignoring a malformed breaker store event")
	}
}

// event is a decoded announcement: "S" a transition decided by a flush,
// "C" an operator action.
type event struct {
	kind, name, action, by string
	remote                 breaker.Remote
	ctl                    int64
}

// parseEvent decodes "S\nname\nstate\ngen\nremain_ms\nforced\ntrips\nrule"
// and "C\nname\nstate\ngen\nremain_ms\nforced\ntrips\naction\nctl\nby".
func parseEvent(p string) (event, error) {
	f := strings.Split(p, "\n")
	if len(f) < 8 || (f[0] == "C" && len(f) < 10) || (f[0] != "S" && f[0] != "C") {
		return event{}, fmt.Errorf("event %q: wrong shape", p)
	}
	st, ok := parseState(f[2])
	gen, err1 := strconv.ParseUint(f[3], 10, 64)
	remain, err2 := strconv.ParseInt(f[4], 10, 64)
	trips, err3 := strconv.Atoi(f[6])
	if !ok || err1 != nil || err2 != nil || err3 != nil {
		return event{}, fmt.Errorf("event %q: bad field", p)
	}
	e := event{kind: f[0], name: f[1], remote: breaker.Remote{Epoch: gen, State: st,
		OpenFor: time.Duration(remain) * time.Millisecond, Forced: f[5] == "1", Trips: trips}}
	if e.kind == "S" {
		e.remote.Rule = parseRule(f[7])
		return e, nil
	}
	e.action, e.by = f[7], strings.Join(f[9:], "\n")
	e.remote.Rule = breaker.RuleManual
	ctl, err := strconv.ParseInt(f[8], 10, 64)
	if err != nil {
		return event{}, fmt.Errorf("event %q: bad control number", p)
	}
	e.ctl = ctl
	return e, nil
}

func (s *Store) onEvent(payload string) error {
	e, err := parseEvent(payload)
	if err != nil {
		return err
	}
	m := s.member(e.name)
	if m == nil {
		return nil // a breaker this replica does not have
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.local {
		return nil // judging locally: the rejoin applies the fleet state
	}
	if e.kind == "C" {
		s.controlLocked(m, e)
		return nil
	}
	if e.remote.Epoch > m.epoch {
		s.applyLocked(m, e.remote, e.remote.Epoch)
	}
	return nil
}

// controlLocked applies an operator action once per replica (m.mu held).
func (s *Store) controlLocked(m *member, e event) {
	if e.ctl <= m.ctl {
		return
	}
	m.ctl = e.ctl
	if m.control != nil {
		m.control(e.action, e.by)
	}
	if e.remote.Epoch >= m.epoch {
		m.epoch = e.remote.Epoch
		m.b.Apply(e.remote)
	}
}

// Control applies an operator action ("open", "close" or "reset") to the
// whole fleet: the store records it and announces it, and every replica
// (this one before Control returns) applies it through the control
// function given to Join. An error means the store could not be reached:
// the caller should act locally.
func (s *Store) Control(ctx context.Context, name, action, by string) error {
	m := s.member(name)
	if m == nil {
		return fmt.Errorf("breaker store control %s of %q: breaker not shared", action, name)
	}
	ctx, cancel := context.WithTimeout(ctx, max(s.opts.Timeout, time.Second))
	defer cancel()
	keys := []string{m.keys[0], m.keys[1], m.keys[3]}
	v, err := controlScript.Run(ctx, s.client, keys, action, by, s.channel, name, keyTTL.Milliseconds()).Slice()
	if err != nil {
		return fmt.Errorf("breaker store control %s of %q: %w", action, name, err)
	}
	if len(v) < 5 {
		return fmt.Errorf("breaker store control %s of %q: %w", action, name, errMalformed)
	}
	state, _ := v[0].(string)
	gen, _ := v[1].(int64)
	forced, _ := v[2].(int64)
	trips, _ := v[3].(int64)
	ctl, _ := v[4].(int64)
	st, ok := parseState(state)
	if !ok || gen <= 0 {
		return fmt.Errorf("breaker store control %s of %q: %w", action, name, errMalformed)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s.controlLocked(m, event{kind: "C", name: name, action: action, by: by, ctl: ctl,
		remote: breaker.Remote{Epoch: uint64(gen), State: st, Rule: breaker.RuleManual, Forced: forced == 1, Trips: int(trips)}})
	return nil
}
