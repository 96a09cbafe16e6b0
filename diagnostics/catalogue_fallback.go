package diagnostics

// Codes of breaker fallbacks: what a route answers while its
// circuit breaker is open (circuitBreaker.fallback, fallbackStatus,
// serveStale). A fallback name can only be checked where every route is
// known, so W080-W082 and I084 come from the router when it builds a
// snapshot (like W018); W083 comes from the validator.
const (
	// FallbackUnknown: circuitBreaker.fallback names no route.
	FallbackUnknown Code = "W080"
	// FallbackSelf: a route names itself as its fallback.
	FallbackSelf Code = "W081"
	// FallbackCycle: fallbacks form a cycle (a → b → a).
	FallbackCycle Code = "W082"
	// BadFallback: a fallback field has an invalid value.
	BadFallback Code = "W083"
	// FallbackNotChained: the fallback route has a fallback of its own,
	// which is never followed.
	FallbackNotChained Code = "I084"
	// StaleNeverKept: serveStale on a route whose every request carries
	// credentials the stale cache cannot key by (a code outside 080-084:
	// the range was full).
	StaleNeverKept Code = "W025"
)

// fallbackEntries are the codes of breaker fallbacks (codes 080-084); their Code constants are declared here too.
func fallbackEntries() []Entry {
	return []Entry{
		{
			Code: FallbackUnknown, Severity: Warn, Title: "unknown fallback route",
			Effect:  "No route has that name (a label service name or an API entrypoint name). While the breaker is open the route answers as without a fallback: its `responseCode` (503) with `Retry-After`, or a stale answer when `serveStale` is set. The diagnostic goes away as soon as a route with that name appears.",
			Fix:     "Name an existing service in `circuitBreaker.fallback`, or deploy the fallback service.",
			Example: "levee.http.app.circuitBreaker.fallback=maintenace",
		},
		{
			Code: FallbackSelf, Severity: Warn, Title: "route is its own fallback",
			Effect:  "The fallback is refused: sending the traffic an open breaker refuses back to the same backends would defeat the breaker. The route answers as without a fallback.",
			Fix:     "Name another service in `circuitBreaker.fallback`, or remove it.",
			Example: "levee.http.app.circuitBreaker.fallback=app",
		},
		{
			Code: FallbackCycle, Severity: Warn, Title: "fallback cycle",
			Effect:  "Every route in the cycle gets this diagnostic and its fallback is refused: each answers as without a fallback. (Fallbacks are never chained at request time anyway; a cycle is refused because it is always a mistake.)",
			Fix:     "Break the cycle: a fallback service (maintenance page, read-only replica) should not itself fall back to the service it stands in for.",
			Example: "levee.http.a.circuitBreaker.fallback=b and levee.http.b.circuitBreaker.fallback=a",
		},
		{
			Code: BadFallback, Severity: Warn, Title: "invalid fallback setting",
			Effect:  "That field falls back to its default: no fallback route, the fallback's own status, no stale answers, or no stale answers for requests with credentials.",
			Fix:     "`fallback` is a service name (letters, digits, `-`, `_`, `.`; empty: none); `fallbackStatus` is a status 200-599 that carries content (not 204, 205, 304; 0: the fallback's own); `serveStale` is a duration from 0 (off) to 24h; `serveStaleForCredentials` is true or false.",
			Example: "levee.http.app.circuitBreaker.fallbackStatus=99",
		},
		{
			Code: StaleNeverKept, Severity: Warn, Title: "stale answers are never kept on this route",
			Effect:  "The route keeps no stale answers, so while its breaker is open it answers its `responseCode` (503) with `Retry-After`. On a route with basic or forward auth every request carries credentials, which the stale cache keys by only with `serveStaleForCredentials=true` (else one user's page could reach another); with it, a forward-auth route without `authRequestHeaders` sends its auth service every field of the request, so no key could hold all it decided on.",
			Fix:     "Set `circuitBreaker.serveStaleForCredentials=true` to keep answers per credentials (and, with forward auth, list the fields the auth service reads in `forwardAuth.authRequestHeaders`), or remove `serveStale`.",
			Example: "levee.http.app.forwardAuth.address=http://auth:4181 with levee.http.app.circuitBreaker.serveStale=10m",
		},
		{
			Code: FallbackNotChained, Severity: Info, Title: "fallback of a fallback is not followed",
			Effect:  "The route's fallback has a fallback of its own. Fallbacks never chain: when the fallback's own breaker is open too, the route answers its own `responseCode` (503) with `Retry-After`, as without a fallback.",
			Fix:     "Nothing to fix if that is intended; point the route straight at the service that should answer otherwise.",
			Example: "levee.http.a.circuitBreaker.fallback=b and levee.http.b.circuitBreaker.fallback=c",
		},
	}
}
