package config

import (
	"fmt"
	"math/bits"
	"regexp"
	"strconv"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// GRPCCodes is a set of gRPC status codes (0-16, grpc/doc/statuscodes.md),
// one bit each.
type GRPCCodes uint32

// grpcCodeNames are the codes' names, by code.
var grpcCodeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// DefaultGRPCFailureStatuses are the gRPC statuses that say the backend,
// not the call, failed: UNAVAILABLE, DEADLINE_EXCEEDED and INTERNAL.
const DefaultGRPCFailureStatuses = GRPCCodes(1<<4 | 1<<13 | 1<<14)

// Has reports whether the set holds code.
func (c GRPCCodes) Has(code int) bool {
	return code >= 0 && code < len(grpcCodeNames) && c&(1<<code) != 0
}

// GRPCCodeName is a gRPC status code's name (UNAVAILABLE for 14), or
// its number for a code outside 0-16.
func GRPCCodeName(code int) string {
	if code >= 0 && code < len(grpcCodeNames) {
		return grpcCodeNames[code]
	}
	return strconv.Itoa(code)
}

// Names lists the set's codes by name, in code order.
func (c GRPCCodes) Names() []string {
	out := make([]string, 0, bits.OnesCount32(uint32(c)))
	for code, name := range grpcCodeNames {
		if c.Has(code) {
			out = append(out, name)
		}
	}
	return out
}

// grpcFields are the rows of gRPC awareness.
func grpcFields() []Field {
	return []Field{
		{Label: "circuitBreaker.grpcFailureStatuses", JSON: "config.circuit_breaker.grpc_failure_statuses", Kind: KindList,
			Default: "UNAVAILABLE,DEADLINE_EXCEEDED,INTERNAL", Code: diagnostics.BadGRPCStatuses,
			Doc:     "gRPC statuses that count as failures of a gRPC call (`content-type: application/grpc`), by name or number, or `none`: the `grpc-status` of a Trailers-Only answer is judged at its head, one in trailers when the stream ends (the call is then reported to the breaker and passive health at its end, not at its head). A gRPC answer is HTTP 200, so without this a failing gRPC backend never trips the breaker. A stream that breaks before its trailers is a failure; a client that cancels is neutral. Other statuses are successes.",
			Example: "UNAVAILABLE,RESOURCE_EXHAUSTED", set: setGRPCFailureStatuses,
			get: getGRPCFailureStatuses},
		{Label: "healthCheck.grpc", JSON: "config.health_check.grpc", Kind: KindBool, Default: "false", Code: diagnostics.BadGRPCHealthCheck,
			Doc:     "Probe with the gRPC health protocol instead of `GET healthCheck.path`: `grpc.health.v1.Health/Check` over HTTP/2 (h2 with the route's backend TLS for scheme `h2` or `https`, else h2c). SERVING is healthy; any other status, a gRPC error or no answer within `healthCheck.timeout` is a failed check. `healthCheck.path` and `healthCheck.status` are then unused.",
			Example: "true", set: setHealthGRPC, get: healthGRPCGetter(func(h *HealthCheck) (any, bool) { return h.GRPC, h.GRPC })},
		{Label: "healthCheck.grpcService", JSON: "config.health_check.grpc_service", Kind: KindString, Default: `"" (the server's overall health)`, Code: diagnostics.BadGRPCHealthCheck,
			Doc:     "The service whose health `healthCheck.grpc` asks for, fully qualified (`package.Service`); empty asks for the server's overall health.",
			Example: "shop.Cart", set: setHealthGRPCService, get: healthGRPCGetter(func(h *HealthCheck) (any, bool) { return h.GRPCService, h.GRPCService != "" })},
	}
}

// grpcServiceRe is a fully qualified protobuf service name: dot-separated
// identifiers.
var grpcServiceRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// maxGRPCServiceLen bounds a health-check service name.
const maxGRPCServiceLen = 256

// healthGRPCGetter writes a gRPC health field only when it is set, so the
// canonical form of an HTTP health check is unchanged.
func healthGRPCGetter(read func(h *HealthCheck) (any, bool)) getter {
	return func(ep *Entrypoint, _ *Backend) (any, bool) {
		if ep.HealthCheck == nil {
			return nil, false
		}
		return read(ep.HealthCheck)
	}
}

func setHealthGRPC(d *draft, f *Field, key string, v any) {
	d.hcSet = true
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		d.hc.GRPC = b
	}
}

func setHealthGRPCService(d *draft, f *Field, key string, v any) {
	d.hcSet = true
	s, ok := decode(d, f, key, v, toString, func(s string) error {
		if s != "" && (len(s) > maxGRPCServiceLen || !grpcServiceRe.MatchString(s)) {
			return fmt.Errorf("want a fully qualified service name such as shop.Cart (letters, digits, _ and ., at most %d bytes)", maxGRPCServiceLen)
		}
		return nil
	})
	if ok {
		d.hc.GRPCService = s
	}
}

// getGRPCFailureStatuses writes the set when it is not the default, so
// that the canonical form of a route that leaves it alone is unchanged.
func getGRPCFailureStatuses(ep *Entrypoint, _ *Backend) (any, bool) {
	cb := ep.CircuitBreaker
	if cb == nil || cb.GRPCFailureStatuses == DefaultGRPCFailureStatuses {
		return nil, false
	}
	return cb.GRPCFailureStatuses.Names(), true
}

func setGRPCFailureStatuses(d *draft, f *Field, key string, v any) {
	d.cbSet = true
	items, err := toList(v)
	if err == nil {
		var set GRPCCodes
		set, err = parseGRPCCodes(items)
		if err == nil {
			d.cb.GRPCFailureStatuses = set
			return
		}
	}
	d.bad(f, key, v, err.Error())
}

// parseGRPCCodes reads gRPC codes by name (any case) or number; "none"
// alone is the empty set.
func parseGRPCCodes(items []string) (GRPCCodes, error) {
	var set GRPCCodes
	for _, it := range items {
		it = strings.ToUpper(strings.TrimSpace(it))
		if it == "NONE" && len(items) == 1 {
			return 0, nil
		}
		code, err := strconv.Atoi(it)
		if err != nil {
			code = -1
			for c, name := range grpcCodeNames {
				if name == it {
					code = c
				}
			}
		}
		if code < 0 || code >= len(grpcCodeNames) {
			return 0, fmt.Errorf("%q is not a gRPC status: want a name such as UNAVAILABLE or a number from 0 to 16", it)
		}
		if code == 0 {
			return 0, fmt.Errorf("OK cannot be a failure")
		}
		set |= 1 << code
	}
	return set, nil
}
