package diagnostics

// Codes of the shared breaker store (075-079).
const (
	StoreUnreachable    Code = "W075"
	StoreGarbage        Code = "W076"
	StoreParamsMismatch Code = "W077"
)

// storeEntries are the codes of the shared breaker store (codes 075-079); their Code constants are declared here too.
func storeEntries() []Entry {
	return []Entry{
		{
			Code: StoreUnreachable, Severity: Warn, Title: "breaker store unreachable",
			Effect:  "The store missed `--breaker-store-fallback-flushes` flushes in a row and answered none for `--breaker-store-fallback-after` (3 and 1s by default; a shorter stall keeps the fleet's state and raises nothing). The breaker judges on this replica's own outcomes (as without `--breaker-store`) until `--breaker-store-rejoin-flushes` flushes in a row succeed; then it follows the fleet state, and the outcomes it judged meanwhile are added to the fleet's exact counts but not to its window. Requests are never sent to the store, so none fails because of it.",
			Fix:     "Check that the `--breaker-store` address is reachable from this replica and that the store answers within the flush timeout (`--breaker-store-flush-interval`); on a store known to stall longer, raise `--breaker-store-fallback-after`.",
			Example: "--breaker-store redis://redis:6379/0   # and the Redis server is stopped",
		},
		{
			Code: StoreGarbage, Severity: Warn, Title: "breaker store answered garbage",
			Effect:  "As for W075: the breaker judges locally until the store gives a valid answer. The keys are left as found.",
			Fix:     "Another program (or an operator) wrote the breaker's keys under `--breaker-store-prefix` with another type, or the store refuses scripts; give Levee a prefix of its own, or delete the keys named in the message.",
			Example: "SET levee:breaker:{app}:state oops   # a string where Levee keeps a hash",
		},
		{
			Code: StoreParamsMismatch, Severity: Warn, Title: "breaker parameters differ from the fleet's",
			Effect:  "The fleet keeps one set of parameters per breaker, and the most recently changed set wins: while this replica's set is older, the fleet judges with the other set (this replica still classifies statuses with its own).",
			Fix:     "Give every replica the same `circuitBreaker.*` labels for the service; the diagnostic clears when they agree.",
			Example: "levee.http.app.circuitBreaker.threshold=0.5 on one host, 0.3 on another",
		},
	}
}
