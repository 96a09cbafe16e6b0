package proxy

import (
	"net/http"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router"
)

// Early data (RFC 8470) in the proxy. A request that arrived in 0-RTT
// early data can be replayed by anyone who saw it (RFC 9001 9.2): it is
// forwarded before the handshake completes only where the route allows
// it, marked Early-Data: 1; a backend unwilling to risk a replay answers
// 425 (Too Early), and Levee then retries it once the handshake is done,
// or passes the 425 on to a client that can retry it.

var valueEarlyData = []string{"1"}

// earlyState is what the exchange did with a request that arrived in
// early data.
type earlyState int8

const (
	_ earlyState = iota // the zero value: nothing done for early data
	// earlySent: forwarded before the handshake completed, marked
	// Early-Data: 1 by Levee (the client sent no Early-Data).
	earlySent
	// earlyRetried: the backend answered 425 and the request was sent
	// again once the handshake had completed, without Early-Data.
	earlyRetried
)

// admitEarly applies RFC 8470 to an HTTP/3 request that arrived in 0-RTT
// early data: it is forwarded at once, with Early-Data: 1 (RFC 8470 5.1),
// only when the route allows early data and the method is safe (RFC 9110
// 9.2.1); otherwise it waits until the handshake completes
// (awaitHandshake), and false says there is no one left to answer.
// Requests over TCP cost a call and one comparison (h3.Early).
func (x *exchange) admitEarly(allow bool) bool {
	done, early := x.p.early(x.req)
	if !early {
		return true
	}
	if allow && safeMethod(x.req.Method) {
		if _, marked := x.req.Header["Early-Data"]; !marked {
			x.req.Header["Early-Data"] = valueEarlyData
			x.early = earlySent
		}
		return true
	}
	return x.waitHandshake(done)
}

// awaitHandshake waits until the handshake of the client's connection has
// completed, when the request arrived in early data.
func (x *exchange) awaitHandshake() bool {
	done, early := x.p.early(x.req)
	return !early || x.waitHandshake(done)
}

// waitHandshake waits for done, the handshake's completion. The wait is
// bounded by the QUIC handshake timeout (the listener's header timeout
// without a packet, twice it from the connection's start in all): past it
// the connection is closed, the request's context ends, and false says
// there is no one left to answer.
func (x *exchange) waitHandshake(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-x.req.Context().Done():
		return false
	}
}

// tooEarly reports whether the attempt was answered 425 (Too Early) to a
// request sent marked Early-Data: 1, by Levee or by a hop before it.
func (x *exchange) tooEarly(res *attemptResult) bool {
	return res.err == nil && res.resp.StatusCode == http.StatusTooEarly && len(x.req.Header["Early-Data"]) > 0
}

// afterTooEarly judges a 425 to a request sent marked Early-Data: 1 (see
// tooEarly), returning whether it was answered to the client. The
// backend declined to risk a replay: a matter of the client's timing,
// never of the backend's health, so the attempt is neutral for both
// breakers, whatever their failure statuses say, and passive ejection is
// not told (neither a failure nor a success).
//
// RFC 8470 5.2: an intermediary MUST forward the 425 when the request it
// received carried Early-Data (a hop before it marked the request and
// retries it); otherwise, having received the request in early data, it
// MAY retry it, but only once the handshake on the client's connection
// has completed. Levee retries when it marked the request itself
// (earlySent) and can send the body again (replayable): once, without
// Early-Data, on the backend the balancer picks. That attempt is free
// (see mayRetry) and draws on no retry budget: the backend processed
// nothing, and it happens at most once a request, since the retry goes
// without Early-Data and its 425 is an answer like any other. Otherwise the
// 425 goes to the client, which sent the request in early data (or
// marked it) and so retries it itself (RFC 8470 5.2).
func (x *exchange) afterTooEarly(l *attemptLoop, b *router.Backend, btok breaker.Token, res *attemptResult) (answered bool) {
	o := breaker.Outcome{Result: breaker.Neutral, Elapsed: res.elapsed}
	l.tok.Report(o)
	btok.Report(o)
	if x.early != earlySent || !x.replayable || !x.awaitHandshake() {
		x.respond(b, res)
		return true
	}
	if l.guard != nil {
		// Admitted again, as every retry is (see try).
		d := l.guard.Breaker().Admit()
		if !d.Admitted {
			x.respond(b, res)
			return true
		}
		l.tok = d.Token
	}
	discard(res.resp)
	b.State().AddInFlight(-1)
	delete(x.req.Header, "Early-Data")
	x.early = earlyRetried
	x.free++
	// No failure to answer with: a retry that finds no backend left says
	// so (giveUp).
	l.last = attemptResult{}
	x.span.EndAttempt(nil)
	x.series().retry(retryTooEarly)
	return false
}

// safeMethod reports whether m is safe to replay (RFC 9110 9.2.1).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}
