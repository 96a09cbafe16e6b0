package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/levee-proxy/levee/router/config"
)

// The gRPC status of a call as its client reads it, for the access log
// (grpc_method, grpc_status) and levee_grpc_responses_total: Levee's own
// answer's, the backend's from the head of a Trailers-Only answer or from
// the trailers, or, for an answer that is not gRPC, the HTTP status
// mapped as gRPC's clients map it. exchange.grpcStatus holds it as
// code+1; 0 is no gRPC call (or not yet answered), grpcStatusNone a call
// whose answer ended without a status (the stream broke).
const grpcStatusNone = -1

// grpcStatusLabelNone is the metric label of a call that got no status.
const grpcStatusLabelNone = "none"

// isGRPCCall reports whether the request is a gRPC call: HTTP/2 and a
// gRPC content type.
func (x *exchange) isGRPCCall() bool { return x.req.ProtoMajor == 2 && isGRPC(x.req.Header) }

// setGRPCStatus records code (0-16) as the call's status.
func (x *exchange) setGRPCStatus(code int) {
	if code < 0 || code > 16 {
		code = grpcUnknown // a client reads an unknown code as UNKNOWN
	}
	x.grpcStatus = int8(code + 1)
}

// noteGRPCAnswer records the status a backend's answer gave the call,
// once its body was copied (err: how the copy ended).
func (x *exchange) noteGRPCAnswer(resp *http.Response, err error) {
	if !x.isGRPCCall() {
		return
	}
	st := resp.Header.Get("Grpc-Status")
	switch {
	case !isGRPC(resp.Header):
		x.setGRPCStatus(grpcStatusOf(resp.StatusCode))
		return
	case st == "" && err != nil:
		x.grpcStatus = grpcStatusNone
		return
	case st == "":
		st = resp.Trailer.Get("Grpc-Status")
	}
	code, cerr := strconv.Atoi(st)
	if cerr != nil {
		x.grpcStatus = grpcStatusNone
		return
	}
	x.setGRPCStatus(code)
}

// grpcStatusCode returns the call's status and whether it has one.
func (x *exchange) grpcStatusCode() (int, bool) {
	return int(x.grpcStatus) - 1, x.grpcStatus > 0
}

// grpcStatusLabel is the call's status as levee_grpc_responses_total
// labels it: its name (OK, UNAVAILABLE...) or "none".
func (x *exchange) grpcStatusLabel() string {
	if code, ok := x.grpcStatusCode(); ok {
		return config.GRPCCodeName(code)
	}
	return grpcStatusLabelNone
}

// grpcMethod is the call's service and method, its path as the client
// sent it without the leading slash: "pkg.Service/Method".
func (x *exchange) grpcMethod() string {
	p := x.uri
	if p == "" {
		p = x.req.URL.Path
	}
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return strings.TrimPrefix(p, "/")
}
