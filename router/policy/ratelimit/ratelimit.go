// Package ratelimit is the rate-limit policy: a token bucket
// (golang.org/x/time/rate) per source — client address, Host, or a
// header's value — refilled at average/period, holding up to burst
// tokens. A request that finds its bucket empty is refused with 429,
// X-Levee-Diagnostic: rate-limited, Retry-After (whole seconds until a
// token is back, at least 1; RFC 9110 10.2.3) and the RateLimit and
// RateLimit-Policy fields of draft-ietf-httpapi-ratelimit-headers.
//
// The buckets live in a Store kept in the route's state (it outlives
// config rebuilds: a new snapshot does not refill anyone's bucket), with
// a fixed bound on the number of keys (see Store). A change of average,
// period or burst applies to the existing buckets on their next request.
//
// Package inflight reuses the Store and the source criteria.
package ratelimit

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/time/rate"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// Name is the policy's name in metrics and logs.
const Name = "rate-limit"

// Buckets are a route's token buckets, kept across snapshots.
type Buckets = Store[rate.Limiter]

// NewBuckets returns an empty bucket store of at most maxKeys keys.
func NewBuckets(maxKeys int) *Buckets { return NewStore[rate.Limiter](maxKeys) }

// Policy is one route's compiled rate limit.
type Policy struct {
	limit   rate.Limit
	burst   int
	crit    Criterion
	buckets *Buckets
	now     func() time.Time
	ref     policy.Refuser
	// policyValue is the RateLimit-Policy field, computed once.
	policyValue []string
	newBucket   func() *rate.Limiter
}

// New compiles cfg over the route's buckets. cfg must be validated
// (Average and Period positive).
func New(cfg *config.RateLimit, buckets *Buckets, env policy.Env) *Policy {
	period := cfg.Period
	if period <= 0 {
		period = config.DefaultRatePeriod
	}
	p := &Policy{
		limit:   rate.Limit(float64(cfg.Average) / period.Seconds()),
		burst:   max(cfg.Burst, 1),
		crit:    NewCriterion(cfg.SourceCriterion, env),
		buckets: buckets,
		now:     env.Clock(),
		ref:     env.Refuser(Name),
		// One policy named "levee": q requests per w seconds.
		policyValue: []string{`"levee";q=` + strconv.Itoa(cfg.Average) + `;w=` + strconv.FormatInt(int64(math.Ceil(period.Seconds())), 10)},
	}
	p.newBucket = func() *rate.Limiter { return rate.NewLimiter(p.limit, p.burst) }
	return p
}

// Name implements policy.Policy.
func (p *Policy) Name() string { return Name }

// Stage implements policy.Policy.
func (p *Policy) Stage() policy.Stage { return policy.StageRateLimit }

// Serve implements policy.Policy.
func (p *Policy) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	k, ok := p.crit.Of(r)
	if !ok {
		status, reason, msg := p.crit.Unkeyed()
		p.ref.Refuse(w, status, reason, msg)
		return
	}
	now := p.now()
	b := p.buckets.Get(k, p.newBucket)
	if b.Limit() != p.limit {
		b.SetLimitAt(now, p.limit)
	}
	if b.Burst() != p.burst {
		b.SetBurstAt(now, p.burst)
	}
	if b.AllowN(now, 1) {
		next.ServeHTTP(w, r)
		return
	}
	p.refuse(w, b.TokensAt(now))
}

// refuse answers 429 with the time until one token is back.
func (p *Policy) refuse(w http.ResponseWriter, tokens float64) {
	wait := 1.0
	if p.limit > 0 {
		wait = math.Ceil((1 - tokens) / float64(p.limit))
	}
	secs := strconv.FormatInt(max(int64(wait), 1), 10)
	h := w.Header()
	h.Set("Retry-After", secs)
	h["Ratelimit-Policy"] = p.policyValue
	h.Set("Ratelimit", `"levee";r=0;t=`+secs)
	p.ref.Refuse(w, http.StatusTooManyRequests, policy.ReasonRateLimited, "rate limit exceeded\n")
}
