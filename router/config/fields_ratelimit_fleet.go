package config

import (
	"fmt"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// The scopes of a rate or in-flight limit.
const (
	// ScopeLocal: each replica keeps its own buckets (the default).
	ScopeLocal = "local"
	// ScopeFleet: the replicas sharing a breaker store enforce one limit
	// together (router/policy/ratelimit's fleet mode).
	ScopeFleet = "fleet"
)

// rateLimitScopeFields are the rows of the fleet-wide rate and in-flight
// limits.
func rateLimitScopeFields() []Field {
	return []Field{
		{Label: "rateLimit.scope", JSON: "config.rate_limit.scope", Kind: KindString, Default: ScopeLocal, Code: diagnostics.BadRateLimit,
			Doc:     "Who shares the limit: `local` (each replica enforces `average` alone, so N replicas admit N times it) or `fleet` (the replicas sharing `--breaker-store` enforce it together, reconciled every `--rate-limit-flush-interval`; approximate: a replica may overshoot by about one flush interval's traffic; Redis gone, each replica enforces the whole limit locally with W059; without a store, W068 and local).",
			Example: "fleet", set: setScope(func(a *AccessPolicies) *string { return &rateLimitOf(a).Scope }), get: getRateScope},
		{Label: "inFlight.scope", JSON: "config.in_flight.scope", Kind: KindString, Default: ScopeLocal, Code: diagnostics.BadInFlight,
			Doc:     "Who shares the limit: `local` (each replica admits `amount` alone, so N replicas admit N times it) or `fleet` (at most `amount` in flight over the replicas sharing `--breaker-store`, counts reconciled every `--rate-limit-flush-interval`; approximate: the fleet may exceed `amount` by what arrives within about one flush interval, never more than `amount` per replica; Redis gone, each replica enforces `amount` locally with W059; without a store, W068 and local).",
			Example: "fleet", set: setScope(func(a *AccessPolicies) *string { return &inFlightOf(a).Scope }), get: getInFlightScope},
	}
}

// setScope sets a limit's scope: "" for local, ScopeFleet.
func setScope(scope func(*AccessPolicies) *string) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		dst := scope(&d.ep.Access)
		s, ok := decode(d, f, key, v, toString, nil)
		if !ok {
			return
		}
		switch strings.ToLower(strings.TrimSpace(s)) {
		case ScopeLocal, "":
			*dst = ""
		case ScopeFleet:
			*dst = ScopeFleet
		default:
			d.bad(f, key, v, fmt.Sprintf("%q is not %s or %s", s, ScopeLocal, ScopeFleet))
		}
	}
}

// getInFlightScope writes only a fleet scope, as getRateScope.
func getInFlightScope(ep *Entrypoint, _ *Backend) (any, bool) {
	fl := ep.Access.InFlight
	if fl == nil || fl.Scope != ScopeFleet {
		return nil, false
	}
	return fl.Scope, true
}

// getRateScope writes only a fleet scope, so that the canonical form of
// a local rate limit is unchanged.
func getRateScope(ep *Entrypoint, _ *Backend) (any, bool) {
	rl := ep.Access.RateLimit
	if rl == nil || rl.Scope != ScopeFleet {
		return nil, false
	}
	return rl.Scope, true
}
