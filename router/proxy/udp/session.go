package udp

import (
	"container/list"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
)

// Listener serves one UDP socket: its session table.
type Listener struct {
	p    *Proxy
	name string
	pc   net.PacketConn

	mu       sync.Mutex
	sessions map[string]*session // by client address
	// lru orders the sessions by their last datagram either way, the most
	// recent at the front: an eviction takes the back.
	lru    list.List
	closed bool
}

type session struct {
	key    string // the client address, the session's key in the table
	client net.Addr
	back   net.Conn
	route  string
	idle   time.Duration
	// answer is the route's udp.circuitBreaker.answerTimeout; zero off.
	answer time.Duration

	// guarded by Listener.mu
	last time.Time
	elem *list.Element // in Listener.lru; nil once removed
	due  time.Time     // system clock: the backend owes an answer by then; zero when it owes none

	// tok reports the session's one outcome to the route's breaker;
	// judged is set by whoever reports it.
	tok    breaker.Token
	judged atomic.Bool
}

// Listen returns the session table of pc, a UDP socket named listener;
// Serve runs it.
func (p *Proxy) Listen(pc net.PacketConn, listener string) *Listener {
	return &Listener{p: p, name: listener, pc: pc, sessions: map[string]*session{}}
}

// session returns from's session, opening one; nil drops the datagram.
func (l *Listener) session(from net.Addr) *session {
	key := from.String()
	now := l.p.opts.Now()
	l.mu.Lock()
	if s := l.sessions[key]; s != nil {
		l.touch(s, now)
		l.mu.Unlock()
		return s
	}
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return nil
	}
	rt := l.p.opts.Snapshot().MatchUDP(l.name)
	if rt == nil {
		l.p.sessions.WithLabelValues(l.name, "", OutcomeNoRoute).Inc()
		return nil
	}
	id := rt.ID()
	tok, ok := l.admit(rt)
	if !ok {
		return nil
	}
	addr := pick(rt)
	if addr == "" {
		tok.Report(breaker.Outcome{Result: breaker.Neutral})
		l.p.sessions.WithLabelValues(l.name, id, OutcomeNoBackend).Inc()
		return nil
	}
	back, err := l.p.opts.Dial(addr)
	if err != nil {
		// Opening a UDP socket sends nothing: the failure is Levee's.
		tok.Report(breaker.Outcome{Result: breaker.Neutral})
		l.p.sessions.WithLabelValues(l.name, id, OutcomeDialFailed).Inc()
		l.p.log.Warn().Str("listener", l.name).Str("route", id).Str("backend", addr).Err(err).Msg("udp backend socket failed")
		return nil
	}
	cfg := rt.Config().UDP
	s := &session{key: key, client: from, back: back, route: id, idle: cfg.IdleTimeout, answer: cfg.AnswerTimeout, last: now, tok: tok}
	if s.idle <= 0 {
		s.idle = config.DefaultUDPIdleTimeout
	}
	if !l.insert(s, cfg.MaxSessions) {
		// Closed, or another datagram of the client won the race: this
		// one is dropped, as UDP may.
		_ = back.Close()
		l.judge(s, breaker.Neutral)
		return nil
	}
	l.p.sessions.WithLabelValues(l.name, id, OutcomeOpened).Inc()
	l.p.open.WithLabelValues(l.name).Inc()
	go l.replies(s)
	return s
}

// insert adds s to the table, first ending the least recently active
// sessions while the table holds max (config.DefaultUDPMaxSessions when
// not positive). It reports false, adding nothing, when the listener is
// closed or the client has a session already.
func (l *Listener) insert(s *session, max int) bool {
	if max <= 0 {
		max = config.DefaultUDPMaxSessions
	}
	var evicted []*session
	l.mu.Lock()
	if l.closed || l.sessions[s.key] != nil {
		l.mu.Unlock()
		return false
	}
	for len(l.sessions) >= max {
		v := l.lru.Back().Value.(*session)
		l.remove(v)
		evicted = append(evicted, v)
	}
	l.sessions[s.key] = s
	s.elem = l.lru.PushFront(s)
	l.mu.Unlock()
	for _, v := range evicted {
		l.closeSession(v)
		l.p.evicted.WithLabelValues(l.name).Inc()
	}
	return true
}

// touch marks s active at now. Callers hold l.mu.
func (l *Listener) touch(s *session, now time.Time) {
	s.last = now
	if s.elem != nil {
		l.lru.MoveToFront(s.elem)
	}
}

// remove takes s out of the table. Callers hold l.mu, and close s after.
func (l *Listener) remove(s *session) {
	delete(l.sessions, s.key)
	l.lru.Remove(s.elem)
	s.elem = nil
}

// end removes session s (if it is still in the table) and closes it.
func (l *Listener) end(s *session) {
	l.mu.Lock()
	mine := s.elem != nil
	if mine {
		l.remove(s)
	}
	l.mu.Unlock()
	if mine {
		l.closeSession(s)
	} else {
		_ = s.back.Close()
	}
}

// closeSession closes the socket of s, just taken out of the table, and
// settles its outcome if nothing judged it: a session that ends without
// an answer or a failure tells the breaker nothing.
func (l *Listener) closeSession(s *session) {
	_ = s.back.Close()
	l.judge(s, breaker.Neutral)
	l.p.open.WithLabelValues(l.name).Dec()
}

// Sweep ends the sessions idle for their route's udp.idleTimeout.
func (l *Listener) Sweep() {
	now := l.p.opts.Now()
	var idle []*session
	l.mu.Lock()
	for _, s := range l.sessions {
		if now.Sub(s.last) >= s.idle {
			l.remove(s)
			idle = append(idle, s)
		}
	}
	l.mu.Unlock()
	for _, s := range idle {
		l.closeSession(s)
		l.p.expired.WithLabelValues(l.name).Inc()
	}
}

// Sessions returns how many sessions are open.
func (l *Listener) Sessions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sessions)
}

// Close ends every session and stops opening new ones; it does not close
// the socket (its owner does, which ends Serve).
func (l *Listener) Close() error {
	l.mu.Lock()
	l.closed = true
	all := make([]*session, 0, len(l.sessions))
	for _, s := range l.sessions {
		l.remove(s)
		all = append(all, s)
	}
	l.mu.Unlock()
	for _, s := range all {
		l.closeSession(s)
	}
	return nil
}
