package diagnostics

// Codes of HTTP/3 early data (0-RTT).
const (
	// BadEarlyData is an earlyData value that is no boolean: the route
	// keeps the default, early requests wait for the handshake.
	BadEarlyData Code = "W096"
)

// earlyDataEntries are the codes of early data.
func earlyDataEntries() []Entry {
	return []Entry{
		{
			Code: BadEarlyData, Severity: Warn, Title: "invalid earlyData value",
			Effect:  "The route keeps the default, false: a request that arrived in 0-RTT early data waits until the QUIC handshake completes before it is served.",
			Fix:     "Use `earlyData=true` on a route whose safe requests (GET, HEAD, OPTIONS) may be replayed without harm, or leave it out.",
			Example: "levee.http.web.earlyData=maybe",
		},
	}
}
