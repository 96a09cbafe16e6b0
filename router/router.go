package router

import (
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/eventbus"
	"github.com/levee-proxy/levee/router/grpchealth"
	"github.com/levee-proxy/levee/router/status"
)

// routerSource is the diagnostics store key of diagnostics the router
// itself makes (collisions).
const routerSource = "router"

// Router merges the sources' entrypoints into snapshots and keeps the
// runtime state that outlives them. Package proxy serves requests over
// its snapshots.
type Router struct {
	opts    Options
	log     zerolog.Logger
	clock   Clock
	store   *diagnostics.Store
	metrics *metrics
	bus     *eventbus.Bus
	reg     *registry
	// refusals counts policy refusals (levee_policy_refusals_total).
	refusals refusalRecorder

	snap atomic.Pointer[Snapshot]

	healthTransport *http.Transport        // active health checks' connections
	authTransport   *http.Transport        // forward-auth services' connections
	grpcHealth      *grpchealth.Transports // gRPC health checks' connections

	mu      sync.Mutex // serialises Update and sweeps
	sources map[string]*sourceSet
	// policies are each source's named policies (policies.go).
	policies map[string][]config.Policy
	// policySet is the policies the current snapshot was resolved with.
	policySet config.PolicySet
	ghosts    map[string]ghost
	// routeDiags are the router's diagnostics of each route id that has
	// any (collisions, compile and policy problems), kept per id so that
	// a patch replaces only its ids' (patch.go).
	routeDiags map[string][]diagnostics.Diagnostic
	// volatile are the ids of the current snapshot's routes that a patch
	// compiles afresh although their entrypoint did not change: routes
	// with a fallback, and routes whose state is not settled (reusable).
	volatile      map[string]bool
	patched       int // patches that took the patch path, not a full rebuild
	regexes       regexCache
	newAttachment func(route string) Attachment // see SetAttachment
	sweep         *time.Timer
	expiry        earliest // earliest removal stamp seen by the current rebuild
	closed        bool
}

// ghost is an entrypoint that vanished from its source and still answers
// 503 until its grace expires.
type ghost struct {
	ep        config.Entrypoint
	removedAt time.Time
}

// New returns a Router with an empty route table. Call Close to stop its
// health checks and timers.
func New(opts Options) *Router {
	opts = opts.withDefaults()
	r := &Router{
		opts:       opts,
		log:        opts.Logger,
		clock:      opts.Clock,
		store:      opts.Diagnostics,
		metrics:    newMetrics(),
		reg:        newRegistry(),
		sources:    make(map[string]*sourceSet),
		policies:   make(map[string][]config.Policy),
		ghosts:     make(map[string]ghost),
		routeDiags: make(map[string][]diagnostics.Diagnostic),
		volatile:   make(map[string]bool),
	}
	r.refusals = refusalRecorder{r.metrics}
	r.bus = eventbus.New(strconv.FormatInt(opts.Clock.Now().UnixNano(), 36), r.metrics.eventsDropped.Inc)
	r.healthTransport = newHealthTransport(opts)
	r.grpcHealth = &grpchealth.Transports{DialTimeout: opts.DialTimeout, IdleConnTimeout: opts.IdleConnTimeout, MaxHeaderBytes: maxHealthHeaderBytes}
	r.authTransport = newAuthTransport(opts)
	if r.opts.Policies == nil {
		r.opts.Policies = DefaultPolicies(PolicyDeps{AuthTransport: r.authTransport, PasswordSlots: opts.PasswordSlots, Encoders: opts.Encoders, RateFleet: opts.RateFleet, InFlightFleet: opts.InFlightFleet, ErrorPagesDir: opts.ErrorPagesDir})
	}
	if err := r.metrics.register(opts.Registerer, stateCollector{r}); err != nil {
		r.log.Error().Err(err).Msg("router metrics are not exported")
	}
	empty, _ := buildSnapshot(nil)
	r.snap.Store(empty)
	return r
}

// Close stops health checks and timers and closes the health checks' idle
// connections. Snapshots stay readable afterwards.
func (r *Router) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.sweep != nil {
		r.sweep.Stop()
	}
	for _, rs := range r.reg.all() {
		rs.stopHealth()
	}
	r.healthTransport.CloseIdleConnections()
	r.grpcHealth.CloseIdle()
	r.authTransport.CloseIdleConnections()
}

// Snapshot returns the route table requests currently use.
func (r *Router) Snapshot() *Snapshot { return r.snap.Load() }

// Subscribe returns a channel of events with room for buffer of them and a
// function that ends the subscription (and closes the channel). Events a
// full channel cannot take are dropped and counted, never waited for.
func (r *Router) Subscribe(buffer int) (<-chan status.Event, func()) { return r.bus.Subscribe(buffer) }

// RecentEvents returns the last eventbus.Recent events the bus carried
// (history samples excluded), oldest first: what a view opened now has
// missed.
func (r *Router) RecentEvents() status.RecentEvents {
	events, last := r.bus.Last()
	return status.RecentEvents{Size: eventbus.Recent, Events: events, LastID: last}
}

// SubscribeAfter is Subscribe that also returns the remembered events
// published after the event with id lastID (status.Event.ID,
// RecentEvents' LastID), taken in the same instant as the subscription:
// nothing is lost or seen twice in between. An empty lastID returns none;
// an id from another process returns every remembered event.
func (r *Router) SubscribeAfter(buffer int, lastID string) (<-chan status.Event, []status.Event, func()) {
	return r.bus.SubscribeAfter(buffer, lastID)
}

// Update replaces one source's entrypoints and diagnostics, rebuilds the
// route table and swaps it in.
func (r *Router) Update(u config.SourceUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(u.Entrypoints) == 0 {
		delete(r.sources, u.Source)
	} else {
		eps := slices.Clone(u.Entrypoints)
		for i := range eps {
			if eps[i].Source == "" {
				eps[i].Source = u.Source
			}
		}
		r.sources[u.Source] = &sourceSet{eps: eps}
	}
	r.setPolicies(u.Source, u.Policies)
	r.replaceDiagnostics(u.Source, u.Diagnostics)
	r.rebuild()
}

// ReportDiagnostics replaces the diagnostics of a source that is not a
// config source (the breaker store), announcing changes as Update does.
func (r *Router) ReportDiagnostics(source string, ds []diagnostics.Diagnostic) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replaceDiagnostics(source, ds)
}

// replaceDiagnostics stores a source's diagnostics and announces what
// changed (not what is merely still there).
func (r *Router) replaceDiagnostics(source string, ds []diagnostics.Diagnostic) {
	added, removed := r.store.Replace(source, ds)
	now := r.clock.Now()
	for _, d := range added {
		logDiagnostic(r.log, d)
		r.bus.Publish(status.Event{Type: status.EventDiagnostic, Time: now, Data: status.DiagnosticEvent{Change: "added", Diagnostic: d}})
	}
	for _, d := range removed {
		r.log.Info().Str("event", "diagnostic_resolved").Str("code", string(d.Code)).
			Str("provider", d.Source.Provider).Str("object", d.Source.ObjectName).Str("key", d.Key).
			Msg("diagnostic resolved: " + d.Message)
		r.bus.Publish(status.Event{Type: status.EventDiagnostic, Time: now, Data: status.DiagnosticEvent{Change: "removed", Diagnostic: d}})
	}
}

func logDiagnostic(log zerolog.Logger, d diagnostics.Diagnostic) {
	var ev *zerolog.Event
	switch d.Severity {
	case diagnostics.Error:
		ev = log.Error()
	case diagnostics.Warn:
		ev = log.Warn()
	default:
		ev = log.Info()
	}
	ev = ev.Str("event", "diagnostic").Str("code", string(d.Code)).
		Str("provider", d.Source.Provider).Str("object", d.Source.ObjectName)
	if d.Source.Service != "" {
		ev = ev.Str("service", d.Source.Service)
	}
	ev = ev.Str("key", d.Key).Str("value", d.Value)
	// Absent rather than empty: "fallback":"" would read as "fell back to
	// the empty string".
	if d.Fallback != "" {
		ev = ev.Str("fallback", d.Fallback)
	}
	if d.Hint != "" {
		ev = ev.Str("hint", d.Hint)
	}
	ev.Msg(d.Message)
}

// rebuild merges every source, attaches runtime state, swaps the snapshot
// and drops state whose grace has expired. Callers hold r.mu.
func (r *Router) rebuild() {
	now := r.clock.Now()
	eps, collisions := r.merge()
	r.expiry = earliest{}
	r.routeDiags = collisions
	eps, policyDiags := r.resolvePolicies(eps)

	present := make(map[string]bool, len(eps))
	for _, ep := range eps {
		present[ep.ID] = true
	}
	old := r.snap.Load()
	// Routes that left a non-API source keep answering 503 for the grace
	// period: a container restart is not a reason to 404. An API delete is
	// an explicit operator action and takes effect at once.
	for _, rt := range old.routes {
		id := rt.ep.ID
		if !present[id] && !rt.ghost && rt.ep.Source != config.SourceAPI {
			r.ghosts[id] = ghost{ep: rt.ep, removedAt: now}
		}
	}
	for id, g := range r.ghosts {
		if present[id] || !now.Before(g.removedAt.Add(r.opts.RemovedRouteGrace)) {
			delete(r.ghosts, id)
		}
	}

	routes := make([]*Route, 0, len(eps)+len(r.ghosts))
	var fresh []*Route // compiled in this rebuild, ghosts included
	for _, ep := range eps {
		if rt := reusable(old, ep); rt != nil {
			r.noteRouteDiags(rt.ep.ID, rt.compileDiags)
			routes = append(routes, rt)
			continue
		}
		rt := r.compile(ep, now)
		routes = append(routes, rt)
		fresh = append(fresh, rt)
	}
	for _, g := range r.ghosts {
		rt, _ := compileRoute(&g.ep, &r.regexes)
		rt.ghost = true
		rs, created := r.reg.attach(rt.ep.ID)
		if created {
			r.initState(rs)
		}
		rs.mu.Lock()
		rs.removedAt = g.removedAt
		rs.mu.Unlock()
		rt.state = rs
		present[rt.ep.ID] = true // kept alive by the ghost
		routes = append(routes, rt)
		fresh = append(fresh, rt)
	}
	var gone []*Route
	for _, rt := range old.routes {
		if !present[rt.ep.ID] {
			gone = append(gone, rt)
		}
	}
	r.regexes.retain(routes)
	sortRoutes(routes)
	snap, tableDiags := buildSnapshotFrom(old, routes, change{fresh: fresh, gone: gone})
	tableDiags = append(tableDiags, policyDiags...)
	r.snap.Store(snap)
	clear(r.volatile)
	for _, rt := range routes {
		if isVolatile(rt) {
			r.volatile[rt.ep.ID] = true
		}
	}

	r.announceRouteChanges(old, snap, now)
	r.replaceDiagnostics(routerSource, r.routerDiagnostics(tableDiags))

	expired, earliest := r.reg.markAbsent(present, now, r.opts.RemovedRouteGrace)
	for _, rs := range expired {
		r.drop(rs)
	}
	r.expiry.note(earliest)
	for _, g := range r.ghosts {
		r.expiry.note(g.removedAt)
	}
	r.scheduleSweep(now)
}

// compile compiles ep into a route attached to its runtime state, with its
// policies, and notes its diagnostics. Callers hold r.mu.
func (r *Router) compile(ep *config.Entrypoint, now time.Time) *Route {
	rt, d := compileRoute(ep, &r.regexes)
	r.attach(rt, now)
	// Kept on the route: a later rebuild that reuses it reports them
	// again without compiling anything.
	rt.compileDiags = append(append(d, r.compilePolicies(rt)...), compileBackendTLS(rt)...)
	r.noteRouteDiags(rt.ep.ID, rt.compileDiags)
	return rt
}

// noteRouteDiags adds diagnostics of route id to the router's.
func (r *Router) noteRouteDiags(id string, ds []diagnostics.Diagnostic) {
	if len(ds) > 0 {
		r.routeDiags[id] = append(r.routeDiags[id], ds...)
	}
}

// routerDiagnostics are every route's diagnostics and the snapshot's own
// (host collisions, fallbacks): what the router reports as its source.
func (r *Router) routerDiagnostics(snapshot []diagnostics.Diagnostic) []diagnostics.Diagnostic {
	out := slices.Clone(snapshot)
	for _, ds := range r.routeDiags {
		out = append(out, ds...)
	}
	return out
}

// isVolatile reports whether a patch must compile rt afresh although its
// entrypoint did not change (reusable would refuse it).
func isVolatile(rt *Route) bool {
	return !rt.ghost && (fallbackName(rt) != "" || rt.state == nil || !rt.state.settled())
}

// reusable returns the route of old that can serve ep as it is: a live
// route of the same entrypoint whose state has nothing pending (no backend
// in its grace period). Such a route is shared by the two snapshots, so a
// write recompiles and re-attaches only the routes it changed; attaching
// an unchanged route again would give the same result. Routes are
// immutable once published, so sharing them is safe.
func reusable(old *Snapshot, ep *config.Entrypoint) *Route {
	rt, ok := old.byID.Get(ep.ID)
	if !ok || rt.ghost || rt.state == nil || !sameEntrypoint(&rt.ep, ep) {
		return nil
	}
	// A route with a fallback points at a route of its snapshot
	// (resolveFallbacks), which a rebuild may replace: it is compiled
	// afresh each time, so that no published route is ever changed.
	// Such routes are few.
	if fallbackName(rt) != "" {
		return nil
	}
	if !rt.state.settled() {
		return nil
	}
	return rt
}

// earliest keeps the earliest non-zero time noted.
type earliest struct{ t time.Time }

func (e *earliest) note(t time.Time) {
	if !t.IsZero() && (e.t.IsZero() || t.Before(e.t)) {
		e.t = t
	}
}

// merge concatenates the sources in name order. An id claimed by two
// sources is a collision: the oldest entrypoint keeps it (then the source
// name decides) and the other is not routed. The collisions' diagnostics
// come back by id.
func (r *Router) merge() ([]*config.Entrypoint, map[string][]diagnostics.Diagnostic) {
	names := slices.Sorted(maps.Keys(r.sources))
	n := 0
	for _, set := range r.sources {
		n += len(set.eps)
	}
	byID := make(map[string]int, n)
	out := make([]*config.Entrypoint, 0, n)
	diags := make(map[string][]diagnostics.Diagnostic)
	for _, name := range names {
		eps := r.sources[name].eps
		for i := range eps {
			ep := &eps[i]
			j, dup := byID[ep.ID]
			if !dup {
				byID[ep.ID] = len(out)
				out = append(out, ep)
				continue
			}
			w, l := out[j], ep
			if l.Created.Before(w.Created) {
				w, l = l, w
				out[j] = w
			}
			diags[w.ID] = append(diags[w.ID],
				diagnostics.New(diagnostics.RouteCollision, sourceOf(*l), "id", l.ID, "not routed",
					"entrypoint id "+l.ID+" is already used by "+w.Source+" (older); this one is not routed", "rename one of the services"),
				diagnostics.New(diagnostics.RouteCollision, sourceOf(*w), "id", w.ID, "this entrypoint wins",
					"entrypoint id "+w.ID+" is also used by "+l.Source+"; this one (older) wins", "rename one of the services"))
		}
	}
	return out, diags
}

// attach connects a compiled route to its runtime state and applies the
// route's parameters to that state.
func (r *Router) attach(rt *Route, now time.Time) {
	rs, created := r.reg.attach(rt.ep.ID)
	rt.state = rs
	if created {
		r.initState(rs)
	}
	// One allocation for the route's backends.
	bs := make([]Backend, len(rt.ep.Backends))
	rt.backends = make([]*Backend, len(rt.ep.Backends))
	bss := make([]*BackendState, 0, len(rt.ep.Backends))
	for i, cfg := range rt.ep.Backends {
		hp := hostPort(cfg)
		st := rs.backendFor(hp)
		bs[i] = Backend{cfg: cfg, hostport: hp, weight: cfg.Weight, st: st}
		rt.backends[i] = &bs[i]
		if !slices.Contains(bss, st) {
			bss = append(bss, st)
		}
	}
	dropped, earliest := rs.pruneBackends(bss, now, r.opts.RemovedRouteGrace)
	for _, s := range dropped {
		if g := s.guard.Load(); g != nil {
			g.dropped.Store(true)
			r.forgetGuard(g)
		}
	}
	r.expiry.note(earliest)
	if cb := rt.ep.CircuitBreaker; cb != nil {
		rt.cbParams, _ = cb.Params.Validate()
	}
	r.configureGuards(rs, &rt.ep, bss)
	r.configureHealth(rs, rt)
}

// initState readies a route state the registry just created: its metric
// handles, and the attachment of the layer that asked for one. Callers
// hold r.mu.
func (r *Router) initState(rs *RouteState) {
	id, vec := rs.id, r.metrics.rejected
	rs.newRejected = func() prometheus.Counter { return vec.WithLabelValues(id) }
	if r.newAttachment != nil {
		rs.Attachment(r.newAttachment)
	}
}

// SetAttachment makes create the factory of every route state's
// Attachment (RouteState.Attachment): it is called at once for the states
// that exist and then for each new one as it is created, so that what it
// makes (the request path's metric series) exists from the moment the
// route does, before any request.
func (r *Router) SetAttachment(create func(route string) Attachment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.newAttachment = create
	for _, rs := range r.reg.all() {
		rs.Attachment(create)
	}
}

// drop forgets the state of a route whose grace has expired.
func (r *Router) drop(rs *RouteState) {
	rs.stopHealth()
	for _, g := range rs.guards() {
		g.dropped.Store(true)
		r.forgetGuard(g)
	}
	r.metrics.forget(rs.id)
	rs.release()
	r.log.Debug().Str("event", "route_state_dropped").Str("route", rs.id).Msg("route state dropped after grace period")
}

// scheduleSweep arms a timer for the earliest grace expiry, so that ghosts
// and state go away even when no source updates. Callers hold r.mu.
func (r *Router) scheduleSweep(now time.Time) {
	if r.sweep != nil {
		r.sweep.Stop()
		r.sweep = nil
	}
	if r.expiry.t.IsZero() || r.closed {
		return
	}
	next := r.expiry.t.Add(r.opts.RemovedRouteGrace).Sub(now)
	r.sweep = time.AfterFunc(max(next, 10*time.Millisecond), func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.closed {
			r.rebuild()
		}
	})
}

func (r *Router) announceRouteChanges(old, cur *Snapshot, now time.Time) {
	for _, rt := range cur.routes {
		if !rt.ghost {
			prev, _ := old.byID.Get(rt.ep.ID)
			r.announceRoute(prev, rt, now)
		}
	}
	for _, rt := range old.routes {
		if next, _ := cur.byID.Get(rt.ep.ID); !rt.ghost && (next == nil || next.ghost) {
			r.announceRoute(rt, next, now)
		}
	}
}

// announceRoute logs and publishes what became of one route id: prev is
// its route in the previous snapshot, cur in the new one (nil if none).
// A ghost counts as absent.
func (r *Router) announceRoute(prev, cur *Route, now time.Time) {
	publish := func(rt *Route, change string) {
		r.log.Info().Str("event", "route_"+change).Str("route", rt.ep.ID).Str("source", rt.ep.Source).
			Strs("hosts", rt.ep.Hosts).Str("path", rt.ep.Path).Int("backends", len(rt.ep.Backends)).
			Msg("route " + change)
		r.bus.Publish(status.Event{Type: status.EventRoute, Time: now, Data: status.RouteEvent{Route: rt.ep.ID, Source: rt.ep.Source, Change: change}})
	}
	live := func(rt *Route) bool { return rt != nil && !rt.ghost }
	switch {
	case live(cur) && !live(prev):
		publish(cur, "added")
	case live(cur) && prev != cur && !sameEntrypoint(&prev.ep, &cur.ep):
		publish(cur, "changed")
	case !live(cur) && live(prev):
		publish(prev, "removed")
	}
}

// sameEntrypoint compares two entrypoints field by field. Every rebuild
// compares every route with its previous version, so the comparison must
// stay cheap at 10,000 routes; reflect.DeepEqual of whole entrypoints is
// not (figures in docs/performance.md, "Scale"). Transform alone is
// compared with it: its groups are nil pointers on almost every route,
// which DeepEqual settles at once. A route judged the same is reused as it
// is (reusable), so a field missed here would keep a stale config:
// TestSameEntrypointSeesEveryField changes each field in turn.
func sameEntrypoint(a, b *config.Entrypoint) bool {
	if a.ID != b.ID || a.Name != b.Name || a.Source != b.Source || a.Protocol != b.Protocol ||
		a.Path != b.Path || a.PathCaseInsensitive != b.PathCaseInsensitive || a.PathRegex != b.PathRegex || a.Priority != b.Priority ||
		a.StripPrefix != b.StripPrefix || a.EarlyData != b.EarlyData || a.AddPrefix != b.AddPrefix || a.LoadBalancer != b.LoadBalancer ||
		a.BackendTimeout != b.BackendTimeout || a.Retry != b.Retry || a.MaxRequestBodyBytes != b.MaxRequestBodyBytes || !a.Created.Equal(b.Created) ||
		!slices.Equal(a.Hosts, b.Hosts) || !slices.Equal(a.Policies, b.Policies) || !slices.Equal(a.Methods, b.Methods) || !slices.Equal(a.Backends, b.Backends) ||
		a.TLS != b.TLS || !slices.Equal(a.Listeners, b.Listeners) || a.Scheme != b.Scheme || a.BackendTLS != b.BackendTLS ||
		!a.TCP.Equal(b.TCP) || a.UDP != b.UDP {
		return false
	}
	if (a.HealthCheck == nil) != (b.HealthCheck == nil) || (a.HealthCheck != nil && *a.HealthCheck != *b.HealthCheck) {
		return false
	}
	return (a.CircuitBreaker == nil) == (b.CircuitBreaker == nil) && (a.CircuitBreaker == nil || *a.CircuitBreaker == *b.CircuitBreaker) &&
		a.PassiveHealth == b.PassiveHealth && a.Access.Equal(b.Access) && reflect.DeepEqual(a.Transform, b.Transform)
}

// Tracks reports whether the router still keeps runtime state for route
// id: while the route is present, and for its grace period after it left.
func (r *Router) Tracks(id string) bool {
	_, ok := r.reg.get(id)
	return ok
}
