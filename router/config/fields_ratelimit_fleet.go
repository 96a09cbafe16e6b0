package config

import (
	"fmt"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// The scopes of a rate limit.
const (
	// ScopeLocal: each replica keeps its own buckets (the default).
	ScopeLocal = "local"
	// ScopeFleet: the replicas sharing a breaker store enforce one limit
	// together (router/policy/ratelimit's fleet mode).
	ScopeFleet = "fleet"
)

// rateLimitScopeFields are the rows of the fleet-wide rate limit.
func rateLimitScopeFields() []Field {
	return []Field{
		{Label: "rateLimit.scope", JSON: "config.rate_limit.scope", Kind: KindString, Default: ScopeLocal, Code: diagnostics.BadRateLimit,
			Doc:     "Who shares the limit: `local` (each replica enforces `average` alone, so N replicas admit N times it) or `fleet` (the replicas sharing `--breaker-store` enforce it together, reconciled every `--rate-limit-flush-interval`; approximate: a replica may overshoot by about one flush interval's traffic; Redis gone, each replica enforces the whole limit locally with W059; without a store, W068 and local).",
			Example: "fleet", set: setRateScope, get: getRateScope},
	}
}

func setRateScope(d *draft, f *Field, key string, v any) {
	rl := rateLimitOf(&d.ep.Access)
	s, ok := decode(d, f, key, v, toString, nil)
	if !ok {
		return
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case ScopeLocal, "":
		rl.Scope = ""
	case ScopeFleet:
		rl.Scope = ScopeFleet
	default:
		d.bad(f, key, v, fmt.Sprintf("%q is not %s or %s", s, ScopeLocal, ScopeFleet))
	}
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
