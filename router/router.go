package router

import (
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/httpx/client"
)

// Clock tells the time. Breakers, ejection and grace periods read it, so
// tests can drive them without sleeping.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Options are the Router's collaborators and data-plane tunables. Zero
// values mean the documented defaults.
type Options struct {
	// Logger receives breaker transitions, route and diagnostic changes,
	// health changes and (when AccessLog is set) one line per request.
	Logger zerolog.Logger
	// Registerer receives the router's metrics; nil keeps them in a
	// private registry (nothing global is touched).
	Registerer prometheus.Registerer
	// Clock drives breakers, ejection and grace periods; nil = real time.
	Clock Clock
	// Diagnostics is the shared diagnostics store; nil = a private one.
	Diagnostics *diagnostics.Store
	// AccessLog logs one line per request.
	AccessLog bool
	// TrustedProxies are the peers (load balancers in front of Levee)
	// whose X-Forwarded-For, -Proto and -Host are kept, For appended to.
	// From every other peer those headers are replaced.
	TrustedProxies []netip.Prefix

	// DialTimeout bounds connecting to a backend (default 5s).
	DialTimeout time.Duration
	// IdleConnTimeout closes pooled backend connections idle this long
	// (default 90s).
	IdleConnTimeout time.Duration
	// MaxIdleConnsPerHost is the keep-alive pool size per backend
	// (default 256).
	MaxIdleConnsPerHost int
	// StandardTransport sends backend requests through net/http.Transport
	// instead of Levee's lean HTTP/1.1 client (router/httpx/client): slower,
	// kept as a fallback.
	StandardTransport bool
	// PlainSocketIO makes Levee's backend client read and write through
	// net.Conn instead of raw system calls (sockio.Socket); for
	// measurement.
	PlainSocketIO bool

	// RequestBodyTimeout is the longest wait for the next bytes of a
	// client's request body (default 30s); a client that stalls longer is
	// answered 408 and never counts against the backend.
	RequestBodyTimeout time.Duration
	// RequestBodyMinRate, when positive, is the average rate in bytes per
	// second that a request body must keep once RequestBodyTimeout has
	// passed since it started (a client trickling a byte just inside every
	// timeout would otherwise hold its connection for ever).
	RequestBodyMinRate int
	// ResponseWriteTimeout is the longest wait for a client to take the
	// next bytes of a response (default 60s); then the connection closes.
	ResponseWriteTimeout time.Duration
	// BackendBodyTimeout is the longest wait for the next bytes of a
	// backend's response body (default 60s); then the response is cut
	// short and the backend connection closed.
	BackendBodyTimeout time.Duration
	// TunnelIdleTimeout closes an upgraded connection (WebSocket) on which
	// no byte moved in either direction for this long (default 5m).
	TunnelIdleTimeout time.Duration
	// UpgradeProtocols are the protocols a client may switch to through
	// the proxy (Upgrade header, lower case; default websocket). A request
	// to upgrade to anything else is forwarded as a plain request.
	UpgradeProtocols []string

	// RemovedRouteGrace is how long the state of a removed route (and of a
	// removed backend address) is kept, and how long a route that vanished
	// from a non-API source keeps answering 503 no-healthy-backend before
	// it 404s (default 30s).
	RemovedRouteGrace time.Duration

	// EjectAfter consecutive failures eject a backend (default 5; negative
	// disables passive ejection).
	EjectAfter int
	// EjectTime is the first ejection's length, doubled on each consecutive
	// ejection (default 10s) up to EjectMaxTime (default 5m).
	EjectTime    time.Duration
	EjectMaxTime time.Duration
	// EjectMaxShare caps the share of a route's backends ejected at once
	// (default 0.5; at least one backend may always be ejected).
	EjectMaxShare float64

	// RetryBudget is the share of extra attempts allowed over
	// RetryBudgetWindow (default 0.2), with at least RetryBudgetMin
	// retries per window (default 10) so that quiet routes can retry.
	RetryBudget       float64
	RetryBudgetWindow time.Duration
	RetryBudgetMin    int
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Diagnostics == nil {
		o.Diagnostics = diagnostics.NewStore()
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.IdleConnTimeout <= 0 {
		o.IdleConnTimeout = 90 * time.Second
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = 256
	}
	if o.RequestBodyTimeout <= 0 {
		o.RequestBodyTimeout = 30 * time.Second
	}
	if o.ResponseWriteTimeout <= 0 {
		o.ResponseWriteTimeout = 60 * time.Second
	}
	if o.BackendBodyTimeout <= 0 {
		o.BackendBodyTimeout = 60 * time.Second
	}
	if o.TunnelIdleTimeout <= 0 {
		o.TunnelIdleTimeout = 5 * time.Minute
	}
	if o.UpgradeProtocols == nil {
		o.UpgradeProtocols = []string{"websocket"}
	}
	if o.RemovedRouteGrace <= 0 {
		o.RemovedRouteGrace = 30 * time.Second
	}
	if o.EjectAfter == 0 {
		o.EjectAfter = 5
	}
	if o.EjectTime <= 0 {
		o.EjectTime = 10 * time.Second
	}
	if o.EjectMaxTime < o.EjectTime {
		o.EjectMaxTime = max(5*time.Minute, o.EjectTime)
	}
	if o.EjectMaxShare <= 0 || o.EjectMaxShare > 1 {
		o.EjectMaxShare = 0.5
	}
	if o.RetryBudget <= 0 {
		o.RetryBudget = 0.2
	}
	if o.RetryBudgetWindow <= 0 {
		o.RetryBudgetWindow = 10 * time.Second
	}
	if o.RetryBudgetMin <= 0 {
		o.RetryBudgetMin = 10
	}
	return o
}

// routerSource is the diagnostics store key of diagnostics the router
// itself makes (collisions).
const routerSource = "router"

// Router is Levee's data plane: it merges the sources' entrypoints into
// snapshots, keeps runtime state across them, and proxies requests.
type Router struct {
	opts    Options
	log     zerolog.Logger
	clock   Clock
	store   *diagnostics.Store
	metrics *metrics
	bus     *bus
	reg     *registry

	snap atomic.Pointer[Snapshot]

	transports transports
	buffers    sync.Pool // *[]byte, for copying bodies
	retryAfter [][]string

	mu      sync.Mutex // serialises Update and sweeps
	sources map[string][]config.Entrypoint
	ghosts  map[string]ghost
	regexes regexCache
	sweep   *time.Timer
	expiry  earliest // earliest removal stamp seen by the current rebuild
	closed  bool
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
		opts:    opts,
		log:     opts.Logger,
		clock:   opts.Clock,
		store:   opts.Diagnostics,
		metrics: newMetrics(),
		reg:     newRegistry(),
		sources: make(map[string][]config.Entrypoint),
		ghosts:  make(map[string]ghost),
	}
	r.bus = newBus(r.metrics.eventsDropped.Inc)
	r.buffers.New = func() any { b := make([]byte, 32<<10); return &b }
	r.retryAfter = make([][]string, 601)
	for i := range r.retryAfter {
		r.retryAfter[i] = []string{strconv.Itoa(i)}
	}
	r.transports.init(opts)
	if err := r.metrics.register(opts.Registerer, stateCollector{r}); err != nil {
		r.log.Error().Err(err).Msg("router metrics are not exported")
	}
	empty, _ := buildSnapshot(nil)
	r.snap.Store(empty)
	return r
}

// Close stops health checks and timers and closes idle backend
// connections. The router still answers requests afterwards.
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
	r.transports.close()
}

// Snapshot returns the route table requests currently use.
func (r *Router) Snapshot() *Snapshot { return r.snap.Load() }

// Subscribe returns a channel of events with room for buffer of them and a
// function that ends the subscription (and closes the channel). Events a
// full channel cannot take are dropped and counted, never waited for.
func (r *Router) Subscribe(buffer int) (<-chan Event, func()) { return r.bus.subscribe(buffer) }

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
		r.sources[u.Source] = eps
	}
	r.replaceDiagnostics(u.Source, u.Diagnostics)
	r.rebuild()
}

// replaceDiagnostics stores a source's diagnostics and announces what
// changed (not what is merely still there).
func (r *Router) replaceDiagnostics(source string, ds []diagnostics.Diagnostic) {
	added, removed := r.store.Replace(source, ds)
	now := r.clock.Now()
	for _, d := range added {
		logDiagnostic(r.log, d)
		r.bus.publish(Event{Type: EventDiagnostic, Time: now, Data: DiagnosticEvent{Change: "added", Diagnostic: d}})
	}
	for _, d := range removed {
		r.log.Info().Str("event", "diagnostic_resolved").Str("code", string(d.Code)).
			Str("provider", d.Source.Provider).Str("object", d.Source.ObjectName).Str("key", d.Key).
			Msg("diagnostic resolved: " + d.Message)
		r.bus.publish(Event{Type: EventDiagnostic, Time: now, Data: DiagnosticEvent{Change: "removed", Diagnostic: d}})
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
	eps, diags := r.merge()
	r.expiry = earliest{}

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
	for _, ep := range eps {
		rt, d := compileRoute(ep, &r.regexes)
		diags = append(diags, d...)
		r.attach(rt, now)
		routes = append(routes, rt)
	}
	for _, g := range r.ghosts {
		rt, _ := compileRoute(&g.ep, &r.regexes)
		rt.ghost = true
		rs, created := r.reg.attach(rt.ep.ID)
		if created {
			rs.series = r.metrics.series(rt.ep.ID)
		}
		rs.mu.Lock()
		rs.removedAt = g.removedAt
		rs.mu.Unlock()
		rt.state = rs
		present[rt.ep.ID] = true // kept alive by the ghost
		routes = append(routes, rt)
	}
	r.regexes.retain(routes)
	snap, coll := buildSnapshot(routes)
	diags = append(diags, coll...)
	r.snap.Store(snap)

	r.announceRouteChanges(old, snap, now)
	r.replaceDiagnostics(routerSource, diags)

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

// earliest keeps the earliest non-zero time noted.
type earliest struct{ t time.Time }

func (e *earliest) note(t time.Time) {
	if !t.IsZero() && (e.t.IsZero() || t.Before(e.t)) {
		e.t = t
	}
}

// merge concatenates the sources in name order. An id claimed by two
// sources is a collision: the oldest entrypoint keeps it (then the source
// name decides) and the other is not routed.
func (r *Router) merge() ([]*config.Entrypoint, []diagnostics.Diagnostic) {
	names := slices.Sorted(maps.Keys(r.sources))
	n := 0
	for _, eps := range r.sources {
		n += len(eps)
	}
	byID := make(map[string]int, n)
	out := make([]*config.Entrypoint, 0, n)
	var diags []diagnostics.Diagnostic
	for _, name := range names {
		eps := r.sources[name]
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
			diags = append(diags,
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
		rs.series = r.metrics.series(rt.ep.ID)
	}
	// One allocation for the route's backends.
	bs := make([]backend, len(rt.ep.Backends))
	rt.backends = make([]*backend, len(rt.ep.Backends))
	bss := make([]*backendState, 0, len(rt.ep.Backends))
	for i, cfg := range rt.ep.Backends {
		hp := hostPort(cfg)
		st := rs.backendState(hp)
		bs[i] = backend{cfg: cfg, hostport: hp, weight: cfg.Weight, st: st}
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
	rt.balancer = rs.balancerFor(rt.ep.LoadBalancer)
	rt.transport = r.transports.get(rt.ep.BackendTimeout)
	r.configureGuards(rs, &rt.ep, bss)
	r.configureHealth(rs, rt)
}

// drop forgets the state of a route whose grace has expired.
func (r *Router) drop(rs *routeState) {
	rs.stopHealth()
	for _, g := range rs.guards() {
		g.dropped.Store(true)
		r.forgetGuard(g)
	}
	r.metrics.forget(rs.id)
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
	publish := func(rt *Route, change string) {
		r.log.Info().Str("event", "route_"+change).Str("route", rt.ep.ID).Str("source", rt.ep.Source).
			Strs("hosts", rt.ep.Hosts).Str("path", rt.ep.Path).Int("backends", len(rt.ep.Backends)).
			Msg("route " + change)
		r.bus.publish(Event{Type: EventRoute, Time: now, Data: RouteEvent{Route: rt.ep.ID, Source: rt.ep.Source, Change: change}})
	}
	for _, rt := range cur.routes {
		if rt.ghost {
			continue
		}
		prev, ok := old.byID[rt.ep.ID]
		switch {
		case !ok || prev.ghost:
			publish(rt, "added")
		case !sameEntrypoint(&prev.ep, &rt.ep):
			publish(rt, "changed")
		}
	}
	for _, rt := range old.routes {
		if rt.ghost {
			continue
		}
		if now, ok := cur.byID[rt.ep.ID]; !ok || now.ghost {
			publish(rt, "removed")
		}
	}
}

// sameEntrypoint compares two entrypoints field by field (reflect.DeepEqual
// is several times slower on 10,000 routes).
func sameEntrypoint(a, b *config.Entrypoint) bool {
	if a.ID != b.ID || a.Name != b.Name || a.Source != b.Source || a.Protocol != b.Protocol ||
		a.Path != b.Path || a.PathRegex != b.PathRegex || a.Priority != b.Priority ||
		a.StripPrefix != b.StripPrefix || a.AddPrefix != b.AddPrefix || a.LoadBalancer != b.LoadBalancer ||
		a.BackendTimeout != b.BackendTimeout || a.Retry != b.Retry || !a.Created.Equal(b.Created) ||
		!slices.Equal(a.Hosts, b.Hosts) || !slices.Equal(a.Methods, b.Methods) || !slices.Equal(a.Backends, b.Backends) {
		return false
	}
	if (a.HealthCheck == nil) != (b.HealthCheck == nil) || (a.HealthCheck != nil && *a.HealthCheck != *b.HealthCheck) {
		return false
	}
	return (a.CircuitBreaker == nil) == (b.CircuitBreaker == nil) && (a.CircuitBreaker == nil || *a.CircuitBreaker == *b.CircuitBreaker)
}

// Diagnostics returns every current diagnostic: the sources' and the
// router's own (collisions), in the store's deterministic order.
func (r *Router) Diagnostics() []diagnostics.Diagnostic { return r.store.All() }

// BackendStatus is one backend with its runtime health.
type BackendStatus struct {
	config.Backend
	// Up is the active health check's verdict (true without checks).
	Up bool `json:"up"`
	// Ejected is true while passive ejection holds the backend out.
	Ejected      bool       `json:"ejected"`
	EjectedUntil *time.Time `json:"ejected_until,omitempty"`
	InFlight     int64      `json:"in_flight"`
}

// EntrypointStatus is an entrypoint as routed, with its runtime state.
type EntrypointStatus struct {
	Entrypoint config.Entrypoint `json:"entrypoint"`
	Backends   []BackendStatus   `json:"backends"`
	// Breakers holds the route's breaker, or one per backend for
	// scope=backend; empty without a circuit breaker.
	Breakers []BreakerStatus `json:"breakers,omitempty"`
	// Diagnostics are the current diagnostics about this entrypoint.
	Diagnostics []diagnostics.Diagnostic `json:"diagnostics,omitempty"`
	// Removed is true for an entrypoint that left its source and still
	// answers 503 for the grace period.
	Removed bool `json:"removed,omitempty"`
}

// Entrypoints returns every routed entrypoint (merged across sources) with
// its runtime state, ordered by id.
func (r *Router) Entrypoints() []EntrypointStatus {
	snap := r.snap.Load()
	all := r.store.All()
	out := make([]EntrypointStatus, 0, len(snap.routes))
	for _, rt := range snap.routes {
		out = append(out, r.status(rt, all))
	}
	return out
}

// Entrypoint returns one entrypoint's status by id.
func (r *Router) Entrypoint(id string) (EntrypointStatus, bool) {
	rt, ok := r.snap.Load().Route(id)
	if !ok {
		return EntrypointStatus{}, false
	}
	return r.status(rt, r.store.All()), true
}

func (r *Router) status(rt *Route, all []diagnostics.Diagnostic) EntrypointStatus {
	now := r.clock.Now()
	es := EntrypointStatus{Entrypoint: rt.ep, Removed: rt.ghost, Backends: make([]BackendStatus, 0, len(rt.backends))}
	for _, b := range rt.backends {
		bs := BackendStatus{Backend: b.cfg, Up: !b.st.down.Load(), InFlight: b.st.inflight.Load()}
		if u := b.st.ejectedUntil.Load(); u != 0 && now.UnixNano() < u {
			bs.Ejected = true
			t := time.Unix(0, u)
			bs.EjectedUntil = &t
		}
		es.Backends = append(es.Backends, bs)
	}
	for _, g := range rt.state.guards() {
		es.Breakers = append(es.Breakers, statusOf(g))
	}
	for _, d := range all {
		if concerns(d, rt.ep) {
			es.Diagnostics = append(es.Diagnostics, d)
		}
	}
	return es
}

// concerns reports whether a diagnostic is about an entrypoint: same
// provider and the entrypoint's id or name as object or service.
func concerns(d diagnostics.Diagnostic, ep config.Entrypoint) bool {
	if d.Source.Provider != ep.Source {
		return false
	}
	s := d.Source
	return s.ObjectID == ep.ID || s.Service == ep.ID || (s.Service == "" && s.ObjectName == ep.Name) || s.Service == ep.Name
}

// transports pools backend connections. Routes share one transport per
// distinct backend timeout: the timeout is a property of the transport (a
// read deadline for the lean client, ResponseHeaderTimeout for
// net/http's), so bounding the wait for headers costs no per-request timer
// or context.
type transports struct {
	mu   sync.Mutex
	opts Options
	m    map[time.Duration]backendTransport
	std  map[time.Duration]*http.Transport
}

// backendTransport is what an attempt needs from a backend client: a
// round trip that hands interim (1xx) answers to an informer.
type backendTransport interface {
	RoundTripInformational(req *http.Request, inf client.Informer) (*http.Response, error)
	CloseIdleConnections()
}

func (t *transports) init(o Options) {
	t.opts = o
	t.m = make(map[time.Duration]backendTransport)
	t.std = make(map[time.Duration]*http.Transport)
}

// get returns the backend transport for a header timeout (0 = none).
func (t *transports) get(timeout time.Duration) backendTransport {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr := t.m[timeout]; tr != nil {
		return tr
	}
	var tr backendTransport
	if t.opts.StandardTransport {
		tr = &client.Standard{Transport: t.standardLocked(timeout), BodyTimeout: t.opts.BackendBodyTimeout}
	} else {
		o := t.opts
		tr = client.New(client.Options{
			DialTimeout: o.DialTimeout, HeaderTimeout: timeout, BodyTimeout: o.BackendBodyTimeout,
			IdleConnTimeout: o.IdleConnTimeout, MaxIdleConnsPerHost: o.MaxIdleConnsPerHost, PlainSocketIO: o.PlainSocketIO,
		})
	}
	t.m[timeout] = tr
	return tr
}

// standard returns a net/http transport (health checks use one).
func (t *transports) standard(timeout time.Duration) *http.Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.standardLocked(timeout)
}

func (t *transports) standardLocked(timeout time.Duration) *http.Transport {
	if tr := t.std[timeout]; tr != nil {
		return tr
	}
	d := &net.Dialer{Timeout: t.opts.DialTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                  nil, // never route backend traffic through HTTP_PROXY
		DialContext:            d.DialContext,
		MaxIdleConns:           0, // bounded per host instead
		MaxIdleConnsPerHost:    t.opts.MaxIdleConnsPerHost,
		IdleConnTimeout:        t.opts.IdleConnTimeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: client.MaxResponseHeaderBytes, // as Levee's own client
		ExpectContinueTimeout:  time.Second,
		// The client's Accept-Encoding passes through; the proxy must not
		// add its own and decompress behind the client's back.
		DisableCompression: true,
		WriteBufferSize:    32 << 10,
		ReadBufferSize:     32 << 10,
	}
	t.std[timeout] = tr
	return tr
}

// close stops the lean transports' reapers and closes idle connections.
func (t *transports) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tr := range t.m {
		if h, ok := tr.(*client.Transport); ok {
			h.Shutdown()
		}
		tr.CloseIdleConnections()
	}
	for _, tr := range t.std {
		tr.CloseIdleConnections()
	}
}
