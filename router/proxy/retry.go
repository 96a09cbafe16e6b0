package proxy

import (
	"bytes"
	"io"
	"net/http"

	"github.com/levee-proxy/levee/router/httpx/client"
)

// maxReplayBody is the largest request body buffered so that it can be
// sent again on a retry; larger bodies stream and are not retried.
const maxReplayBody = 64 << 10

// mayRetry applies the retry rules to a failed attempt.
func (x *exchange) mayRetry(res *attemptResult, maxAttempts int) bool {
	if x.attempts >= maxAttempts || !x.replayable {
		return false
	}
	// A request that may have reached the backend is retried only when
	// repeating it is harmless; one that was refused never left.
	if !res.notSent && !client.Idempotent(x.req) {
		return false
	}
	if x.req.Context().Err() != nil {
		return false
	}
	rt := x.route
	return rt.State().RetryBudget().Allow(x.p.clock.Now().UnixNano(), x.p.opts.RetryBudgetWindow, x.p.opts.RetryBudget, x.p.opts.RetryBudgetMin)
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
	if req.ContentLength > maxReplayBody {
		return
	}
	size := req.ContentLength
	if size < 0 {
		size = 4 << 10
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+1))
	body := &clientBody{r: req.Body, c: req.Body, x: x}
	n, err := buf.ReadFrom(io.LimitReader(body, maxReplayBody+1))
	if err != nil {
		x.badBody.Store(true) // ReadFrom returns nil at EOF: the client broke it
		return
	}
	if n > maxReplayBody {
		// Too large to replay: stream it once, what was read first. The
		// inbound req.Body stays as it is (see attempt).
		x.stream = io.MultiReader(bytes.NewReader(buf.Bytes()), req.Body)
		return
	}
	x.body = buf.Bytes()
	x.replayable = true
	x.bodyEOF.Store(true)
}

func discard(resp *http.Response) {
	// Drain a little so that the connection can be reused; a large error
	// page is not worth waiting for.
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	_ = resp.Body.Close()
}
