package proxy

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router"
)

// respond sends the attempt's result to the client.
func (x *exchange) respond(b *router.Backend, res *attemptResult) {
	if x.replay != nil {
		x.replay.stop() // answered: no retry will send the body again
	}
	if res.resp == nil {
		x.respondError(res)
		return
	}
	defer b.State().AddInFlight(-1)
	resp := res.resp
	if resp.StatusCode == http.StatusSwitchingProtocols {
		x.switchProtocols(resp)
		return
	}
	defer resp.Body.Close()
	h := x.w.Header()
	if resp.ContentLength < 0 || resp.StatusCode == http.StatusNoContent {
		// The body's framing is the server's to choose: never pass on a
		// Content-Length that does not describe it; a 204 has none
		// (RFC 9110 8.6).
		delete(resp.Header, "Content-Length")
	}
	moveEndToEnd(h, resp.Header)
	var announced string
	if len(resp.Trailer) > 0 {
		// Announced trailers are announced again, so that the server
		// sends them after the body (RFC 9110 6.5).
		announced = trailerNames(resp.Trailer)
		h["Trailer"] = []string{announced}
	}
	ct, ok := resp.Header["Content-Type"]
	if !ok {
		// net/http would sniff one; a proxy passes on what it got.
		h["Content-Type"] = nil
	}
	if len(x.req.TransferEncoding) > 0 && x.bodyEOF.Load() {
		h["Connection"] = valueClose
	}
	x.recordStale(resp)
	x.status = x.fallbackAnswer(h, resp.StatusCode)
	x.armWrite()
	x.w.WriteHeader(x.status)
	x.headersAt = time.Since(x.start)
	// The keys of a Transport's header are canonical: no Header.Get.
	flush := resp.ContentLength < 0 || len(ct) > 0 && strings.HasPrefix(ct[0], "text/event-stream")
	if f, ok := x.w.(http.Flusher); ok && isGRPC(resp.Header) && resp.Header.Get("Grpc-Status") == "" {
		// A gRPC stream's head goes at once: the client may be waiting
		// for it before it sends (a bidirectional stream), and the
		// backend's first message may be a long way off. Not a
		// Trailers-Only answer (its status in the head): that must stay
		// one HEADERS frame ending the stream.
		x.armWrite()
		f.Flush()
	}
	err := x.copyBody(resp.Body, flush)
	x.noteGRPCAnswer(resp, err)
	if x.grpc != nil {
		x.settleGRPC(resp.Trailer, err)
	}
	x.keepStale(err == nil && !x.abort)
	if err != nil {
		// Send what the backend did send, then break the connection.
		if f, ok := x.w.(http.Flusher); ok {
			x.armWrite()
			f.Flush()
		}
		x.abort = true
		return
	}
	forwardTrailers(h, resp.Trailer, announced)
}

// forwardTrailers passes the backend's trailer fields on after the body:
// those it announced in a Trailer field were announced again (respond),
// the others go as http.TrailerPrefix fields, which the server sends as
// trailers all the same. An HTTP/2 backend need not announce its
// trailers (RFC 9113 8.1): gRPC's grpc-status is one of those.
func forwardTrailers(h, trailer http.Header, announced string) {
	if len(trailer) == 0 {
		return // no map iteration for the common answer
	}
	for k, vv := range trailer {
		if announced != "" && slices.Contains(strings.Split(announced, ", "), k) {
			h[k] = vv
			continue
		}
		h[http.TrailerPrefix+k] = vv
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
	bp := x.p.buffers.Get().(*[]byte)
	defer x.p.buffers.Put(bp)
	buf := *bp
	flusher, _ := x.w.(http.Flusher)
	if !flush {
		flusher = nil
	}
	var rec *staleRecord
	if x.fb != nil {
		rec = x.fb.record
	}
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			x.armWrite()
			m, werr := x.w.Write(buf[:n])
			x.sent += int64(m)
			if werr != nil {
				// The client left or stopped taking the response: the
				// response is incomplete, so its connection ends now.
				x.p.metrics.clientErrors.WithLabelValues(clientErrorWrite).Inc()
				x.abort = true
				return nil
			}
			if flusher != nil {
				flusher.Flush()
			}
			if rec != nil {
				rec.write(buf[:n]) // after the client has it: never a delay
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
	x.backendErr = res.err
	switch {
	case res.clientGone:
		x.status = statusClientGone
	case res.badBody:
		x.replyBadBody()
	case res.deadlinePassed:
		x.replyGRPCCode(grpcDeadlineExceeded, http.StatusGatewayTimeout, DiagnosticBackendTimeout, "the call's deadline (grpc-timeout) passed\n")
	case res.badUpgrade:
		x.reply(http.StatusBadGateway, DiagnosticBadUpgrade, "backend switched protocols without being asked to\n")
	case res.notSent:
		// Nothing reached the backend and no other could be tried (a
		// single replica restarting, a body too large to replay): the
		// service is unavailable for now (RFC 9110 15.6.4), not broken.
		x.replyNoHealthy()
	case res.refusedStream:
		// Not processed, and no other backend or no retry budget left.
		x.replyRefusedStream()
	case res.tlsFailed && isNoH2(res.err):
		x.reply(http.StatusBadGateway, DiagnosticBackendNoH2, "backend does not speak HTTP/2 over TLS\n")
	case res.tlsFailed:
		x.reply(http.StatusBadGateway, DiagnosticBackendTLS, "backend TLS handshake failed\n")
	case res.timeout:
		x.reply(http.StatusGatewayTimeout, DiagnosticBackendTimeout, "backend did not answer in time\n")
	default:
		x.reply(http.StatusBadGateway, DiagnosticBackendUnreachable, "backend unreachable\n")
	}
}

// noHealthyRetryAfter is the Retry-After of a 503 no-healthy-backend, in
// seconds: a replica restarts or a health check passes within seconds,
// and a client retrying sooner than that would find nothing new.
const noHealthyRetryAfter = 1

// replyNoHealthy answers 503 no-healthy-backend with a Retry-After (RFC
// 9110 10.2.3): the route exists but no backend can take the request now.
func (x *exchange) replyNoHealthy() {
	x.w.Header()["Retry-After"] = x.p.retryAfterValue(noHealthyRetryAfter)
	x.reply(http.StatusServiceUnavailable, DiagnosticNoHealthyBackend, "no healthy backend for this route\n")
}

// replyBadBody answers for a request body the client broke (400) or sent
// too slowly (408). Either way the connection ends after the answer: the
// rest of the body cannot be told from a next request.
func (x *exchange) replyBadBody() {
	x.w.Header()["Connection"] = valueClose
	if x.bodyTooLarge.Load() {
		x.replyTooLarge()
		return
	}
	if x.bodyTimedOut.Load() {
		x.p.metrics.clientErrors.WithLabelValues(clientErrorBodyTimeout).Inc()
		x.reply(http.StatusRequestTimeout, DiagnosticClientTimeout, "request body not received in time\n")
		return
	}
	x.p.metrics.clientErrors.WithLabelValues(clientErrorBadBody).Inc()
	x.reply(http.StatusBadRequest, DiagnosticBadRequestBody, "malformed request body\n")
}

// replyTooLarge answers 413 Content Too Large (RFC 9110 15.5.14) for a
// body over the route's maxRequestBodyBytes, closing the connection: the
// rest of the body is never read.
func (x *exchange) replyTooLarge() {
	x.w.Header()["Connection"] = valueClose
	x.p.metrics.clientErrors.WithLabelValues(clientErrorTooLarge).Inc()
	x.reply(http.StatusRequestEntityTooLarge, DiagnosticBodyTooLarge, "request body too large\n")
}

// reply answers on Levee's own behalf.
func (x *exchange) reply(status int, diagnostic, body string) {
	if x.req.ProtoMajor == 2 && isGRPC(x.req.Header) {
		x.replyGRPC(status, diagnostic, body)
		return
	}
	h := x.w.Header()
	h["Content-Type"] = valueTextPlain
	h["X-Content-Type-Options"] = valueNoSniff
	h[HeaderDiagnostic] = valueDiagnostic[diagnostic]
	if x.origin() != nil {
		x.fallbackHeaders(h)
	}
	if len(x.req.TransferEncoding) > 0 {
		h["Connection"] = valueClose
	}
	x.diagnostic = diagnostic
	x.status = status
	x.armWrite()
	x.w.WriteHeader(status)
	x.headersAt = time.Since(x.start)
	n, _ := io.WriteString(x.w, body)
	x.sent += int64(n)
}

// backendsRetryAfter is the smallest Retry-After of the route's open
// backend breakers (scope=backend), at least 1s.
func (x *exchange) backendsRetryAfter() time.Duration {
	ra := x.openRetryAfter
	for _, b := range x.route.Backends() {
		if g := b.State().Guard(); g != nil {
			if st := g.Breaker().Stats(); st.State == breaker.Open && (ra == 0 || st.RetryAfter < ra) {
				ra = st.RetryAfter
			}
		}
	}
	return max(ra, time.Second)
}

// sendOpen is the open breaker's own answer: responseCode, responseBody
// and Retry-After.
func (x *exchange) sendOpen(retryAfter time.Duration) {
	code, body := http.StatusServiceUnavailable, "upstream circuit open"
	if cb := x.route.Config().CircuitBreaker; cb != nil {
		if cb.ResponseCode != 0 {
			code = cb.ResponseCode
		}
		if cb.ResponseBody != "" {
			body = cb.ResponseBody
		}
	}
	x.setRetryAfter(x.w.Header(), retryAfter)
	x.reply(code, DiagnosticCircuitOpen, body)
}
