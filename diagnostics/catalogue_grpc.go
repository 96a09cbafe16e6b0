package diagnostics

// Codes of gRPC awareness.
const (
	// BadGRPCStatuses is a circuitBreaker.grpcFailureStatuses value that
	// names no gRPC status.
	BadGRPCStatuses Code = "W017"
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
	}
}
