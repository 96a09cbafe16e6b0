package ratelimit

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// fleetRoute is one route's fleet buckets, kept in the route's state
// across snapshots, and the keys spent from since the last flush.
type fleetRoute struct {
	route   string
	buckets *Store[fleetBucket]
	params  atomic.Pointer[fleetParams]
	// replicas is the route's replica count at its latest
	// reconciliation: a key new to this replica starts with that share.
	replicas atomic.Int64

	mu    sync.Mutex
	dirty []*fleetBucket // at most buckets.MaxKeys()
}

// fleetParams are the route's average (tokens a second) and burst.
type fleetParams struct {
	rate  float64
	burst int
}

func newFleetRoute(route string) *fleetRoute {
	return &fleetRoute{route: route, buckets: NewStore[fleetBucket](0)}
}

// queue marks b for the next flush. A full list leaves b unmarked: its
// next request tries again, and its spending waits in b meanwhile.
func (r *fleetRoute) queue(b *fleetBucket) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.dirty) >= r.buckets.MaxKeys() {
		return false
	}
	r.dirty = append(r.dirty, b)
	return true
}

// take moves up to limit-len(batch) queued buckets' spending into batch.
func (r *fleetRoute) take(batch []pending, limit int) []pending {
	pr := r.params.Load()
	r.mu.Lock()
	n := min(len(r.dirty), limit-len(batch))
	taken := r.dirty[:n]
	r.dirty = append([]*fleetBucket(nil), r.dirty[n:]...)
	r.mu.Unlock()
	for _, b := range taken {
		b.mu.Lock()
		s := Spend{Route: r.route, Key: b.name, Spent: b.spent, Rate: pr.rate, Burst: pr.burst}
		b.spent, b.queued = 0, false
		b.mu.Unlock()
		batch = append(batch, pending{route: r, b: b, params: pr, spend: s})
	}
	return batch
}

// fleetBucket is one key's local bucket: its share of the fleet's.
type fleetBucket struct {
	mu     sync.Mutex
	name   string // Criterion.FleetName, set by the first request
	tokens float64
	last   time.Time
	// spent is what was admitted since the spending was last taken.
	spent  int64
	queued bool
	// replicas is the fleet's replica count at the last reconciliation
	// (of the route's other keys when the bucket is new; 0: the route was
	// never reconciled, the bucket is the replica's own).
	replicas int
}

// share returns the local rate and size of the bucket: the fleet's
// divided by the replicas, at least one token.
func share(pr *fleetParams, replicas int) (rate, size float64) {
	n := float64(max(replicas, 1))
	return pr.rate / n, max(float64(pr.burst)/n, 1)
}

// admit takes a token if there is one. queue is true when the bucket
// must be marked for the next flush.
func (b *fleetBucket) admit(now time.Time, pr *fleetParams, routeReplicas int, local bool) (ok bool, wait float64, queue bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.replicas = routeReplicas
	}
	n := b.replicas
	if local {
		n = 1
	}
	rate, size := share(pr, n)
	switch {
	case b.last.IsZero():
		b.tokens = size
		b.last = now
	case now.After(b.last):
		b.tokens = min(size, b.tokens+now.Sub(b.last).Seconds()*rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false, (1 - b.tokens) / rate, false
	}
	b.tokens--
	b.spent++
	if !b.queued {
		b.queued, queue = true, true
	}
	return true, 0, queue
}

// apply sets the bucket from the fleet's budget: its share of what the
// fleet has left, less what this replica admitted while the
// reconciliation was under way (the fleet is charged for it next time).
func (b *fleetBucket) apply(now time.Time, pr *fleetParams, bg Budget) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.replicas = max(bg.Replicas, 1)
	_, size := share(pr, b.replicas)
	t := max(bg.Tokens, 0)/float64(b.replicas) - float64(b.spent)
	b.tokens = max(min(t, size), -size)
	b.last = now
}

// FleetPolicy is one route's fleet rate limit (scope=fleet).
type FleetPolicy struct {
	params      *fleetParams
	crit        Criterion
	route       *fleetRoute
	fleet       *Fleet
	now         func() time.Time
	ref         policy.Refuser
	policyValue []string
}

// NewFleetPolicy compiles cfg over the route's fleet buckets, joining
// the route to fleet. cfg must be validated.
func NewFleetPolicy(cfg *config.RateLimit, r *fleetRoute, fleet *Fleet, env policy.Env) *FleetPolicy {
	period := cfg.Period
	if period <= 0 {
		period = config.DefaultRatePeriod
	}
	pr := &fleetParams{rate: float64(cfg.Average) / period.Seconds(), burst: max(cfg.Burst, 1)}
	r.params.Store(pr)
	fleet.Join(r)
	return &FleetPolicy{
		params: pr, crit: NewCriterion(cfg.SourceCriterion, env), route: r, fleet: fleet,
		now: env.Clock(), ref: env.Refuser(Name),
		policyValue: []string{`"levee";q=` + strconv.Itoa(cfg.Average) + `;w=` + strconv.FormatInt(int64(math.Ceil(period.Seconds())), 10)},
	}
}

// Name implements policy.Policy.
func (p *FleetPolicy) Name() string { return Name }

// Stage implements policy.Policy.
func (p *FleetPolicy) Stage() policy.Stage { return policy.StageRateLimit }

// Serve implements policy.Policy.
func (p *FleetPolicy) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	k, ok := p.crit.Of(r)
	if !ok {
		status, reason, msg := p.crit.Unkeyed()
		p.ref.Refuse(w, status, reason, msg)
		return
	}
	b := p.route.buckets.Get(k, newFleetBucket)
	if !p.named(b, r) {
		status, reason, msg := p.crit.Unkeyed()
		p.ref.Refuse(w, status, reason, msg)
		return
	}
	admitted, wait, queue := b.admit(p.now(), p.params, int(p.route.replicas.Load()), p.fleet.Local())
	if queue && !p.route.queue(b) {
		b.mu.Lock()
		b.queued = false
		b.mu.Unlock()
	}
	if admitted {
		next.ServeHTTP(w, r)
		return
	}
	secs := strconv.FormatInt(max(int64(math.Ceil(wait)), 1), 10)
	h := w.Header()
	h.Set("Retry-After", secs)
	h["Ratelimit-Policy"] = p.policyValue
	h.Set("Ratelimit", `"levee";r=0;t=`+secs)
	p.ref.Refuse(w, http.StatusTooManyRequests, policy.ReasonRateLimited, "rate limit exceeded\n")
}

// named gives a new bucket its fleet name (once; every request of the
// key has the same).
func (p *FleetPolicy) named(b *fleetBucket, r *http.Request) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.name != "" {
		return true
	}
	name, ok := p.crit.FleetName(r)
	b.name = name
	return ok
}

func newFleetBucket() *fleetBucket { return &fleetBucket{} }
