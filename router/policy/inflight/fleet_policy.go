package inflight

import (
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/ratelimit"
)

// fleetRoute is one route's fleet counters, kept in the route's state
// across snapshots, and the list of those the flushes report.
type fleetRoute struct {
	route    string
	counters *ratelimit.Store[fleetCounter]

	mu     sync.Mutex
	list   []*fleetCounter // at most counters.MaxKeys()
	cursor int             // where the next flush starts in list
}

func newFleetRoute(route string) *fleetRoute {
	return &fleetRoute{route: route, counters: ratelimit.NewStore[fleetCounter](0)}
}

// fleetCounter is one key's requests in flight on this replica and the
// other replicas' sum at the last reconciliation.
type fleetCounter struct {
	n      atomic.Int64
	others atomic.Int64
	name   atomic.Pointer[string] // Criterion.FleetName, set by the first request
	// listed: the counter is in its route's list. Set by a request that
	// finds it unset, cleared by the flush that drops it.
	listed atomic.Bool
	gone   bool // under the route's mu: to be dropped from the list
}

func newFleetCounter() *fleetCounter { return &fleetCounter{} }

// add lists c for the flushes. A full list leaves c unlisted (its next
// request tries again): its count is not reported meanwhile.
func (r *fleetRoute) add(c *fleetCounter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.list) >= r.counters.MaxKeys() {
		c.listed.Store(false)
		return
	}
	r.list = append(r.list, c)
}

// take appends up to limit-len(batch) listed counters to batch, starting
// where the previous flush stopped.
func (r *fleetRoute) take(batch []pending, limit int) []pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(len(r.list), limit-len(batch))
	for i := range n {
		c := r.list[(r.cursor+i)%len(r.list)]
		batch = append(batch, pending{route: r, c: c, count: Count{Route: r.route, Key: *c.name.Load(), InFlight: c.n.Load()}})
	}
	if len(r.list) > 0 {
		r.cursor = (r.cursor + n) % len(r.list)
	}
	return batch
}

// prune drops from the list the counters reported idle, unless a request
// came meanwhile: a request increments n before it reads listed, and
// prune clears listed before it reads n, so one of them sees the other.
func (r *fleetRoute) prune(idle []*fleetCounter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range idle {
		c.listed.Store(false)
		if c.n.Load() > 0 && c.listed.CompareAndSwap(false, true) {
			continue
		}
		c.gone = true
	}
	kept := r.list[:0]
	for _, c := range r.list {
		if c.gone {
			c.gone = false
			continue
		}
		kept = append(kept, c)
	}
	clear(r.list[len(kept):])
	r.list = kept
	if len(r.list) > 0 {
		r.cursor %= len(r.list)
	} else {
		r.cursor = 0
	}
}

// FleetPolicy is one route's fleet in-flight limit (scope=fleet).
type FleetPolicy struct {
	amount int64
	crit   ratelimit.Criterion
	route  *fleetRoute
	fleet  *Fleet
	ref    policy.Refuser
}

// NewFleetPolicy compiles cfg over the route's fleet counters, joining
// the route to fleet. cfg must be validated.
func NewFleetPolicy(cfg *config.InFlight, r *fleetRoute, fleet *Fleet, env policy.Env) *FleetPolicy {
	fleet.Join(r)
	return &FleetPolicy{amount: int64(max(cfg.Amount, 1)), crit: ratelimit.NewCriterion(cfg.SourceCriterion, env), route: r, fleet: fleet, ref: env.Refuser(Name)}
}

// Name implements policy.Policy.
func (p *FleetPolicy) Name() string { return Name }

// Stage implements policy.Policy.
func (p *FleetPolicy) Stage() policy.Stage { return policy.StageInFlight }

// Serve implements policy.Policy: admitted while this replica's count
// plus the others' last known sum stays within amount (the local count
// alone while the store is lost).
func (p *FleetPolicy) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	k, ok := p.crit.Of(r)
	if ok {
		c := p.route.counters.Get(k, newFleetCounter)
		if c.name.Load() == nil {
			var name string
			name, ok = p.crit.FleetName(r)
			c.name.CompareAndSwap(nil, &name)
		}
		if ok {
			p.serve(c, w, r, next)
			return
		}
	}
	status, reason, msg := p.crit.Unkeyed()
	p.ref.Refuse(w, status, reason, msg)
}

func (p *FleetPolicy) serve(c *fleetCounter, w http.ResponseWriter, r *http.Request, next http.Handler) {
	var others int64
	if !p.fleet.Local() {
		others = c.others.Load()
	}
	if c.n.Add(1)+others > p.amount {
		c.n.Add(-1)
		refuse(w, p.ref)
		return
	}
	defer c.n.Add(-1)
	if !c.listed.Load() && c.listed.CompareAndSwap(false, true) {
		p.route.add(c)
	}
	next.ServeHTTP(w, r)
}
