package proxy

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
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
	h := x.w.Header()
	h["Content-Type"] = valueGRPC
	h[HeaderDiagnostic] = valueDiagnostic[diagnostic]
	if x.origin() != nil {
		x.fallbackHeaders(h)
	}
	h["Grpc-Status"] = []string{strconv.Itoa(grpcStatusOf(status))}
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
