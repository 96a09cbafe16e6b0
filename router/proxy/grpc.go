package proxy

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// Levee's own answers to a gRPC request are gRPC answers: a gRPC client
// reads the status of a call from grpc-status, not from the HTTP status,
// and cannot parse a text body. They are Trailers-Only responses (gRPC
// over HTTP/2, "Responses"): HTTP 200, content-type application/grpc,
// grpc-status and grpc-message in the head, no body. The status is the
// HTTP status's by gRPC's own mapping (grpc/doc/http-grpc-status-mapping.md).

// gRPC status codes (grpc/doc/statuscodes.md) of Levee's answers.
const (
	grpcUnknown          = 2
	grpcDeadlineExceeded = 4
	grpcPermissionDenied = 7
	grpcUnimplemented    = 12
	grpcInternal         = 13
	grpcUnavailable      = 14
	grpcUnauthenticated  = 16
)

var valueGRPC = []string{"application/grpc"}

// isGRPC reports whether a message is gRPC: its content type is
// application/grpc or application/grpc+<codec> (gRPC over HTTP/2).
func isGRPC(h http.Header) bool {
	ct := h.Get("Content-Type")
	return ct == "application/grpc" || strings.HasPrefix(ct, "application/grpc+") || strings.HasPrefix(ct, "application/grpc;")
}

// grpcStatusOf maps an HTTP status to a gRPC status as gRPC's clients do
// (http-grpc-status-mapping.md).
func grpcStatusOf(status int) int {
	switch status {
	case http.StatusBadRequest:
		return grpcInternal
	case http.StatusUnauthorized:
		return grpcUnauthenticated
	case http.StatusForbidden:
		return grpcPermissionDenied
	case http.StatusNotFound:
		return grpcUnimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return grpcUnavailable
	}
	return grpcUnknown
}

// replyGRPC is reply for a gRPC request: the same diagnostic and
// Retry-After, the HTTP status and the text as grpc-status and
// grpc-message. A Retry-After is also grpc-retry-pushback-ms, which a
// gRPC client with a retry policy honours (gRFC A6).
func (x *exchange) replyGRPC(status int, diagnostic, body string) {
	x.replyGRPCCode(grpcStatusOf(status), status, diagnostic, body)
}

// replyGRPCCode is replyGRPC with the gRPC status given.
func (x *exchange) replyGRPCCode(code, status int, diagnostic, body string) {
	h := x.w.Header()
	h["Content-Type"] = valueGRPC
	h[HeaderDiagnostic] = valueDiagnostic[diagnostic]
	if x.origin() != nil {
		x.fallbackHeaders(h)
	}
	x.setGRPCStatus(code)
	h["Grpc-Status"] = []string{strconv.Itoa(code)}
	h["Grpc-Message"] = []string{grpcMessage(fmt.Sprintf("%d %s", status, strings.TrimSpace(body)))}
	if ra := h["Retry-After"]; len(ra) == 1 {
		if secs, err := strconv.Atoi(ra[0]); err == nil {
			h["Grpc-Retry-Pushback-Ms"] = []string{strconv.FormatInt(int64(secs)*1000, 10)}
		}
	}
	x.diagnostic = diagnostic
	x.status = http.StatusOK
	x.armWrite()
	x.w.WriteHeader(http.StatusOK)
	x.headersAt = time.Since(x.start)
}

// grpcMessage percent-encodes a grpc-message: bytes outside printable
// ASCII, and '%', as %XX (gRPC over HTTP/2, "Status-Message").
func grpcMessage(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// A gRPC call fails with an HTTP 200: its status is grpc-status, in the
// head of a Trailers-Only answer or in the trailers after the messages.
// With circuitBreaker.grpcFailureStatuses, the breaker and passive health
// judge it by that status: at the head for Trailers-Only, else when the
// stream ends (a stream that breaks before its trailers, or ends without
// a status, is the backend's failure; a client that left is neutral).

// grpcFailures is the route's set of failing gRPC statuses; 0 without a
// breaker.
func (x *exchange) grpcFailures() config.GRPCCodes {
	if cb := x.route.Config().CircuitBreaker; cb != nil {
		return cb.GRPCFailureStatuses
	}
	return 0
}

// grpcHeadFailed reports a Trailers-Only gRPC answer whose status is a
// failure.
func (x *exchange) grpcHeadFailed(resp *http.Response) bool {
	st := resp.Header["Grpc-Status"]
	if len(st) == 0 || !isGRPC(resp.Header) {
		return false
	}
	code, err := strconv.Atoi(st[0])
	return err == nil && x.grpcFailures().Has(code)
}

// defersGRPC reports whether the attempt is a gRPC call whose status will
// come in trailers and the route judges it.
func (x *exchange) defersGRPC(res *attemptResult) bool {
	r := res.resp
	return res.err == nil && !res.failed && r != nil && r.StatusCode == http.StatusOK && isGRPC(r.Header) &&
		len(r.Header["Grpc-Status"]) == 0 && x.grpcFailures() != 0
}

// pendingGRPC is what reporting a gRPC call at its end needs.
type pendingGRPC struct {
	route, backend breaker.Token
	b              *router.Backend
	elapsed        time.Duration
}

// settleGRPC reports a gRPC call at its end: err is the backend's read
// error of the body (nil at its end, or when the client left).
func (x *exchange) settleGRPC(trailer http.Header, err error) {
	p := x.grpc
	x.grpc = nil
	o := breaker.Outcome{Elapsed: p.elapsed, Result: breaker.Success}
	switch code, cerr := strconv.Atoi(trailer.Get("Grpc-Status")); {
	case err == nil && (x.abort || x.req.Context().Err() != nil):
		// The client stopped reading or left: not the backend's doing.
		o.Result = breaker.Neutral
	case err != nil, cerr != nil, x.grpcFailures().Has(code):
		o.Result = breaker.Failure
	}
	p.route.Report(o)
	p.backend.Report(o)
	if o.Result != breaker.Neutral {
		x.p.passive(x.route, p.b, o.Result == breaker.Failure, false, err, x.p.clock.Now().UnixNano())
	}
}

// grpcDeadlinePassed reports whether a gRPC call's own deadline, its
// grpc-timeout counted from when Levee received the call, has passed. A
// backend gives up on such a call (grpc-go resets the stream): the
// client's deadline ended it, not a fault of the backend's.
func (x *exchange) grpcDeadlinePassed() bool {
	if x.req.ProtoMajor != 2 || !isGRPC(x.req.Header) {
		return false
	}
	d, ok := parseGRPCTimeout(x.req.Header.Get("Grpc-Timeout"))
	return ok && time.Since(x.start) >= d
}

// parseGRPCTimeout reads a grpc-timeout value (gRPC over HTTP/2: at most
// 8 digits and a unit, H M S m u n).
func parseGRPCTimeout(v string) (time.Duration, bool) {
	if len(v) < 2 || len(v) > 9 {
		return 0, false
	}
	n, err := strconv.ParseInt(v[:len(v)-1], 10, 64)
	if err != nil || n < 0 || v[0] == '+' || v[0] == '-' {
		return 0, false
	}
	var unit time.Duration
	switch v[len(v)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, false
	}
	return time.Duration(n) * unit, true
}
