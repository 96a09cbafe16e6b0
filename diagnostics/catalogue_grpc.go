package diagnostics

// Codes of gRPC awareness.
const (
	// BadGRPCStatuses is a circuitBreaker.grpcFailureStatuses value that
	// names no gRPC status.
	BadGRPCStatuses Code = "W017"
	// BadGRPCHealthCheck is a healthCheck.grpc or healthCheck.grpcService
	// value that cannot be used.
	BadGRPCHealthCheck Code = "W019"
)

// grpcEntries are the codes of gRPC awareness.
func grpcEntries() []Entry {
	return []Entry{
		{
			Code: BadGRPCStatuses, Severity: Warn, Title: "invalid gRPC failure statuses",
			Effect:  "`circuitBreaker.grpcFailureStatuses` falls back to its default: UNAVAILABLE, DEADLINE_EXCEEDED and INTERNAL count as failures of a gRPC call.",
			Fix:     "List gRPC statuses by name (`UNAVAILABLE`, `RESOURCE_EXHAUSTED`…) or number (1-16), comma-separated, or `none`. OK (0) cannot be a failure.",
			Example: "levee.http.api.circuitBreaker.grpcFailureStatuses=UNAVAILABLE,BROKEN",
		},
		{
			Code: BadGRPCHealthCheck, Severity: Warn, Title: "invalid gRPC health check",
			Effect:  "The field falls back to its default: `healthCheck.grpc` to false (the check is a GET of `healthCheck.path`), `healthCheck.grpcService` to the empty name (the server's overall health).",
			Fix:     "Set `healthCheck.grpc` to true or false, and `healthCheck.grpcService` to a fully qualified service name such as `grpc.health.v1.Health` or `shop.Cart` (letters, digits, `_` and `.`), or leave it out.",
			Example: "levee.http.api.healthCheck.grpcService=shop/Cart",
		},
	}
}
