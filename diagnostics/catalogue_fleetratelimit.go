package diagnostics

// Codes of rate and in-flight limits shared by a fleet
// (rateLimit.scope=fleet, inFlight.scope=fleet, docs/policies.md).
const (
	// RateStoreLost: the breaker store did not answer a reconciliation
	// of the fleet rate limits (source rate-limit-store) or in-flight
	// limits (source in-flight-store); every such limit of this replica
	// is enforced locally until it does.
	RateStoreLost Code = "W059"
	// RateFleetWithoutStore: a route asks for rateLimit.scope=fleet or
	// inFlight.scope=fleet on a Levee started without --breaker-store.
	RateFleetWithoutStore Code = "W068"
)

// fleetRateLimitEntries are the codes of fleet rate and in-flight limits.
func fleetRateLimitEntries() []Entry {
	return []Entry{
		{
			Code: RateStoreLost, Severity: Warn, Title: "fleet limit enforced locally",
			Effect:  "The breaker store failed, timed out or answered nonsense when this replica reconciled its fleet rate limits (object `rateLimit`) or fleet in-flight limits (object `inFlight`): each of its `scope=fleet` limits of that kind fails to local, not open (this replica alone admits up to the whole `average` and `burst`, or `amount` in flight, so the fleet may admit up to the replica count times the limit). Requests never wait for the store. The next good reconciliation clears it.",
			Fix:     "Bring the Redis of `--breaker-store` back or make it reachable; `levee_ratelimit_store_errors_total` and `levee_inflight_store_errors_total` count the failed reconciliations.",
			Example: "levee serve --breaker-store redis://redis:6379/0   # redis stopped",
		},
		{
			Code: RateFleetWithoutStore, Severity: Warn, Title: "fleet limit without a store",
			Effect:  "The route's rate limit (`rateLimit.scope=fleet`) or in-flight limit (`inFlight.scope=fleet`) is local: each replica enforces the whole limit on its own, as with `scope=local`.",
			Fix:     "Start every replica with the same `--breaker-store redis://...`, or drop the `scope=fleet`.",
			Example: "levee.http.app.rateLimit.scope=fleet   # levee serve without --breaker-store",
		},
	}
}
