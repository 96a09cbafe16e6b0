package udp

import (
	"errors"
	"syscall"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router"
)

// admit asks the route's breaker for a new session; an open one drops
// the datagram (and the router logs the breaker's transitions, not each
// drop).
func (l *Listener) admit(rt *router.Route) (breaker.Token, bool) {
	tok, ok := rt.State().AdmitConnection()
	if !ok {
		l.p.sessions.WithLabelValues(l.name, rt.ID(), OutcomeCircuitOpen).Inc()
	}
	return tok, ok
}

// judge reports r as the outcome of s to the breaker, unless an outcome
// was reported already: a session is one outcome, as a TCP connection.
func (l *Listener) judge(s *session, r breaker.Result) {
	if s.judged.CompareAndSwap(false, true) {
		s.tok.Report(breaker.Outcome{Result: r})
	}
}

// fail ends s after a backend failure: a failure of the breaker's when it
// is the session's first outcome (a session that answered before tells
// nothing more; the client's next datagram opens a session judged anew).
func (l *Listener) fail(s *session, reason string) {
	l.judge(s, breaker.Failure)
	l.p.failures.WithLabelValues(l.name, s.route, reason).Inc()
	l.p.log.Debug().Str("listener", l.name).Str("route", s.route).Str("client", s.client.String()).Str("reason", reason).Msg("udp session failed")
	l.end(s)
}

// awaitAnswer starts the answer wait of s before a client's datagram goes
// out, when the route has one and none runs: the backend owes a datagram
// back within the answer timeout.
func (l *Listener) awaitAnswer(s *session) {
	if s.answer <= 0 {
		return
	}
	l.mu.Lock()
	arm := s.due.IsZero()
	if arm {
		s.due = time.Now().Add(s.answer)
	}
	due := s.due
	l.mu.Unlock()
	if arm {
		_ = s.back.SetReadDeadline(due)
	}
}

// answered records a datagram from the backend of s: the session is
// active, owes no answer, and (the first time) is a success.
func (l *Listener) answered(s *session) {
	l.mu.Lock()
	l.touch(s, l.p.opts.Now())
	waited := !s.due.IsZero()
	s.due = time.Time{}
	l.mu.Unlock()
	if waited {
		_ = s.back.SetReadDeadline(time.Time{})
	}
	if !s.judged.Load() {
		l.judge(s, breaker.Success)
	}
}

// answerDue reports, after a read of s timed out, whether the answer wait
// is over; otherwise it sets the deadline the wait has now (none, or a
// later one armed meanwhile).
func (l *Listener) answerDue(s *session) bool {
	l.mu.Lock()
	due := s.due
	l.mu.Unlock()
	if !due.IsZero() && !time.Now().Before(due) {
		return true
	}
	_ = s.back.SetReadDeadline(due)
	return false
}

// isRefused reports an ICMP port unreachable, which a connected UDP
// socket returns as ECONNREFUSED on its next read or write.
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
