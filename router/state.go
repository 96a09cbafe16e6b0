package router

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/retrybudget"
	"github.com/levee-proxy/levee/router/traffic"
)

// ringPointer holds a traffic ring made on first use.
type ringPointer = atomic.Pointer[traffic.Ring]

// Backend is one backend of one route in one snapshot: its configuration
// (immutable) and a pointer to its runtime state (which outlives the
// snapshot).
type Backend struct {
	cfg      config.Backend
	hostport string // "address:port", the registry key and the dial target
	weight   int
	st       *BackendState
}

// Config returns the backend's configuration.
func (b *Backend) Config() config.Backend { return b.cfg }

// HostPort returns "address:port": the dial target and the backend's
// identity in state, metrics and logs.
func (b *Backend) HostPort() string { return b.hostport }

// Weight returns the backend's balancing weight (0: never picked).
func (b *Backend) Weight() int { return b.weight }

// State returns the backend's runtime state, shared with every snapshot
// that has the same route id and address.
func (b *Backend) State() *BackendState { return b.st }

// BackendState is the runtime state of one backend of one route, kept by
// route id and backend address across snapshot swaps.
type BackendState struct {
	key      string
	inflight atomic.Int64
	// down is set by active health checks; a backend starts up so that a
	// new route serves at once.
	down atomic.Bool
	// ejection is passive ejection's record, judged by the request path.
	ejection EjectionState

	// current is the smooth round-robin weight (guarded by the route's
	// BalancerState).
	current int64

	// hcOK and hcFail are the active checker's consecutive results; only
	// the route's health checker touches them.
	hcOK, hcFail int

	// guard is the scope=backend breaker (nil otherwise); requests load
	// it while updates replace it.
	guard atomic.Pointer[Guard]

	// removedAt is when the address left the route's config (zero while
	// present); guarded by RouteState.mu.
	removedAt time.Time

	// traffic is the backend's recent traffic (traffic.go), nil until it
	// first answers.
	traffic ringPointer
}

// EjectionState is passive ejection's record of one backend. The request
// path (package proxy) judges attempts and writes it; the router only
// reads it (status views, metrics). Writers that eject hold the route's
// ejection lock (RouteState.LockEjection), so that the share of ejected
// backends is checked and changed at once.
type EjectionState struct {
	// Until (clock nanoseconds, 0 = never) is when the current ejection
	// ends.
	Until atomic.Int64
	// Failures counts consecutive failed attempts.
	Failures atomic.Int32
	// Run counts consecutive ejections (the backoff exponent) and Last is
	// how long the last one lasted (nanoseconds).
	Run  atomic.Int32
	Last atomic.Int64
}

// Ejected reports whether the ejection holds the backend out at now (clock
// nanoseconds).
func (e *EjectionState) Ejected(now int64) bool {
	u := e.Until.Load()
	return u != 0 && now < u
}

// ejected reports whether passive ejection currently holds the backend out.
func (s *BackendState) ejected(now int64) bool { return s.ejection.Ejected(now) }

// Ejected reports whether passive ejection holds the backend out at now
// (clock nanoseconds).
func (s *BackendState) Ejected(now int64) bool { return s.ejection.Ejected(now) }

// Ejection returns the backend's passive-ejection record.
func (s *BackendState) Ejection() *EjectionState { return &s.ejection }

// Down reports whether active health checks hold the backend out.
func (s *BackendState) Down() bool { return s.down.Load() }

// InFlight returns the number of requests under way to the backend.
func (s *BackendState) InFlight() int64 { return s.inflight.Load() }

// AddInFlight counts a request starting (1) or ending (-1).
func (s *BackendState) AddInFlight(d int64) { s.inflight.Add(d) }

// Guard returns the backend's breaker (scope=backend), nil without one.
func (s *BackendState) Guard() *Guard { return s.guard.Load() }

// RoundRobinWeight is the smooth round-robin balancer's running weight
// for the backend; read and write it only while holding the route's
// BalancerState.
func (s *BackendState) RoundRobinWeight() *int64 { return &s.current }

// RouteState is the runtime state of one route id: balancer counters,
// breakers, health, retry budget, metric handles. It is created when the id
// first appears and dropped a grace period after it disappears.
type RouteState struct {
	id string

	lb      BalancerState
	ejectMu sync.Mutex

	// backendTLS is the route's last compiled backend TLS configuration,
	// kept across rebuilds while its settings and files are unchanged
	// (backendtls.go). Guarded by the router's mu, as compiling is.
	backendTLS compiledBackendTLS

	mu       sync.Mutex // guards the fields below
	backends map[string]*BackendState
	// removedAt is when the route left the config (zero while present).
	removedAt time.Time
	health    *healthChecker
	// dropped is set once the state is gone (grace expired).
	dropped bool

	// guard is the scope=route breaker, nil when the route has none.
	guard atomic.Pointer[Guard]
	// usingFallback: the route's refused traffic goes to its fallback
	// (for the started/stopped events, fallback.go).
	usingFallback atomic.Bool
	budget        retrybudget.Budget
	// rejected is levee_breaker_rejected_total{route=id}, made by
	// NoteRejected on first use: a route whose breakers never refuse has
	// no such series (bounded metrics at 10,000 routes).
	rejected    atomic.Pointer[prometheus.Counter]
	newRejected func() prometheus.Counter
	// policies is the state of the route's policies by policy name (rate
	// buckets, in-flight counters), guarded by mu: it outlives snapshots
	// as the breakers do.
	policies map[string]any
	attached atomic.Pointer[attachment]
	// lingering: a removed backend's state is kept for its grace period
	// (set by pruneBackends); such a route is attached again at every
	// rebuild, so that the state goes when its grace ends.
	lingering atomic.Bool
	// traffic is the route's recent traffic (traffic.go), nil until it
	// first serves.
	traffic ringPointer
	// grpc is the route's tally of gRPC calls (traffic.go), nil until
	// it first serves one.
	grpc atomic.Pointer[traffic.GRPCTally]
}

// ID returns the route id the state belongs to.
func (rs *RouteState) ID() string { return rs.id }

// Guard returns the route's breaker (scope=route), nil without one.
func (rs *RouteState) Guard() *Guard { return rs.guard.Load() }

// AdmitConnection asks the route's breaker (when it has one) for a new
// TCP connection or UDP session: an open breaker refuses it, and the
// refusal is counted for the breaker and the route. Without a breaker
// every connection is admitted, with a Token that reports nowhere.
func (rs *RouteState) AdmitConnection() (breaker.Token, bool) {
	g := rs.Guard()
	if g == nil {
		return breaker.Token{}, true
	}
	d := g.Breaker().Admit()
	if !d.Admitted {
		g.NoteRejected()
		rs.NoteRejected()
		return breaker.Token{}, false
	}
	return d.Token, true
}

// RetryBudget returns the route's retry budget.
func (rs *RouteState) RetryBudget() *retrybudget.Budget { return &rs.budget }

// Balancer returns the route's balancer state.
func (rs *RouteState) Balancer() *BalancerState { return &rs.lb }

// LockEjection and UnlockEjection serialise ejections among the route's
// backends (see EjectionState).
func (rs *RouteState) LockEjection()   { rs.ejectMu.Lock() }
func (rs *RouteState) UnlockEjection() { rs.ejectMu.Unlock() }

// NoteRejected counts a request that the route's breakers refused
// (levee_breaker_rejected_total under the route id).
func (rs *RouteState) NoteRejected() {
	c := rs.rejected.Load()
	if c == nil {
		n := rs.newRejected()
		rs.rejected.CompareAndSwap(nil, &n)
		c = rs.rejected.Load()
	}
	(*c).Inc()
}

// BalancerState is what balancing policies keep per route across
// snapshots: a lock for policies that update per-backend weights
// (BackendState.RoundRobinWeight) and a rotating start for scans.
type BalancerState struct {
	mu   sync.Mutex
	next atomic.Uint32
}

// Lock and Unlock guard the route's per-backend balancer weights.
func (b *BalancerState) Lock()   { b.mu.Lock() }
func (b *BalancerState) Unlock() { b.mu.Unlock() }

// Next advances and returns the rotating start.
func (b *BalancerState) Next() uint32 { return b.next.Add(1) }

// Attachment is data that another layer keeps per route id next to the
// router's state — the request path's metric handles — so that it lives
// as long as the state: Release is called once, when the state is dropped
// after its grace period.
type Attachment interface{ Release() }

type attachment struct{ a Attachment }

// Attachment returns the route state's attachment, creating it with
// create on first use. A state already dropped (a late request on an old
// snapshot) gets create's value without keeping it, and releases it at
// once.
func (rs *RouteState) Attachment(create func(route string) Attachment) Attachment {
	if a := rs.attached.Load(); a != nil {
		return a.a
	}
	return rs.attachSlow(create)
}

func (rs *RouteState) attachSlow(create func(route string) Attachment) Attachment {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if a := rs.attached.Load(); a != nil {
		return a.a
	}
	a := create(rs.id)
	if rs.dropped {
		a.Release()
		return a
	}
	rs.attached.Store(&attachment{a})
	return a
}

// release marks the state dropped and releases its attachment.
func (rs *RouteState) release() {
	rs.mu.Lock()
	rs.dropped = true
	a := rs.attached.Swap(nil)
	rs.mu.Unlock()
	if a != nil {
		a.a.Release()
	}
}

// BackendState returns (creating) the state of the backend at hostport.
func (rs *RouteState) backendFor(hostport string) *BackendState {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	s := rs.backends[hostport]
	if s == nil {
		s = &BackendState{key: hostport}
		rs.backends[hostport] = s
	}
	return s
}

// registry holds every route's runtime state by id. Only Update (under the
// router's update lock) and status readers touch it; requests reach state
// through the snapshot's pointers.
type registry struct {
	mu     sync.Mutex
	routes map[string]*RouteState
}

func newRegistry() *registry {
	return &registry{routes: make(map[string]*RouteState)}
}

// attach returns the state for id, creating it, and marks it present.
func (g *registry) attach(id string) (rs *RouteState, created bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rs = g.routes[id]
	if rs == nil {
		rs = &RouteState{id: id, backends: make(map[string]*BackendState)}
		g.routes[id] = rs
		created = true
	}
	rs.mu.Lock()
	rs.removedAt = time.Time{}
	rs.mu.Unlock()
	return rs, created
}

func (g *registry) get(id string) (*RouteState, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rs, ok := g.routes[id]
	return rs, ok
}

// all returns every route state (present and within grace).
func (g *registry) all() []*RouteState {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*RouteState, 0, len(g.routes))
	for _, rs := range g.routes {
		out = append(out, rs)
	}
	return out
}

// markAbsent stamps every route not in present as removed at now (keeping
// the first stamp), removes those whose grace has expired and returns them,
// with the earliest removal stamp among those still kept (zero if none).
func (g *registry) markAbsent(present map[string]bool, now time.Time, grace time.Duration) (expired []*RouteState, earliest time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, rs := range g.routes {
		if !present[id] {
			expired, earliest = g.absent(rs, now, grace, expired, earliest)
		}
	}
	return expired, earliest
}

// markAbsentIDs is markAbsent for the ids a patch removed.
func (g *registry) markAbsentIDs(ids []string, now time.Time, grace time.Duration) (expired []*RouteState, earliest time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range ids {
		if rs, ok := g.routes[id]; ok {
			expired, earliest = g.absent(rs, now, grace, expired, earliest)
		}
	}
	return expired, earliest
}

// absent stamps rs as absent since now (unless it was already) and
// forgets it once its grace has passed. Callers hold g.mu.
func (g *registry) absent(rs *RouteState, now time.Time, grace time.Duration, expired []*RouteState, earliest time.Time) ([]*RouteState, time.Time) {
	rs.mu.Lock()
	if rs.removedAt.IsZero() {
		rs.removedAt = now
	}
	removedAt := rs.removedAt
	rs.mu.Unlock()
	if !now.Before(removedAt.Add(grace)) {
		delete(g.routes, rs.id)
		return append(expired, rs), earliest
	}
	if earliest.IsZero() || removedAt.Before(earliest) {
		earliest = removedAt
	}
	return expired, earliest
}

// pruneBackends stamps backend addresses the route no longer has and drops
// those gone for longer than grace: a container restarting on the same
// address keeps its state, while churn does not grow the map without bound.
//
// It also returns the earliest removal stamp among the removed backends
// still kept (zero if none), for the sweep timer.
func (rs *RouteState) pruneBackends(keep []*BackendState, now time.Time, grace time.Duration) (dropped []*BackendState, earliest time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.backends) == len(keep) {
		for _, s := range keep {
			s.removedAt = time.Time{}
		}
		rs.lingering.Store(false)
		return nil, time.Time{} // every state is in use
	}
	defer func() { rs.lingering.Store(len(rs.backends) > len(keep)) }()
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

// settled reports whether the state holds no backend state in its grace
// period (see pruneBackends): attaching the route's unchanged backends
// again would then change nothing.
func (rs *RouteState) settled() bool { return !rs.lingering.Load() }

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

// PolicyState returns the state the route's policy name keeps across
// snapshots, creating it with create on first use. A policy whose state
// has the wrong type for it (the name was reused by another kind) gets a
// fresh one.
func PolicyState[T any](rs *RouteState, name string, create func() *T) *T {
	return policy.Retained(rs, name, create)
}

// retainPolicyState drops the state of policies the route no longer has.
func (rs *RouteState) retainPolicyState(names []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for k := range rs.policies {
		if !slices.Contains(names, k) {
			delete(rs.policies, k)
		}
	}
}
