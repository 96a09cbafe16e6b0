package proxy

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/httpx/client"
)

// Passive health: the request path judges every attempt (see outcome and
// classify for what counts as a failure) and ejects a backend from the
// route's rotation after consecutive failures. The record lives in the
// router's backend state (router.EjectionState), so that it outlives
// snapshots and shows in the status views; only this file writes it.

// ejection is the passive-ejection policy in force for one route.
type ejection struct {
	after    int
	time     time.Duration
	maxTime  time.Duration
	maxShare float64
}

// ejectionOf is rt's policy: the route's own passiveHealth fields, which
// the validator always fills, and for a field left zero (an entrypoint
// built without the validator) the handler's Options.
func (p *Handler) ejectionOf(rt *router.Route) ejection {
	ph := rt.Config().PassiveHealth
	e := ejection{after: ph.ConsecutiveFailures, time: ph.EjectTime, maxTime: ph.MaxEjectTime, maxShare: ph.MaxEjectedShare}
	if e.after <= 0 {
		e.after = p.opts.EjectAfter
	}
	if e.time <= 0 {
		e.time = p.opts.EjectTime
	}
	if e.maxTime <= 0 {
		e.maxTime = p.opts.EjectMaxTime
	}
	// The cap is never below the first ejection.
	e.maxTime = max(e.maxTime, e.time)
	if e.maxShare <= 0 || e.maxShare > 1 {
		e.maxShare = p.opts.EjectMaxShare
	}
	return e
}

// passive feeds one attempt's result to passive ejection: the route's
// consecutive failures eject the backend for its eject time·2^n (n =
// ejections in a row, capped at its max eject time), unless that would
// eject more than the route's max ejected share of its backends; the
// eligibility filter fails open when every backend is ejected. A negative
// Options.EjectAfter turns passive ejection off for every route. Ejection
// never touches breakers.
//
// A refused attempt (connect refused, reset or timed out: the backend is
// not listening) ejects the backend at once, without waiting for more
// consecutive failures: a replica that stopped listening (a restart, a
// crash) would otherwise take a connect and a retry from every request
// until the threshold, and from the next requests again. The same eject
// time, backoff and max ejected share apply.
func (p *Handler) passive(rt *router.Route, b *router.Backend, failed, refused bool, err error, now int64) {
	st := b.State().Ejection()
	if !failed {
		if st.Failures.Load() != 0 {
			st.Failures.Store(0)
		}
		// A backend that stays good for as long as it was last ejected
		// starts its backoff from scratch.
		if st.Run.Load() != 0 {
			if u := st.Until.Load(); now > u+st.Last.Load() {
				st.Run.Store(0)
			}
		}
		return
	}
	if p.opts.EjectAfter < 0 {
		return
	}
	pol := p.ejectionOf(rt)
	if int(st.Failures.Add(1)) < pol.after && !refused {
		return
	}
	rs := rt.State()
	rs.LockEjection()
	defer rs.UnlockEjection()
	if st.Ejected(now) {
		return
	}
	bs := rt.Backends()
	ejected := 0
	for _, o := range bs {
		if o.State() != b.State() && o.State().Ejected(now) {
			ejected++
		}
	}
	limit := max(1, int(pol.maxShare*float64(len(bs))))
	if ejected+1 > limit {
		return
	}
	n := st.Run.Load()
	d := pol.time
	for i := int32(0); i < n && d < pol.maxTime; i++ {
		d *= 2
	}
	d = min(d, pol.maxTime)
	st.Until.Store(now + int64(d))
	st.Last.Store(int64(d))
	st.Run.Add(1)
	st.Failures.Store(0)
	msg, connect := "backend ejected after consecutive failures", ""
	if refused {
		connect, msg = connectFailure(err)
	}
	p.log.Warn().Str("event", "backend_ejected").Str("route", rt.Config().ID).Str("backend", b.HostPort()).
		Int("after_failures", pol.after).Bool("refused", connect == connectRefused).Str("connect", connect).
		Dur("for_ms", d).Int32("ejections_in_a_row", n+1).Msg(msg)
}

// Why a connect failed, as the ejection log's connect field says it.
const (
	connectRefused     = "refused"     // the backend's host answered: nothing listens (RST)
	connectTimeout     = "timeout"     // nothing answered: no route to it from here, a firewall, or a host gone
	connectReset       = "reset"       // the handshake was cut
	connectUnreachable = "unreachable" // the network said there is no way to the address
	connectFailed      = "failed"      // anything else
	// An HTTP/2 backend took the request on no stream (refusedstream.go).
	connectStreamRefused = "stream_refused"
)

// connectFailure classifies a failed connect and words its ejection: a
// refusal and a timeout mean different things to an operator (a stopped
// server, or an address Levee cannot reach, e.g. no shared network).
func connectFailure(err error) (cause, msg string) {
	var ne net.Error
	var se *client.StreamRefusedError
	switch {
	case errors.As(err, &se):
		return connectStreamRefused, "backend ejected: it took the request on no HTTP/2 stream (" + se.Reason + ")"
	case errors.Is(err, syscall.ECONNREFUSED):
		return connectRefused, "backend ejected: it refused a connection"
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return connectTimeout, "backend ejected: connecting to it timed out (nothing answered: is it on a network Levee shares?)"
	case errors.Is(err, syscall.ECONNRESET):
		return connectReset, "backend ejected: it reset the connection while connecting"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return connectUnreachable, "backend ejected: its address is unreachable"
	}
	return connectFailed, "backend ejected: connecting to it failed"
}
