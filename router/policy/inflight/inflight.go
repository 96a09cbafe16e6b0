// Package inflight is the in-flight limit policy: at most amount requests
// of one source (client address, Host, or a header's value) are under way
// on the route at once; more are refused with 429 Too Many Requests,
// X-Levee-Diagnostic: too-many-in-flight and Retry-After: 1.
//
// Why 429 and not 503: the limit is per source, so exceeding it is that
// client's doing (RFC 6585 4: "the user has sent too many requests"),
// and the route is not unavailable to anyone else. A 503 would tell
// clients, CDNs and monitors that the service is down.
//
// A request counts from the moment the policy admits it until the
// exchange ends (for an upgraded connection, until the tunnel closes).
// The counters live in the route's state, so a config rebuild does not
// reset them while requests are under way; they are kept in a bounded
// ratelimit.Store, so a flood of distinct sources cannot grow memory
// without bound.
//
// With scope=fleet the limit holds over the replicas sharing a breaker
// store (FleetPolicy, Fleet): see fleet.go.
package inflight

import (
	"net/http"
	"sync/atomic"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/ratelimit"
)

// Name is the policy's name in metrics and logs.
const Name = "in-flight"

// Counters are a route's in-flight counters, kept across snapshots.
type Counters = ratelimit.Store[atomic.Int64]

// NewCounters returns an empty counter store of at most maxKeys keys.
func NewCounters(maxKeys int) *Counters { return ratelimit.NewStore[atomic.Int64](maxKeys) }

func newCounter() *atomic.Int64 { return new(atomic.Int64) }

var retryAfter1 = []string{"1"}

// Policy is one route's compiled in-flight limit.
type Policy struct {
	amount   int64
	crit     ratelimit.Criterion
	counters *Counters
	ref      policy.Refuser
}

// New compiles cfg (Amount positive) over the route's counters.
func New(cfg *config.InFlight, counters *Counters, env policy.Env) *Policy {
	return &Policy{
		amount:   int64(max(cfg.Amount, 1)),
		crit:     ratelimit.NewCriterion(cfg.SourceCriterion, env),
		counters: counters,
		ref:      env.Refuser(Name),
	}
}

// Name implements policy.Policy.
func (p *Policy) Name() string { return Name }

// Stage implements policy.Policy.
func (p *Policy) Stage() policy.Stage { return policy.StageInFlight }

// Serve implements policy.Policy.
func (p *Policy) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	k, ok := p.crit.Of(r)
	if !ok {
		status, reason, msg := p.crit.Unkeyed()
		p.ref.Refuse(w, status, reason, msg)
		return
	}
	c := p.counters.Get(k, newCounter)
	if c.Add(1) > p.amount {
		c.Add(-1)
		refuse(w, p.ref)
		return
	}
	defer c.Add(-1)
	next.ServeHTTP(w, r)
}

// refuse answers 429 too-many-in-flight with Retry-After: 1.
func refuse(w http.ResponseWriter, ref policy.Refuser) {
	w.Header()["Retry-After"] = retryAfter1
	ref.Refuse(w, http.StatusTooManyRequests, policy.ReasonTooManyInFlight, "too many requests in flight\n")
}
