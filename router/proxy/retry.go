package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/httpx/client"
)

// maxReplayBody is the largest request body buffered so that it can be
// sent again on a retry, on a route that sets no retry.bodyBuffer; larger
// bodies stream and are not retried.
const maxReplayBody = config.DefaultRetryBodyBuffer

// replayLimit is the largest request body buffered for the route.
func (x *exchange) replayLimit() int64 {
	if n := x.route.Config().Retry.BodyBuffer; n > 0 {
		return n
	}
	return maxReplayBody
}

// mayRetry applies the retry rules to a failed attempt.
//
// An attempt that never reached its backend (res.notSent: the connect was
// refused, reset or timed out) is retried on another backend whatever the
// method and whatever retry.attempts says, and without drawing on the
// retry budget: no backend saw the request, so sending it elsewhere is not
// a repeat and adds no load (the budget bounds the extra load retries put
// on backends). It is bounded all the same: the refused backend is
// excluded for the rest of the request, so there is at most one such
// attempt per backend. The same holds for an idempotent request (RFC 9110
// 9.2.2) whose connection the backend closed or reset before answering
// (res.noAnswer), as nginx's default proxy_next_upstream does: a backend
// shutting down closes the connections it accepted but did not serve.
// This is what makes a rolling restart lose no request: a replica that
// stopped listening or closed its connections before Levee heard it was
// stopping costs a connect and a retry, not an error.
func (x *exchange) mayRetry(res *attemptResult, maxAttempts int) bool {
	if !x.replayable || x.req.Context().Err() != nil {
		return false
	}
	if res.notSent || res.noAnswer && client.Idempotent(x.req) {
		return true
	}
	if res.refusedStream {
		// Not processed either, but within the budget (refusedstream.go).
		return x.refusedStreamRetry()
	}
	if x.attempts-x.free >= maxAttempts {
		return false
	}
	// A request that may have reached the backend is retried only when
	// repeating it is harmless.
	if !client.Idempotent(x.req) {
		return false
	}
	return x.retryBudgetAllows()
}

// retryBudgetAllows reports whether the route's retry budget has room for
// one more attempt, and takes it when it has.
func (x *exchange) retryBudgetAllows() bool {
	return x.route.State().RetryBudget().Allow(x.p.clock.Now().UnixNano(), x.p.opts.RetryBudgetWindow, x.p.opts.RetryBudget, x.p.opts.RetryBudgetMin)
}

// bufferBody reads a small request body into memory so that a retry can
// send it again. A body over maxReplayBody streams as usual (what was read
// goes first) and makes the request not retryable.
func (x *exchange) bufferBody() {
	req := x.req
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 {
		x.replayable = true
		return
	}
	limit := x.replayLimit()
	if req.ContentLength > limit {
		return
	}
	size := req.ContentLength
	if size < 0 {
		size = 4 << 10
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+1))
	body := x.newClientBody()
	n, err := buf.ReadFrom(io.LimitReader(body, limit+1))
	if err != nil {
		x.badBody.Store(true) // ReadFrom returns nil at EOF: the client broke it
		return
	}
	if n > limit {
		// Too large to replay: stream it once, what was read first, then
		// the rest through the same clientBody (its limits and counts
		// carry on). The inbound req.Body stays as it is (see attempt).
		x.stream = streamBody{Reader: io.MultiReader(bytes.NewReader(buf.Bytes()), body), Closer: body}
		return
	}
	x.body = buf.Bytes()
	x.replayable = true
	x.bodyEOF.Store(true)
}

// neverSent reports whether a failed attempt's error says that the request
// never reached the backend: connecting failed (refused, reset during the
// handshake, timed out). Both backend clients report a failed connect as
// the dialer's *net.OpError with Op "dial": Levee's client returns the
// dialer's error as it is, and net/http's Transport does too when no proxy
// is involved (Levee never sets one). A request written on a pooled
// connection that the backend had closed is not counted here: both
// clients already send it again on a new connection when that is safe
// (nothing written, or nothing answered to an idempotent request), and
// return a failure of that new connection's connect, which is.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func discard(resp *http.Response) {
	// Drain a little so that the connection can be reused; a large error
	// page is not worth waiting for.
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	_ = resp.Body.Close()
}
