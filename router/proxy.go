package router

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/httpx/client"
)

// Diagnostic header values: X-Levee-Diagnostic says why Levee itself
// answered instead of a backend.
const (
	DiagnosticNoRoute            = "no-route"
	DiagnosticNoHealthyBackend   = "no-healthy-backend"
	DiagnosticBackendUnreachable = "backend-unreachable"
	DiagnosticBackendTimeout     = "backend-timeout"
	DiagnosticCircuitOpen        = "circuit-open"
	// DiagnosticBadPath: the request path has dot segments or an encoded
	// slash, so the route would be chosen on a path the backend may read
	// differently.
	DiagnosticBadPath = "bad-path"
	// DiagnosticBadRequestBody: the client's request body could not be
	// read (malformed chunked encoding, cut short).
	DiagnosticBadRequestBody = "bad-request-body"
	// DiagnosticBadRequest: the HTTP server refused the request itself
	// (malformed head, head too large, unsupported protocol version or
	// transfer coding, failed expectation); set by levee serve on
	// router/httpx/server's refusals.
	DiagnosticBadRequest = "bad-request"
	// DiagnosticBadUpgrade: the backend answered 101 Switching Protocols
	// to a request that did not ask for that protocol.
	DiagnosticBadUpgrade = "bad-upgrade"
	// DiagnosticClientTimeout: the client sent its request body too
	// slowly (RequestBodyTimeout, RequestBodyMinRate).
	DiagnosticClientTimeout = "client-timeout"
)

// HeaderDiagnostic is the response header naming why Levee answered itself.
const HeaderDiagnostic = "X-Levee-Diagnostic"

// maxReplayBody is the largest request body buffered so that it can be
// sent again on a retry; larger bodies stream and are not retried.
const maxReplayBody = 64 << 10

// statusClientGone is logged (never sent) when the client went away
// before a response could be written, as nginx does.
const statusClientGone = 499

// Read-only header values shared by all requests: assigning them to a
// header map avoids allocating a slice per request. Nothing writes to
// header values in place.
var (
	valueTextPlain  = []string{"text/plain; charset=utf-8"}
	valueNoSniff    = []string{"nosniff"}
	valueHTTP       = []string{"http"}
	valueHTTPS      = []string{"https"}
	valueUpgrade    = []string{"Upgrade"}
	valueClose      = []string{"close"}
	valueTrailers   = []string{"trailers"}
	valueEmpty      = []string{""}
	valueAllow      = []string{"GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, TRACE"}
	valueDiagnostic = map[string][]string{
		DiagnosticNoRoute:            {DiagnosticNoRoute},
		DiagnosticNoHealthyBackend:   {DiagnosticNoHealthyBackend},
		DiagnosticBackendUnreachable: {DiagnosticBackendUnreachable},
		DiagnosticBackendTimeout:     {DiagnosticBackendTimeout},
		DiagnosticCircuitOpen:        {DiagnosticCircuitOpen},
		DiagnosticBadPath:            {DiagnosticBadPath},
		DiagnosticBadRequestBody:     {DiagnosticBadRequestBody},
		DiagnosticBadUpgrade:         {DiagnosticBadUpgrade},
		DiagnosticClientTimeout:      {DiagnosticClientTimeout},
	}
)

// exchange is one client request on its way through the proxy: the
// attempts, the backends tried, what was answered. It is the eligibility
// filter handed to the balancer.
type exchange struct {
	r     *Router
	w     http.ResponseWriter
	req   *http.Request
	route *Route
	start time.Time
	now   int64 // clock nanoseconds at the start, for ejection checks

	status     int
	headersAt  time.Duration
	backend    *backend
	attempts   int
	breakerSt  breaker.State
	guarded    bool
	diagnostic string
	abort      bool // the backend broke the body: abort the client's response

	// level relaxes eligibility when nothing is eligible: 0 strict, 1 may
	// reuse a tried backend, 2 fails open (ignores health and ejection).
	level     int
	tried     [4]*backend
	moreTried []*backend
	// excluded backends refused admission (scope=backend breaker) in this
	// request: never picked again, whatever the level.
	excluded     *backend
	moreExcluded []*backend

	// openRetryAfter is the smallest Retry-After among open backend
	// breakers met while picking (scope=backend).
	openRetryAfter time.Duration
	sawOpen        bool

	body       []byte    // the buffered request body, when replayable
	stream     io.Reader // a body too large to buffer: what was read, then the rest
	replayable bool
	// badBody is set (possibly by the transport's body writer) when reading
	// the client's body failed: the client's fault, never the backend's.
	badBody atomic.Bool
	// bodyEOF is set once the client's body was read to its end.
	bodyEOF atomic.Bool
	// bodyTimedOut: the client's body came too slowly (408).
	bodyTimedOut atomic.Bool
	bodyStart    time.Time // first read of the body
	bodyRead     int64     // bytes of the body read so far
	dl           deadliner // the connection's deadlines, once asked for
	writeArmed   time.Time // when the write deadline was last moved
	upgrade      string    // the protocol(s) the client asked to switch to, allowed ones only
	xff          [1]string
	xfh          [1]string
}

func (x *exchange) eligible(b *backend) bool {
	if x.excluded != nil && x.excluded == b || x.moreExcluded != nil && slices.Contains(x.moreExcluded, b) {
		return false
	}
	if x.level < 2 && (b.st.down.Load() || b.st.ejected(x.now)) {
		return false
	}
	if x.level < 1 && x.wasTried(b) {
		return false
	}
	if g := b.st.guard.Load(); g != nil && g.b.State() == breaker.Open {
		x.sawOpen = true
		return false
	}
	return true
}

func (x *exchange) wasTried(b *backend) bool {
	for _, t := range x.tried {
		if t == b {
			return true
		}
	}
	for _, t := range x.moreTried {
		if t == b {
			return true
		}
	}
	return false
}

func (x *exchange) exclude(b *backend) {
	if x.excluded == nil {
		x.excluded = b
		return
	}
	x.moreExcluded = append(x.moreExcluded, b)
}

func (x *exchange) markTried(b *backend) {
	for i := range x.tried {
		if x.tried[i] == nil {
			x.tried[i] = b
			return
		}
	}
	x.moreTried = append(x.moreTried, b)
}

// pick asks the balancer, relaxing eligibility step by step.
func (x *exchange) pick() *backend {
	for x.level = 0; x.level < 3; x.level++ {
		if b := x.route.balancer.pick(x.route.backends, x); b != nil {
			return b
		}
	}
	return nil
}

// ServeHTTP routes and proxies one request.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	x := &exchange{r: r, w: w, req: req, start: time.Now()}
	x.initDeadlines()
	if req.Method == http.MethodConnect {
		// An edge reverse proxy is not a forward proxy: no tunnels.
		w.Header()["Allow"] = valueAllow
		x.reply(http.StatusMethodNotAllowed, DiagnosticNoRoute, "CONNECT is not supported\n")
		r.finish(x)
		return
	}
	if !cleanPath(req.URL) {
		x.reply(http.StatusBadRequest, DiagnosticBadPath, "request path with dot segments or an encoded slash\n")
		r.finish(x)
		return
	}
	x.route = r.snap.Load().Match(req.Method, req.Host, req.URL.Path)
	if x.route == nil {
		x.reply(http.StatusNotFound, DiagnosticNoRoute, "no route for this host and path\n")
	} else {
		x.serve()
	}
	r.finish(x)
	if x.abort {
		// The response is already under way and the backend broke it:
		// make the client see a truncated response, not a complete one.
		panic(http.ErrAbortHandler)
	}
}

// attemptResult is what one attempt produced.
type attemptResult struct {
	resp    *http.Response
	err     error
	elapsed time.Duration
	// notSent: the request never reached the backend (dial failed).
	notSent    bool
	timeout    bool
	clientGone bool
	badBody    bool // the client's body was malformed or too slow: neutral, answered 400 or 408
	badUpgrade bool // the backend switched protocols unasked: a failure, answered 502
	failed     bool // a failure for the breaker and ejection
}

func (x *exchange) serve() {
	rt := x.route
	if rt.ghost || len(rt.backends) == 0 {
		x.reply(http.StatusServiceUnavailable, DiagnosticNoHealthyBackend, "no healthy backend for this route\n")
		return
	}
	x.now = x.r.clock.Now().UnixNano()

	// Admission comes before anything else: an open breaker means no
	// pick, no retry, no backend sees the request.
	g := rt.state.guard.Load()
	var tok breaker.Token
	if g != nil {
		x.guarded = true
		d := g.b.Admit()
		if !d.Admitted {
			x.rejectOpen(g, d.RetryAfter)
			return
		}
		tok = d.Token
	}

	x.prepareHeaders()
	maxAttempts := max(1, rt.ep.Retry.Attempts)
	if x.upgrade != "" {
		maxAttempts = 1
	}
	if maxAttempts > 1 {
		rt.state.budget.request(x.now, x.r.opts.RetryBudgetWindow)
	}
	// A small body of known length is read before any backend is
	// dialled, so that a client sending it slowly (or never) holds no
	// backend connection; with retries, a small body of any framing is,
	// so that it can be sent again.
	if maxAttempts > 1 || x.req.ContentLength > 0 && x.req.ContentLength <= maxReplayBody {
		x.bufferBody()
		if x.badBody.Load() {
			// Broken before any backend saw it: nothing to judge.
			tok.Report(breaker.Outcome{Result: breaker.Neutral})
			x.replyBadBody()
			return
		}
	} else {
		x.replayable = x.req.Body == nil || x.req.Body == http.NoBody || x.req.ContentLength == 0
	}

	var last attemptResult
	for {
		b := x.pick()
		if b == nil {
			break
		}
		bg := b.st.guard.Load()
		var btok breaker.Token
		if bg != nil {
			d := bg.b.Admit()
			if !d.Admitted {
				x.noteOpen(d.RetryAfter)
				x.exclude(b)
				continue // half-open and its probe slots taken: try another
			}
			btok = d.Token
		}
		x.markTried(b)
		x.attempts++
		x.backend = b
		res := x.attempt(b)
		o := x.outcome(&res)
		tok.Report(o)
		btok.Report(o)
		if !res.clientGone && !res.badBody {
			x.r.passive(rt, b, res.failed, x.r.clock.Now().UnixNano())
		}
		if !res.failed || res.clientGone || res.badBody || !x.mayRetry(&res, maxAttempts) {
			x.respond(b, &res)
			return
		}
		// Each retry is admitted again: in half-open it takes a probe
		// slot, and a breaker that opened meanwhile stops the retries
		// (the failure at hand is then the answer).
		if g != nil {
			d := g.b.Admit()
			if !d.Admitted {
				x.respond(b, &res)
				return
			}
			tok = d.Token
		}
		if res.resp != nil {
			discard(res.resp)
			b.st.inflight.Add(-1)
		}
		last = res
		rt.state.series.retries.Inc()
	}
	// Admitted but never attempted: free the admission (a half-open probe
	// slot) instead of letting it time out. Reports after the first are
	// ignored, so this is safe when the token was used.
	tok.Report(breaker.Outcome{Result: breaker.Neutral})
	switch {
	case last.err != nil || last.resp != nil:
		// A retry found no backend to go to (scope=backend breakers):
		// the failure that caused it is the answer.
		last.resp = nil
		if last.err == nil {
			x.reply(http.StatusBadGateway, DiagnosticBackendUnreachable, "backend failed and no other backend could be tried\n")
			return
		}
		x.respondError(&last)
	case x.sawOpen:
		x.rejectBackendsOpen()
	default:
		x.reply(http.StatusServiceUnavailable, DiagnosticNoHealthyBackend, "no healthy backend for this route\n")
	}
}

func (x *exchange) noteOpen(ra time.Duration) {
	x.sawOpen = true
	if x.openRetryAfter == 0 || ra < x.openRetryAfter {
		x.openRetryAfter = ra
	}
}

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
	return rt.state.budget.allow(x.r.clock.Now().UnixNano(), x.r.opts.RetryBudgetWindow, x.r.opts.RetryBudget, x.r.opts.RetryBudgetMin)
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

// prepareHeaders turns the client's header into the backend's, in place:
// the server gave this request to us alone, and retries reuse it.
func (x *exchange) prepareHeaders() {
	req := x.req
	h := req.Header
	x.upgrade = x.r.allowedUpgrade(req)
	te := h["Te"]
	removeHopByHop(h)
	if x.upgrade != "" {
		h["Connection"] = valueUpgrade
		h["Upgrade"] = []string{x.upgrade}
	}
	for _, v := range te {
		if strings.Contains(strings.ToLower(v), "trailers") {
			h["Te"] = valueTrailers // gRPC needs it end to end
			break
		}
	}
	// X-Forwarded-* from a trusted proxy are kept (For is appended to);
	// from anyone else they are replaced, so that a client can spoof
	// neither its address nor the scheme or host it used.
	ip, _, err := net.SplitHostPort(req.RemoteAddr)
	trusted := err == nil && x.r.trusts(ip)
	if !trusted {
		removeSpoofable(h)
	}
	switch prior := h["X-Forwarded-For"]; {
	case err != nil:
		delete(h, "X-Forwarded-For")
	case trusted && len(prior) > 0:
		x.xff[0] = strings.Join(prior, ", ") + ", " + ip
		h["X-Forwarded-For"] = x.xff[:]
	default:
		x.xff[0] = ip
		h["X-Forwarded-For"] = x.xff[:]
	}
	if !trusted || len(h["X-Forwarded-Proto"]) == 0 {
		if req.TLS != nil {
			h["X-Forwarded-Proto"] = valueHTTPS
		} else {
			h["X-Forwarded-Proto"] = valueHTTP
		}
	}
	if !trusted || len(h["X-Forwarded-Host"]) == 0 {
		x.xfh[0] = req.Host
		h["X-Forwarded-Host"] = x.xfh[:]
	}
	if _, ok := h["User-Agent"]; !ok {
		// Otherwise the transport would announce Go's default agent.
		h["User-Agent"] = valueEmpty
	}
}

// removeSpoofable deletes the forwarding headers that only a trusted proxy
// may set and that Levee does not write itself: Forwarded (RFC 7239),
// X-Real-Ip, and any spelling of the X-Forwarded-* and X-Real-Ip names
// with underscores, which some servers (PHP's, CGI's) read as the same.
func removeSpoofable(h http.Header) {
	delete(h, "Forwarded")
	delete(h, "X-Real-Ip")
	for k := range h {
		if strings.IndexByte(k, '_') < 0 {
			continue
		}
		switch strings.ToLower(strings.ReplaceAll(k, "_", "-")) {
		case "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip", "forwarded":
			delete(h, k)
		}
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

// hopByHop are the headers that describe one connection, not the message
// (RFC 9110 7.6.1), and so never cross the proxy.
var hopByHop = [...]string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for v != "" {
			var tok string
			tok, v, _ = strings.Cut(v, ",")
			tok = strings.TrimSpace(tok)
			switch {
			case tok == "", strings.EqualFold(tok, "close"), strings.EqualFold(tok, "keep-alive"), strings.EqualFold(tok, "upgrade"):
				// Removed below anyway; skip the canonicalisation.
			default:
				delete(h, http.CanonicalHeaderKey(tok))
			}
		}
	}
	for _, k := range hopByHop {
		delete(h, k)
	}
}

// outbound is the request to a backend with its URL, in one allocation.
// It is never reused: the transport may still hold it after RoundTrip.
type outbound struct {
	req http.Request
	url url.URL
}

// attempt sends the request to one backend and waits for its headers.
func (x *exchange) attempt(b *backend) attemptResult {
	in := x.req
	o := &outbound{req: *in}
	out := &o.req
	path, raw := x.route.rewrite(in.URL)
	o.url = url.URL{Scheme: "http", Host: b.hostport, Path: path, RawPath: raw, RawQuery: in.URL.RawQuery}
	out.URL = &o.url
	out.RequestURI = ""
	out.Close = false
	out.Proto, out.ProtoMajor, out.ProtoMinor = "HTTP/1.1", 1, 1
	out.TransferEncoding = nil
	switch {
	case x.body != nil:
		out.Body = io.NopCloser(bytes.NewReader(x.body))
		out.ContentLength = int64(len(x.body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(x.body)), nil }
	case in.ContentLength == 0:
		out.Body = nil
	default:
		// Only the outbound body is wrapped: net/http's server inspects
		// the inbound one's type when it answers.
		var r io.Reader = in.Body
		if x.stream != nil {
			r = x.stream
		}
		out.Body = &clientBody{r: r, c: in.Body, x: x}
	}
	// A body on a request whose method gives it no meaning (GET, HEAD,
	// DELETE, OPTIONS, TRACE; RFC 9110 9.3) is forwarded, but a backend
	// may ignore it and read it as a next request: the connection is
	// closed after the answer, never reused for another client.
	out.Close = in.Body != nil && in.Body != http.NoBody && in.ContentLength != 0 && !methodDefinesBody(in.Method)

	b.st.inflight.Add(1)
	t0 := time.Now()
	resp, err := x.route.transport.RoundTripInformational(out, x)
	if err == nil && resp.StatusCode == http.StatusSwitchingProtocols && !x.upgradeAccepted(resp) {
		_ = resp.Body.Close()
		resp, err = nil, errUnaskedUpgrade
	}
	res := attemptResult{resp: resp, err: err, elapsed: time.Since(t0)}
	if err != nil {
		b.st.inflight.Add(-1)
		res.failed = true
		var op *net.OpError
		var ne net.Error
		switch {
		case x.badBody.Load():
			// First: net/http's server also cancels the request's context
			// when reading its body fails.
			res.badBody = true
		case in.Context().Err() != nil:
			res.clientGone = true
		case err == errUnaskedUpgrade:
			res.badUpgrade = true
		case errors.As(err, &op) && op.Op == "dial":
			res.notSent = true
		case errors.As(err, &ne) && ne.Timeout():
			res.timeout = true
		}
	}
	return res
}

// rewrite applies StripPrefix and AddPrefix to the request path (decoded
// and, when the client's encoding differs, raw).
func (rt *Route) rewrite(u *url.URL) (path, raw string) {
	path, raw = u.Path, u.RawPath
	if rt.ep.StripPrefix && rt.prefix != "/" {
		path = strings.TrimPrefix(path, rt.prefix)
		if path == "" || path[0] != '/' {
			path = "/" + path
		}
		if raw != "" {
			if strings.HasPrefix(raw, rt.prefix) {
				raw = raw[len(rt.prefix):]
				if raw == "" || raw[0] != '/' {
					raw = "/" + raw
				}
			} else {
				raw = ""
			}
		}
	}
	if p := rt.ep.AddPrefix; p != "" && p != "/" {
		p = strings.TrimSuffix(p, "/")
		path = p + path
		if raw != "" {
			raw = p + raw
		}
	}
	return path, raw
}

// outcome classifies an attempt for the breaker (at response headers).
func (x *exchange) outcome(res *attemptResult) breaker.Outcome {
	o := breaker.Outcome{Elapsed: res.elapsed}
	switch {
	case res.clientGone, res.badBody:
		o.Result = breaker.Neutral
	case res.err != nil:
		o.Result = breaker.Failure
	default:
		o.Result = x.route.classify(res.resp.StatusCode)
		if o.Result == breaker.Failure {
			res.failed = true
			o.RetryAfter = retryAfterOf(res.resp.Header)
		}
	}
	return o
}

// classify judges a status with the route's breaker parameters, or as
// "5xx is a failure" for routes without a breaker (passive ejection).
func (rt *Route) classify(status int) breaker.Result {
	if rt.ep.CircuitBreaker != nil {
		return rt.cbParams.Classify(status)
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

func discard(resp *http.Response) {
	// Drain a little so that the connection can be reused; a large error
	// page is not worth waiting for.
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	_ = resp.Body.Close()
}

// respond sends the attempt's result to the client.
func (x *exchange) respond(b *backend, res *attemptResult) {
	if res.resp == nil {
		x.respondError(res)
		return
	}
	defer b.st.inflight.Add(-1)
	resp := res.resp
	if resp.StatusCode == http.StatusSwitchingProtocols {
		x.switchProtocols(resp)
		return
	}
	defer resp.Body.Close()
	h := x.w.Header()
	removeHopByHop(resp.Header)
	if resp.ContentLength < 0 || resp.StatusCode == http.StatusNoContent {
		// The body's framing is the server's to choose: never pass on a
		// Content-Length that does not describe it; a 204 has none
		// (RFC 9110 8.6).
		delete(resp.Header, "Content-Length")
	}
	for k, vv := range resp.Header {
		h[k] = vv
	}
	if len(resp.Trailer) > 0 {
		// Announced trailers are announced again, so that the server
		// sends them after the body (RFC 9110 6.5).
		h["Trailer"] = []string{trailerNames(resp.Trailer)}
	}
	if _, ok := resp.Header["Content-Type"]; !ok {
		// net/http would sniff one; a proxy passes on what it got.
		h["Content-Type"] = nil
	}
	if len(x.req.TransferEncoding) > 0 && x.bodyEOF.Load() {
		h["Connection"] = valueClose
	}
	x.status = resp.StatusCode
	x.armWrite()
	x.w.WriteHeader(resp.StatusCode)
	x.headersAt = time.Since(x.start)
	flush := resp.ContentLength < 0 || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if err := x.copyBody(resp.Body, flush); err != nil {
		// Send what the backend did send, then break the connection.
		if f, ok := x.w.(http.Flusher); ok {
			x.armWrite()
			f.Flush()
		}
		x.abort = true
		return
	}
	for k, vv := range resp.Trailer {
		h[k] = vv
	}
}

// trailerNames lists the trailer fields a response announced.
func trailerNames(t http.Header) string {
	names := make([]string, 0, len(t))
	for k := range t {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// copyBody streams the response body, flushing each chunk when the
// response is a stream. It returns the backend's read error; a client
// that went away just ends the copy.
func (x *exchange) copyBody(src io.Reader, flush bool) error {
	bp := x.r.buffers.Get().(*[]byte)
	defer x.r.buffers.Put(bp)
	buf := *bp
	flusher, _ := x.w.(http.Flusher)
	if !flush {
		flusher = nil
	}
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			x.armWrite()
			if _, werr := x.w.Write(buf[:n]); werr != nil {
				// The client left or stopped taking the response: the
				// response is incomplete, so its connection ends now.
				x.r.metrics.clientErrors.WithLabelValues(clientErrorWrite).Inc()
				x.abort = true
				return nil
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			if x.req.Context().Err() != nil {
				return nil // the client left; the server closes its side
			}
			return rerr
		}
	}
}

// respondError answers for a failed last attempt.
func (x *exchange) respondError(res *attemptResult) {
	switch {
	case res.clientGone:
		x.status = statusClientGone
	case res.badBody:
		x.replyBadBody()
	case res.badUpgrade:
		x.reply(http.StatusBadGateway, DiagnosticBadUpgrade, "backend switched protocols without being asked to\n")
	case res.timeout:
		x.reply(http.StatusGatewayTimeout, DiagnosticBackendTimeout, "backend did not answer in time\n")
	default:
		x.reply(http.StatusBadGateway, DiagnosticBackendUnreachable, "backend unreachable\n")
	}
}

// replyBadBody answers for a request body the client broke (400) or sent
// too slowly (408). Either way the connection ends after the answer: the
// rest of the body cannot be told from a next request.
func (x *exchange) replyBadBody() {
	x.w.Header()["Connection"] = valueClose
	if x.bodyTimedOut.Load() {
		x.r.metrics.clientErrors.WithLabelValues(clientErrorBodyTimeout).Inc()
		x.reply(http.StatusRequestTimeout, DiagnosticClientTimeout, "request body not received in time\n")
		return
	}
	x.r.metrics.clientErrors.WithLabelValues(clientErrorBadBody).Inc()
	x.reply(http.StatusBadRequest, DiagnosticBadRequestBody, "malformed request body\n")
}

// reply answers on Levee's own behalf.
func (x *exchange) reply(status int, diagnostic, body string) {
	h := x.w.Header()
	h["Content-Type"] = valueTextPlain
	h["X-Content-Type-Options"] = valueNoSniff
	h[HeaderDiagnostic] = valueDiagnostic[diagnostic]
	if len(x.req.TransferEncoding) > 0 {
		h["Connection"] = valueClose
	}
	x.diagnostic = diagnostic
	x.status = status
	x.armWrite()
	x.w.WriteHeader(status)
	x.headersAt = time.Since(x.start)
	_, _ = io.WriteString(x.w, body)
}

// rejectOpen answers for an open route breaker.
func (x *exchange) rejectOpen(g *guard, retryAfter time.Duration) {
	x.breakerSt = breaker.Open
	g.rejected.Inc()
	x.sendOpen(retryAfter)
}

// rejectBackendsOpen answers when every pickable backend's breaker is
// open: the route is open, with the smallest Retry-After.
func (x *exchange) rejectBackendsOpen() {
	x.breakerSt = breaker.Open
	x.route.state.series.rejected.Inc()
	ra := x.openRetryAfter
	for _, b := range x.route.backends {
		if g := b.st.guard.Load(); g != nil {
			if st := g.b.Stats(); st.State == breaker.Open && (ra == 0 || st.RetryAfter < ra) {
				ra = st.RetryAfter
			}
		}
	}
	x.sendOpen(max(ra, time.Second))
}

func (x *exchange) sendOpen(retryAfter time.Duration) {
	code, body := http.StatusServiceUnavailable, "upstream circuit open"
	if cb := x.route.ep.CircuitBreaker; cb != nil {
		if cb.ResponseCode != 0 {
			code = cb.ResponseCode
		}
		if cb.ResponseBody != "" {
			body = cb.ResponseBody
		}
	}
	secs := int((retryAfter + time.Second - 1) / time.Second)
	x.w.Header()["Retry-After"] = x.r.retryAfterValue(max(secs, 1))
	x.reply(code, DiagnosticCircuitOpen, body)
}

// cleanPath reports whether u's path is safe to route on: no dot segments
// ("/a/../b", also percent-encoded, which u.Path has decoded), no
// backslash (some servers read it as a slash) and no encoded slash.
// Matching such a path would pick the route by a prefix the backend may
// resolve away (RFC 3986 5.2.4), or by segments the backend splits
// differently.
func cleanPath(u *url.URL) bool {
	p := u.Path
	if strings.Contains(p, "/.") {
		for seg := range strings.SplitSeq(p, "/") {
			if seg == "." || seg == ".." {
				return false
			}
		}
	}
	if strings.IndexByte(p, '\\') >= 0 {
		return false
	}
	// RawPath is set only when the client's encoding differs from the
	// default, as it does for an encoded slash.
	if raw := u.RawPath; raw != "" && (strings.Contains(raw, "%2f") || strings.Contains(raw, "%2F")) {
		return false
	}
	return true
}

// trusts reports whether the peer ip is one of Options.TrustedProxies.
func (r *Router) trusts(ip string) bool {
	if len(r.opts.TrustedProxies) == 0 {
		return false
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range r.opts.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
