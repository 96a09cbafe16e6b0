package router

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

// backend is one backend of one route in one snapshot: its configuration
// (immutable) and a pointer to its runtime state (which outlives the
// snapshot).
type backend struct {
	cfg      config.Backend
	hostport string // "address:port", the registry key and the dial target
	weight   int
	st       *backendState
}

// backendState is the runtime state of one backend of one route, kept by
// route id and backend address across snapshot swaps.
type backendState struct {
	key      string
	inflight atomic.Int64
	// down is set by active health checks; a backend starts up so that a
	// new route serves at once.
	down atomic.Bool
	// ejectedUntil (clock nanoseconds, 0 = never) is set by passive
	// ejection.
	ejectedUntil atomic.Int64
	// consecutive failures seen by passive ejection.
	failures atomic.Int32

	// current is the smooth round-robin weight (guarded by routeState.lbMu).
	current int64

	// ejectionRun counts consecutive ejections (the backoff exponent) and
	// lastEjection is how long the last one lasted (nanoseconds).
	ejectionRun  atomic.Int32
	lastEjection atomic.Int64

	// hcOK and hcFail are the active checker's consecutive results; only
	// the route's health checker touches them.
	hcOK, hcFail int

	// guard is the scope=backend breaker (nil otherwise); requests load
	// it while updates replace it.
	guard atomic.Pointer[guard]

	// removedAt is when the address left the route's config (zero while
	// present); guarded by routeState.mu.
	removedAt time.Time
}

// ejected reports whether passive ejection currently holds the backend out.
func (s *backendState) ejected(now int64) bool {
	u := s.ejectedUntil.Load()
	return u != 0 && now < u
}

// routeState is the runtime state of one route id: balancer counters,
// breakers, health, retry budget, metric handles. It is created when the id
// first appears and dropped a grace period after it disappears.
type routeState struct {
	id string

	lbMu    sync.Mutex
	ejectMu sync.Mutex

	mu       sync.Mutex // guards the fields below
	backends map[string]*backendState
	// removedAt is when the route left the config (zero while present).
	removedAt time.Time
	health    *healthChecker

	lb     balancer
	lbName string

	// guard is the scope=route breaker, nil when the route has none.
	guard  atomic.Pointer[guard]
	budget retryBudget
	series *routeSeries
}

// backendState returns (creating) the state of the backend at hostport.
func (rs *routeState) backendState(hostport string) *backendState {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	s := rs.backends[hostport]
	if s == nil {
		s = &backendState{key: hostport}
		rs.backends[hostport] = s
	}
	return s
}

// balancerFor returns the route's balancer for policy, keeping the existing
// one (and its counters) while the policy is unchanged.
func (rs *routeState) balancerFor(policy string) balancer {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.lb == nil || rs.lbName != policy {
		rs.lb = newBalancer(policy, rs)
		rs.lbName = policy
	}
	return rs.lb
}

// registry holds every route's runtime state by id. Only Update (under the
// router's update lock) and status readers touch it; requests reach state
// through the snapshot's pointers.
type registry struct {
	mu     sync.Mutex
	routes map[string]*routeState
}

func newRegistry() *registry {
	return &registry{routes: make(map[string]*routeState)}
}

// attach returns the state for id, creating it, and marks it present.
func (g *registry) attach(id string) (rs *routeState, created bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rs = g.routes[id]
	if rs == nil {
		rs = &routeState{id: id, backends: make(map[string]*backendState)}
		g.routes[id] = rs
		created = true
	}
	rs.mu.Lock()
	rs.removedAt = time.Time{}
	rs.mu.Unlock()
	return rs, created
}

func (g *registry) get(id string) (*routeState, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rs, ok := g.routes[id]
	return rs, ok
}

// all returns every route state (present and within grace).
func (g *registry) all() []*routeState {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*routeState, 0, len(g.routes))
	for _, rs := range g.routes {
		out = append(out, rs)
	}
	return out
}

// markAbsent stamps every route not in present as removed at now (keeping
// the first stamp), removes those whose grace has expired and returns them,
// with the earliest removal stamp among those still kept (zero if none).
func (g *registry) markAbsent(present map[string]bool, now time.Time, grace time.Duration) (expired []*routeState, earliest time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, rs := range g.routes {
		if present[id] {
			continue
		}
		rs.mu.Lock()
		if rs.removedAt.IsZero() {
			rs.removedAt = now
		}
		removedAt := rs.removedAt
		rs.mu.Unlock()
		if !now.Before(removedAt.Add(grace)) {
			delete(g.routes, id)
			expired = append(expired, rs)
		} else if earliest.IsZero() || removedAt.Before(earliest) {
			earliest = removedAt
		}
	}
	return expired, earliest
}

// pruneBackends stamps backend addresses the route no longer has and drops
// those gone for longer than grace: a container restarting on the same
// address keeps its state, while churn does not grow the map without bound.
//
// It also returns the earliest removal stamp among the removed backends
// still kept (zero if none), for the sweep timer.
func (rs *routeState) pruneBackends(keep []*backendState, now time.Time, grace time.Duration) (dropped []*backendState, earliest time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.backends) == len(keep) {
		for _, s := range keep {
			s.removedAt = time.Time{}
		}
		return nil, time.Time{} // every state is in use
	}
	for k, s := range rs.backends {
		if slices.Contains(keep, s) {
			s.removedAt = time.Time{}
			continue
		}
		if s.removedAt.IsZero() {
			s.removedAt = now
		}
		if !now.Before(s.removedAt.Add(grace)) {
			delete(rs.backends, k)
			dropped = append(dropped, s)
		} else if earliest.IsZero() || s.removedAt.Before(earliest) {
			earliest = s.removedAt
		}
	}
	return dropped, earliest
}

func hostPort(b config.Backend) string {
	return joinHostPort(b.Address, b.Port)
}

func joinHostPort(host string, port int) string {
	p := strconv.Itoa(port)
	for i := 0; i < len(host); i++ {
		if host[i] == ':' {
			return "[" + host + "]:" + p
		}
	}
	return host + ":" + p
}
