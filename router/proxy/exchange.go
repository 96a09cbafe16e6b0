package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/httpx/client"
	"github.com/levee-proxy/levee/router/proxy/trace"
)

// exchange is one client request on its way through the proxy: the
// attempts, the backends tried, what was answered. It is the eligibility
// filter handed to the balancer.
type exchange struct {
	p     *Handler
	w     http.ResponseWriter
	req   *http.Request
	route *router.Route
	// transport is the backend client for the route's backend timeout.
	transport backendTransport
	start     time.Time
	now       int64 // clock nanoseconds at the start, for ejection checks

	// uri is the request target as the client sent it (the access log's
	// request line), before any normalising or rewriting.
	uri       string
	sent      int64 // body bytes written to the client (access log's %b)
	status    int
	headersAt time.Duration
	backend   *router.Backend
	attempts  int
	free      int // attempts that do not count toward retry.attempts: see mayRetry
	breakerSt breaker.State
	guarded   bool
	abort     bool // the backend broke the body: abort the client's response
	prepared  bool // the headers are prepared (not twice when falling back)
	sawOpen   bool // an open backend breaker was met while picking (openRetryAfter)
	// replayable: the body can be sent again (bufferBody).
	replayable bool
	// peekingBody: the body read under way is the stale answer's look
	// ahead, bounded by staleBodyWait (stale_key.go).
	peekingBody bool
	// level relaxes eligibility when nothing is eligible: 0 strict, 1 may
	// reuse a tried backend, 2 fails open (ignores health and ejection).
	// The small fields sit together: the exchange stays in its
	// allocation size class.
	level int8
	// grpcStatus is a gRPC call's status as its client read it
	// (grpc_observe.go).
	grpcStatus int8
	early      earlyState // a request that arrived in 0-RTT early data (early.go)
	diagnostic string
	backendErr error // the backend error answered for (access log)

	tried     [4]*router.Backend
	moreTried []*router.Backend
	// excluded backends refused admission (scope=backend breaker) in this
	// request: never picked again, whatever the level. moreExcluded is
	// a pointer (rarely needed) so that the exchange stays in its
	// allocation size class.
	excluded     *router.Backend
	moreExcluded *[]*router.Backend

	// openRetryAfter is the smallest Retry-After among open backend
	// breakers met while picking (scope=backend), when sawOpen.
	openRetryAfter time.Duration

	// gate ends the streamed request body with the exchange (limits.go).
	gate   *bodyGate
	body   []byte        // the buffered request body, when replayable
	stream io.ReadCloser // a body too large to buffer: what was read, then the rest (its clientBody)
	// replay records a gRPC call's body for a retry (grpc_retry.go).
	replay *grpcReplay
	// badBody is set (possibly by the transport's body writer) when reading
	// the client's body failed: the client's fault, never the backend's.
	badBody atomic.Bool
	// bodyEOF is set once the client's body was read to its end.
	bodyEOF atomic.Bool
	// hijacked is set once the client's connection was taken for a
	// tunnel: the request, its body included, is no longer the server's.
	hijacked bool
	// bodyTimedOut: the client's body came too slowly (408).
	bodyTimedOut atomic.Bool
	// bodyTooLarge: the client's body went past the route's
	// maxRequestBodyBytes (413).
	bodyTooLarge atomic.Bool
	bodyStart    time.Time // first read of the body
	bodyRead     int64     // bytes of the body read so far
	dl           deadliner // the connection's deadlines, once asked for
	writeArmed   time.Time // when the write deadline was last moved
	upgrade      string    // the protocol(s) the client asked to switch to, allowed ones only
	xff          [1]string
	xfh          [1]string

	// pw is the writer the route's policies write to (servePolicies);
	// nil on a route without policies, which pays nothing for them.
	pw *policyWriter
	// fb is the breaker fallback's part of the exchange (fallback.go),
	// allocated only when a route uses it: most requests never do, and
	// the exchange stays in its allocation size class.
	fb *fallbackState
	// grpc is the outcome of a gRPC call judged when its trailers come
	// (grpc.go); nil for every other request.
	grpc *pendingGRPC
	// span is the request's server span, which holds its current
	// attempt's client span; nil with tracing off.
	span *trace.Server
}

// attemptResult is what one attempt produced.
type attemptResult struct {
	resp    *http.Response
	err     error
	elapsed time.Duration
	// notSent: the request never reached the backend (the connect was
	// refused, reset or timed out; see neverSent).
	notSent bool
	// tlsFailed: the TLS handshake with the backend failed (a
	// *client.TLSError): the backend's fault, the request never sent.
	tlsFailed bool
	// noAnswer: the backend closed or reset the connection before its
	// answer's head (client.ClosedBeforeAnswer).
	noAnswer bool
	// refusedStream: an HTTP/2 backend took the request on no stream
	// (refusedstream.go).
	refusedStream bool
	timeout       bool
	clientGone    bool
	// deadlinePassed: a gRPC call's own deadline (grpc-timeout) passed
	// before the attempt failed: neutral, answered DEADLINE_EXCEEDED.
	deadlinePassed bool
	badBody        bool // the client's body was malformed or too slow: neutral, answered 400 or 408
	badUpgrade     bool // the backend switched protocols unasked: a failure, answered 502
	failed         bool // a failure for the breaker and ejection
}

// attemptLoop is the state that serve's steps share, on serve's stack.
type attemptLoop struct {
	guard *router.Guard // the route's breaker (scope=route), nil without one
	tok   breaker.Token // its admission of the next attempt
	limit int           // the attempts allowed
	last  attemptResult // the failure that the latest retry replaces
}

// serve proxies a matched request: the route's breaker admits it, the
// request is readied (header, attempt limit, body), then attempts go to
// one backend after another until one is answered to the client or no
// backend is left to try.
func (x *exchange) serve() {
	rt := x.route
	if rt.Removed() || len(rt.Backends()) == 0 {
		x.replyNoHealthy()
		return
	}
	if lim := rt.Config().MaxRequestBodyBytes; lim > 0 && x.req.ContentLength > lim {
		// Refused before the breaker, a pick or a connect: the client's
		// fault, and no backend is asked.
		x.replyTooLarge()
		return
	}
	x.now = x.p.clock.Now().UnixNano()
	backendTLS, err := rt.BackendTLS()
	if err != nil {
		x.replyBackendTLSMisconfigured(err)
		return
	}
	x.transport = x.p.transports.get(rt.Config().BackendTimeout, backendTLS, speaksH2(rt))
	var l attemptLoop
	if !x.admit(&l) {
		return
	}
	if !x.prepared {
		x.prepared = true
		x.prepareHeaders()
	}
	x.markFallbackRequest()
	x.planAttempts(&l)
	if !x.readBody(&l) {
		return
	}
	for {
		b, btok := x.next()
		if b == nil {
			break
		}
		if x.try(&l, b, btok) {
			return
		}
	}
	x.giveUp(&l)
}

// admit asks the route's breaker (scope=route), answering the request when
// it refuses. Admission comes before anything else: an open breaker means
// no pick, no retry, no backend sees the request.
func (x *exchange) admit(l *attemptLoop) bool {
	l.guard = x.route.State().Guard()
	if l.guard == nil {
		return true
	}
	x.guarded = true
	st := l.guard.Breaker().State()
	d := l.guard.Breaker().Admit()
	x.span.Breaker(st.String(), d.Admitted)
	if !d.Admitted {
		x.refusedByRoute(l.guard, d.RetryAfter)
		return false
	}
	l.tok = d.Token
	return true
}

// planAttempts sets how many attempts the request may take (an upgrade
// takes one) and, when it may take more, counts it toward the route's
// retry budget.
func (x *exchange) planAttempts(l *attemptLoop) {
	rt := x.route
	l.limit = max(1, rt.Config().Retry.Attempts)
	if x.upgrade != "" {
		l.limit = 1
	}
	if l.limit > 1 {
		rt.State().RetryBudget().Request(x.now, x.p.opts.RetryBudgetWindow)
	}
}

// readBody reads the request body ahead when it has to be, answering a
// body the client broke. A small body of known length is read before any
// backend is dialled, so that a client sending it slowly (or never) holds
// no backend connection; with retries, a small body of any framing is, so
// that it can be sent again, and so is one forwarded in early data, which
// a 425 (Too Early) sends again (early.go).
func (x *exchange) readBody(l *attemptLoop) bool {
	if x.body != nil || x.stream != nil {
		return true // read for the route whose breaker sent it to a fallback
	}
	// A gRPC request body is a stream whose next message may wait for
	// the answer to the last one: never read ahead. A body of unknown
	// length on a method that gives it no meaning is, most often an
	// HTTP/3 GET whose stream ends after its headers: read, it is empty,
	// and the backend connection need not be closed after the answer
	// (see attempt).
	readAhead := (l.limit > 1 || x.early == earlySent || x.req.ContentLength < 0 && !methodDefinesBody(x.req.Method)) &&
		!isGRPC(x.req.Header)
	if readAhead || x.req.ContentLength > 0 && x.req.ContentLength <= x.replayLimit() {
		x.bufferBody()
		if x.badBody.Load() {
			// Broken before any backend saw it: nothing to judge.
			l.tok.Report(breaker.Outcome{Result: breaker.Neutral})
			x.replyBadBody()
			return false
		}
	} else {
		x.replayable = x.req.Body == nil || x.req.Body == http.NoBody || x.req.ContentLength == 0
		if !x.replayable && x.isGRPCCall() {
			x.replay = newGRPCReplay(x.newClientBody(), x.replayLimit())
		}
	}
	return true
}

// next picks the next backend and has its breaker (scope=backend) admit
// the attempt. A backend whose breaker refuses (half-open and its probe
// slots taken) is excluded and another is picked. It returns nil when no
// backend is left.
func (x *exchange) next() (*router.Backend, breaker.Token) {
	for {
		b := x.pick()
		if b == nil {
			return nil, breaker.Token{}
		}
		bg := b.State().Guard()
		if bg == nil {
			return b, breaker.Token{}
		}
		d := bg.Breaker().Admit()
		if d.Admitted {
			return b, d.Token
		}
		x.noteOpen(d.RetryAfter)
		x.exclude(b)
	}
}

// try makes one attempt on b and judges it: the outcome goes to the
// breakers and to passive ejection, then either the attempt is answered
// to the client (try returns true) or, when the retry rules allow another
// attempt, its failure is kept in l.last and the retry readied. A 425 to
// a request sent in early data is judged apart (afterTooEarly).
func (x *exchange) try(l *attemptLoop, b *router.Backend, btok breaker.Token) (answered bool) {
	rt := x.route
	x.markTried(b)
	x.attempts++
	x.backend = b
	res := x.attempt(b)
	if x.tooEarly(&res) {
		return x.afterTooEarly(l, b, btok, &res)
	}
	if res.notSent || res.tlsFailed || res.refusedStream || res.noAnswer && client.Idempotent(x.req) {
		// Refused (a connect, or every HTTP/2 stream), or closed before
		// answering a request that may be repeated: never picked again
		// for this request, whatever the eligibility level, and the
		// attempt is free (see mayRetry).
		x.free++
		x.exclude(b)
	}
	o := x.outcome(&res)
	if x.defersGRPC(&res) {
		// Judged by the grpc-status of its trailers, when it ends.
		x.grpc = &pendingGRPC{route: l.tok, backend: btok, b: b, elapsed: res.elapsed}
		x.respond(b, &res)
		return true
	}
	l.tok.Report(o)
	btok.Report(o)
	if !res.clientGone && !res.badBody && !res.deadlinePassed {
		x.p.passive(rt, b, res.failed, res.notSent || res.refusedStream, res.err, x.p.clock.Now().UnixNano())
	}
	if !x.retries(&res, l.limit) {
		x.respond(b, &res)
		return true
	}
	// Each retry is admitted again: in half-open it takes a probe slot,
	// and a breaker that opened meanwhile stops the retries (the failure
	// at hand is then the answer).
	if l.guard != nil {
		d := l.guard.Breaker().Admit()
		if !d.Admitted {
			x.respond(b, &res)
			return true
		}
		l.tok = d.Token
	}
	if res.resp != nil {
		discard(res.resp)
		b.State().AddInFlight(-1)
	}
	l.last = res
	x.span.EndAttempt(res.err)
	x.series().retry(retryFailure)
	return false
}

// retries reports whether a failed attempt is tried again: by the gRPC
// rules for a gRPC call (grpc_retry.go), else by mayRetry.
func (x *exchange) retries(res *attemptResult, limit int) bool {
	if x.isGRPCCall() {
		return x.grpcRetryable(res, limit)
	}
	return res.failed && !res.clientGone && !res.badBody && !res.deadlinePassed && x.mayRetry(res, limit)
}

// giveUp answers when no backend was left to attempt.
func (x *exchange) giveUp(l *attemptLoop) {
	// Admitted but never attempted: free the admission (a half-open probe
	// slot) instead of letting it time out. Reports after the first are
	// ignored, so this is safe when the token was used.
	l.tok.Report(breaker.Outcome{Result: breaker.Neutral})
	last := &l.last
	switch {
	case last.notSent:
		// Every backend left refused the connection: none is up (a
		// replica restarting, say), which is what 503 says.
		x.replyNoHealthy()
	case last.refusedStream:
		x.replyRefusedStream()
	case last.err != nil || last.resp != nil:
		// A retry found no backend to go to (scope=backend breakers):
		// the failure that caused it is the answer.
		last.resp = nil
		if last.err == nil {
			x.reply(http.StatusBadGateway, DiagnosticBackendUnreachable, "backend failed and no other backend could be tried\n")
			return
		}
		x.respondError(last)
	case x.sawOpen:
		x.refusedByBackends()
	default:
		x.replyNoHealthy()
	}
}

// outbound is the request to a backend with its URL, in one allocation.
// It is never reused: the transport may still hold it after RoundTrip.
type outbound struct {
	req http.Request
	url url.URL
}

// attempt sends the request to one backend and waits for its headers.
func (x *exchange) attempt(b *router.Backend) attemptResult {
	in := x.req
	o := &outbound{req: *in}
	out := &o.req
	path, raw := x.route.Rewrite(in.URL)
	o.url = url.URL{Scheme: x.backendScheme(), Host: b.HostPort(), Path: path, RawPath: raw, RawQuery: in.URL.RawQuery}
	out.URL = &o.url
	out.RequestURI = ""
	out.Close = false
	out.Proto, out.ProtoMajor, out.ProtoMinor = "HTTP/1.1", 1, 1
	out.TransferEncoding = nil
	switch {
	case x.body != nil && len(x.body) == 0:
		out.Body, out.ContentLength = nil, 0
	case x.body != nil:
		out.Body = io.NopCloser(bytes.NewReader(x.body))
		out.ContentLength = int64(len(x.body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(x.body)), nil }
	case in.ContentLength == 0:
		out.Body = nil
	case x.stream != nil:
		// What was read ahead, then the rest through its clientBody.
		out.Body = x.stream
	case x.replay != nil:
		out.Body = x.replay.reader()
	default:
		// Only the outbound body is wrapped: net/http's server inspects
		// the inbound one's type when it answers.
		out.Body = x.newClientBody()
	}
	// A body on a request whose method gives it no meaning (GET, HEAD,
	// DELETE, OPTIONS, TRACE; RFC 9110 9.3) is forwarded, but a backend
	// may ignore it and read it as a next request: the connection is
	// closed after the answer, never reused for another client. A body
	// read ahead and found empty is no body.
	out.Close = out.Body != nil && out.Body != http.NoBody && out.ContentLength != 0 && !methodDefinesBody(in.Method)

	b.State().AddInFlight(1)
	if x.span != nil {
		// The attempt's span context replaces the client's traceparent
		// (W3C Trace Context 3.2): the backend's span is its child.
		x.span.StartAttempt(x.attempts, b.HostPort(), out.Header)
		if ctx := x.span.WithConnTrace(out.Context()); ctx != out.Context() {
			o.req = *out.WithContext(ctx)
		}
	}
	t0 := time.Now()
	resp, err := x.transport.RoundTripInformational(out, x)
	if err == nil && x.span != nil {
		x.span.Answered(resp.StatusCode)
	}
	if err == nil && resp.StatusCode == http.StatusSwitchingProtocols && !x.upgradeAccepted(resp) {
		_ = resp.Body.Close()
		resp, err = nil, errUnaskedUpgrade
	}
	res := attemptResult{resp: resp, err: err, elapsed: time.Since(t0)}
	if err != nil {
		b.State().AddInFlight(-1)
		x.judgeError(&res, b)
	}
	return res
}

// judgeError classifies a failed attempt by its error.
func (x *exchange) judgeError(res *attemptResult, b *router.Backend) {
	err := res.err
	res.failed = true
	var ne net.Error
	switch {
	case x.badBody.Load():
		// First: net/http's server also cancels the request's context
		// when reading its body fails.
		res.badBody = true
	case x.req.Context().Err() != nil:
		res.clientGone = true
	case x.grpcDeadlinePassed():
		res.deadlinePassed = true
	case err == errUnaskedUpgrade:
		res.badUpgrade = true
	case isTLSError(err):
		// Before neverSent and the others: a handshake's own
		// read and write errors are inside.
		res.tlsFailed = true
		x.logTLSFailure(b, err)
	case client.IsStreamRefused(err):
		res.refusedStream = true
		x.logRefusedStream(b, err)
	case neverSent(err):
		res.notSent = true
	case client.ClosedBeforeAnswer(err):
		res.noAnswer = true
	case errors.As(err, &ne) && ne.Timeout():
		res.timeout = true
	}
}

// methodDefinesBody reports whether a request body has a meaning for the
// method (RFC 9110 9.3): for the others a backend may ignore the body and
// read it as a next request.
func methodDefinesBody(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodDelete, http.MethodOptions, http.MethodTrace, http.MethodConnect:
		return false
	}
	return true
}

// outcome classifies an attempt for the breaker (at response headers).
func (x *exchange) outcome(res *attemptResult) breaker.Outcome {
	o := breaker.Outcome{Elapsed: res.elapsed}
	switch {
	case res.clientGone, res.badBody, res.deadlinePassed:
		o.Result = breaker.Neutral
	case res.err != nil:
		o.Result = breaker.Failure
	default:
		o.Result = classify(x.route, res.resp.StatusCode)
		if o.Result == breaker.Success && x.grpcHeadFailed(res.resp) {
			o.Result = breaker.Failure
		}
		if o.Result == breaker.Failure {
			res.failed = true
			o.RetryAfter = retryAfterOf(res.resp.Header)
		}
	}
	return o
}

// classify judges a status with the route's breaker parameters, or as
// "5xx is a failure" for routes without a breaker (passive ejection).
func classify(rt *router.Route, status int) breaker.Result {
	if rt.Config().CircuitBreaker != nil {
		return rt.BreakerParams().Classify(status)
	}
	if status >= 500 {
		return breaker.Failure
	}
	return breaker.Success
}

// retryAfterOf reads an upstream Retry-After given in seconds.
func retryAfterOf(h http.Header) time.Duration {
	v := h["Retry-After"]
	if len(v) == 0 {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(v[0]))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}
