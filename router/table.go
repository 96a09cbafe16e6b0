package router

import (
	"crypto/tls"
	"fmt"
	"hash/maphash"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// Route is one entrypoint compiled for matching. Routes are immutable once a
// Snapshot holds them; the mutable runtime state a route points to (balancer,
// health, breaker) lives in the state registry and outlives the Route.
type Route struct {
	ep     config.Entrypoint
	prefix string // match key: Path without a trailing slash, "/" for the root
	// folded: the prefix is matched case-insensitively (foldPath), in
	// hostTable.byFolded under foldPath(prefix).
	folded  bool
	regex   *regexp.Regexp
	methods []string
	// ghost routes belong to entrypoints that disappeared recently: they
	// answer 503 no-healthy-backend for a grace period instead of 404, and
	// lose to every live route.
	ghost bool

	state    *RouteState
	backends []*Backend // in Entrypoint.Backends order
	// cbParams are the validated breaker parameters, for classifying
	// responses without asking the breaker.
	cbParams breaker.Params
	// chain is the route's policies in stage order (nil without any).
	chain *policy.Chain
	// fallback answers what the open breaker refuses (fallback.go).
	fallback *Route
	// backendTLS is the client configuration of the backend connections
	// (scheme=https), compiled once per route; backendTLSErr says why it
	// could not be (backendtls.go).
	backendTLS    *tls.Config
	backendTLSErr error
	// compileDiags are compileRoute's and the policies' diagnostics, kept
	// for the rebuilds that reuse the route.
	compileDiags []diagnostics.Diagnostic
}

// ID returns the entrypoint id the route was built from.
func (r *Route) ID() string { return r.ep.ID }

// Entrypoint returns the entrypoint the route was built from. Its slices are
// shared with the snapshot and must not be modified.
func (r *Route) Entrypoint() config.Entrypoint { return r.ep }

// accepts applies the filters that are not part of the table's index.
func (r *Route) accepts(method, path string) bool {
	if len(r.methods) > 0 && !slices.Contains(r.methods, method) {
		return false
	}
	return r.regex == nil || r.regex.MatchString(path)
}

// before is the precedence among routes with the same host and prefix:
// live before ghost, higher priority, then the oldest, then the smaller id,
// so the winner never depends on the order sources arrived in.
func (r *Route) before(o *Route) bool {
	if r.ghost != o.ghost {
		return !r.ghost
	}
	if r.ep.Priority != o.ep.Priority {
		return r.ep.Priority > o.ep.Priority
	}
	if !r.ep.Created.Equal(o.ep.Created) {
		return r.ep.Created.Before(o.ep.Created)
	}
	return r.ep.ID < o.ep.ID
}

// hostTable indexes the routes of one host pattern by path prefix. Matching
// walks the request path from its longest segment prefix to "/", so the
// longest prefix wins and the cost is one map lookup per path segment,
// whatever the number of routes.
type hostTable struct {
	byPrefix map[string][]*Route // each slice sorted by Route.before
	// byFolded holds the routes with path.caseInsensitive, under their
	// folded prefix; nil while the host has none.
	byFolded map[string][]*Route
	// diags are the table's collisions (W018), kept with it so that a
	// snapshot sharing the table need not check it again.
	diags []diagnostics.Diagnostic
}

// match returns the route of the longest matching prefix. With
// case-insensitive routes on the host, the folded path is walked too, and
// the deeper match wins (Route.before between equals), so "/ADMIN" finds
// a case-insensitive "/admin" before an open "/".
func (t *hostTable) match(method, path string, l *Listener, on listenerFilter) *Route {
	r, depth := walkPrefixes(t.byPrefix, method, path, path, l, on)
	if t.byFolded == nil {
		return r
	}
	var buf [256]byte
	fr, fdepth := walkFolded(t.byFolded, method, foldPath(buf[:0], path), l, on)
	if fr != nil && (r == nil || fdepth > depth || fdepth == depth && fr.before(r)) {
		return fr
	}
	return r
}

// walkPrefixes looks up p, then each shorter segment prefix of it down to
// "/", in m, and returns the first route that accepts the request with
// the number of segments of its prefix. path is the request's, for the
// route's filters.
func walkPrefixes(m map[string][]*Route, method, path, p string, l *Listener, on listenerFilter) (*Route, int) {
	for {
		for _, r := range m[p] {
			if r.accepts(method, path) && (on == nil || on(r, l)) {
				return r, segments(p)
			}
		}
		if p == "/" {
			return nil, 0
		}
		i := strings.LastIndexByte(p, '/')
		if i <= 0 {
			p = "/"
		} else {
			p = p[:i]
		}
	}
}

// segments counts the segments of a prefix key: 0 for "/".
func segments(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// Snapshot is an immutable route table. Requests read the current one
// through an atomic pointer, so they never lock and never see half a config.
//
// Host precedence: an exact host beats a wildcard, a longer wildcard suffix
// beats a shorter one, and a "*" catch-all comes last; within the chosen
// host, the longest path prefix wins, then priority, then the oldest
// entrypoint, then the smallest id. A host whose routes all reject the
// request (path, method or regex) falls through to the next host pattern.
type Snapshot struct {
	exact    shardMap[*hostTable]
	wildcard shardMap[*hostTable] // keyed by the suffix after "*."
	any      *hostTable
	routes   []*Route // sorted by id; ghosts included
	byID     shardMap[*Route]
	// collided are the hosts whose table has collisions (W018), so that
	// gathering them does not walk every table.
	collided map[string]bool
	// redirects: some route redirects plain listeners to HTTPS.
	redirects bool
}

// listenerFilter keeps the routes that answer on a listener.
type listenerFilter func(r *Route, l *Listener) bool

// NewSnapshot compiles entrypoints into a route table without runtime state.
// It reports route collisions (W018) on both sides; the deterministic
// winner is the one Match returns.
func NewSnapshot(eps []config.Entrypoint) (*Snapshot, []diagnostics.Diagnostic) {
	routes := make([]*Route, 0, len(eps))
	var diags []diagnostics.Diagnostic
	var rc regexCache
	for i := range eps {
		r, d := compileRoute(&eps[i], &rc)
		diags = append(diags, d...)
		routes = append(routes, r)
	}
	s, d := buildSnapshot(routes)
	return s, append(diags, d...)
}

// regexCache keeps compiled path regexes across rebuilds: compiling is the
// only expensive step of a rebuild and the expressions rarely change.
type regexCache struct {
	m map[string]*regexp.Regexp
}

func (c *regexCache) compile(expr string) (*regexp.Regexp, error) {
	if re, ok := c.m[expr]; ok {
		return re, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("compiling path regex %q: %w", expr, err)
	}
	if c.m == nil {
		c.m = make(map[string]*regexp.Regexp)
	}
	c.m[expr] = re
	return re, nil
}

// retain drops expressions no route uses any more.
func (c *regexCache) retain(routes []*Route) {
	if len(c.m) == 0 {
		return
	}
	used := make(map[string]bool, len(c.m))
	for _, r := range routes {
		if r.ep.PathRegex != "" {
			used[regexExpr(&r.ep)] = true
		}
	}
	for k := range c.m {
		if !used[k] {
			delete(c.m, k)
		}
	}
}

// compileRoute prepares one entrypoint for matching. The validator has
// normalised it already; a regex that still does not compile (it cannot
// from the one validator, only from a Go caller that skipped it) is
// ignored as W030 says.
func compileRoute(ep *config.Entrypoint, rc *regexCache) (*Route, []diagnostics.Diagnostic) {
	r := &Route{ep: *ep, prefix: prefixKey(ep.Path), methods: ep.Methods, folded: ep.PathCaseInsensitive}
	if ep.PathRegex != "" {
		re, err := rc.compile(regexExpr(ep))
		if err != nil {
			r.ep.PathRegex = ""
			return r, []diagnostics.Diagnostic{diagnostics.New(diagnostics.BadPathRegex, sourceOf(*ep),
				"pathRegex", ep.PathRegex, "(none)", fmt.Sprintf("invalid path regex ignored: %v", err), "")}
		}
		r.regex = re
	}
	return r, nil
}

// prefixKey turns a configured path into the table's key: "/api/" and
// "/api" are the same segment-aware prefix.
func prefixKey(p string) string {
	if p == "" {
		return "/"
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	for len(p) > 1 && strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
	}
	return p
}

func sourceOf(ep config.Entrypoint) diagnostics.Source {
	return diagnostics.Source{Provider: ep.Source, ObjectID: ep.ID, ObjectName: ep.Name, Service: ep.Name}
}

// buildSnapshot indexes compiled routes and reports collisions.
func buildSnapshot(routes []*Route) (*Snapshot, []diagnostics.Diagnostic) {
	sortRoutes(routes)
	return buildSnapshotFrom(nil, routes, change{})
}

// change is what a rebuild changed against the previous snapshot: the
// routes it compiled anew (new, changed, and ghosts) and the previous
// routes whose id is gone. Every other route is the previous one, reused.
type change struct {
	fresh, gone []*Route
}

// buildSnapshotFrom indexes routes, starting from old when given: a host
// table none of whose routes changed (the same *Route in both, see
// Router.rebuild's reuse) is shared with old as it is, collisions
// included, and only the tables of the hosts that changed routes list
// are built again. A write to one entrypoint of 10,000 then costs a few
// table rebuilds and map copies instead of 10,000 table allocations.
//
// routes must be sorted by id (sortRoutes). Its cost, past the map copies,
// follows the change: the tables of changed hosts are rebuilt from their
// previous routes (less the replaced and gone ones) and the fresh routes.
func buildSnapshotFrom(old *Snapshot, routes []*Route, c change) (*Snapshot, []diagnostics.Diagnostic) {
	b := newSnapshotBuild(old, routes)
	if old != nil {
		for _, r := range c.gone {
			b.byID.delete(r.ep.ID)
		}
		for _, r := range c.fresh {
			b.byID.set(r.ep.ID, r)
		}
		replaced := make(map[string]bool, len(c.fresh)+len(c.gone))
		for _, r := range c.fresh {
			replaced[r.ep.ID] = true
		}
		for _, r := range c.gone {
			replaced[r.ep.ID] = true
		}
		for h := range changedHosts(old, c) {
			prev := old.lookup(h)
			b.forget(h)
			if prev == nil {
				continue
			}
			for _, m := range []map[string][]*Route{prev.byPrefix, prev.byFolded} {
				for _, list := range m {
					for _, r := range list {
						if !replaced[r.ep.ID] {
							b.add(h, r)
						}
					}
				}
			}
		}
		for _, r := range c.fresh {
			for _, h := range r.ep.Hosts {
				b.add(strings.ToLower(h), r)
			}
		}
	} else {
		for _, r := range routes {
			b.byID.set(r.ep.ID, r)
			for _, h := range r.ep.Hosts {
				b.add(strings.ToLower(h), r)
			}
		}
	}
	s := b.done()
	// Whether any route redirects plain HTTP to HTTPS (the proxy asks
	// before matching on a plain listener); a cheap pass, stopped at the
	// first.
	s.redirects = slices.ContainsFunc(routes, func(r *Route) bool { return r.ep.TLS.Enabled && r.ep.TLS.Redirect })
	var diags []diagnostics.Diagnostic
	for h := range s.collided {
		diags = append(diags, s.lookup(h).diags...)
	}
	diags = append(diags, resolveFallbacks(s)...)
	sortDiagnostics(diags)
	return s, diags
}

// snapshotBuild is a Snapshot being built: its indexes are edits of the
// previous snapshot's, which stays untouched.
type snapshotBuild struct {
	s               *Snapshot
	exact, wildcard *shardEdit[*hostTable]
	byID            *shardEdit[*Route]
	built           map[*hostTable]string // tables made by this build, with their host
}

func newSnapshotBuild(old *Snapshot, routes []*Route) *snapshotBuild {
	s := &Snapshot{routes: routes}
	if old == nil {
		seed := maphash.MakeSeed()
		old = &Snapshot{exact: newShardMap[*hostTable](seed), wildcard: newShardMap[*hostTable](seed), byID: newShardMap[*Route](seed)}
	}
	s.any = old.any
	s.collided = maps.Clone(old.collided)
	if s.collided == nil {
		s.collided = map[string]bool{}
	}
	return &snapshotBuild{s: s, exact: old.exact.edit(), wildcard: old.wildcard.edit(), byID: old.byID.edit(),
		built: map[*hostTable]string{}}
}

// add lists r in host's table, made new by this build if it is not yet.
func (b *snapshotBuild) add(host string, r *Route) {
	t := b.table(host)
	m, key := t.byPrefix, r.prefix
	if r.folded {
		if t.byFolded == nil {
			t.byFolded = make(map[string][]*Route)
		}
		m, key = t.byFolded, string(foldPath(nil, r.prefix))
	}
	list := m[key]
	if slices.Contains(list, r) { // the same host listed twice
		return
	}
	m[key] = append(list, r)
}

func (b *snapshotBuild) table(host string) *hostTable {
	if host == "*" {
		if b.s.any == nil || b.built[b.s.any] == "" {
			b.s.any = &hostTable{byPrefix: make(map[string][]*Route)}
			b.built[b.s.any] = host
		}
		return b.s.any
	}
	m, key := b.exact, host
	if strings.HasPrefix(host, "*.") {
		m, key = b.wildcard, host[2:]
	}
	t, _ := m.get(key)
	if t == nil || b.built[t] == "" {
		t = &hostTable{byPrefix: make(map[string][]*Route)}
		m.set(key, t)
		b.built[t] = host
	}
	return t
}

// forget drops host's table (a previous snapshot's) from the build.
func (b *snapshotBuild) forget(host string) {
	delete(b.s.collided, host)
	switch {
	case host == "*":
		b.s.any = nil
	case strings.HasPrefix(host, "*."):
		b.wildcard.delete(host[2:])
	default:
		b.exact.delete(host)
	}
}

// done sorts and checks the tables this build made and returns the
// snapshot.
func (b *snapshotBuild) done() *Snapshot {
	for t, h := range b.built {
		t.sortAndCheck(h)
		if len(t.diags) > 0 {
			b.s.collided[h] = true
		} else {
			delete(b.s.collided, h)
		}
	}
	b.s.exact, b.s.wildcard, b.s.byID = b.exact.done(), b.wildcard.done(), b.byID.done()
	return b.s
}

// changedHosts are the hosts (lower case) listed by a fresh route, by the
// previous route it replaces, or by a route that is gone.
func changedHosts(old *Snapshot, c change) map[string]bool {
	dirty := map[string]bool{}
	note := func(r *Route) {
		for _, h := range r.ep.Hosts {
			dirty[strings.ToLower(h)] = true
		}
	}
	for _, r := range c.fresh {
		note(r)
		if prev, _ := old.byID.get(r.ep.ID); prev != nil {
			note(prev)
		}
	}
	for _, r := range c.gone {
		note(r)
	}
	return dirty
}

// forget removes host's table, to be built again.
// sortRoutes orders routes by id, as a Snapshot keeps them.
func sortRoutes(routes []*Route) {
	slices.SortFunc(routes, func(a, b *Route) int { return strings.Compare(a.ep.ID, b.ep.ID) })
}

// lookup returns host's table (host in lower case, "*" or "*.suffix"), or
// nil.
func (s *Snapshot) lookup(host string) *hostTable {
	switch {
	case host == "*":
		return s.any
	case strings.HasPrefix(host, "*."):
		t, _ := s.wildcard.get(host[2:])
		return t
	default:
		t, _ := s.exact.get(host)
		return t
	}
}

// sortAndCheck orders each prefix's routes by precedence and records the
// collisions among them.
func (t *hostTable) sortAndCheck(host string) {
	t.diags = nil
	for _, m := range []map[string][]*Route{t.byPrefix, t.byFolded} {
		for prefix, list := range m {
			if len(list) > 1 {
				slices.SortFunc(list, func(a, b *Route) int {
					if a.before(b) {
						return -1
					}
					if b.before(a) {
						return 1
					}
					return 0
				})
				t.diags = append(t.diags, collisions(host, prefix, list)...)
			}
		}
	}
}

// collisions reports W018 on both sides of every pair of live routes that
// claim the same host and prefix with the same filters: only the first
// (the winner by Route.before) can ever be matched.
func collisions(host, prefix string, list []*Route) []diagnostics.Diagnostic {
	var out []diagnostics.Diagnostic
	for i, w := range list {
		if w.ghost {
			continue
		}
		for _, l := range list[i+1:] {
			if l.ghost || l.ep.ID == w.ep.ID || !sameFilters(w, l) {
				continue
			}
			where := host + prefix
			out = append(out,
				diagnostics.New(diagnostics.RouteCollision, sourceOf(w.ep), "host", where, "this route wins",
					fmt.Sprintf("%s is also claimed by %s %q; this route wins (%s)", where, l.ep.Source, l.ep.ID, whyWins(w, l)),
					"give the routes different hosts or paths, or set priority explicitly"),
				diagnostics.New(diagnostics.RouteCollision, sourceOf(l.ep), "host", where, fmt.Sprintf("requests go to %s %q", w.ep.Source, w.ep.ID),
					fmt.Sprintf("%s is also claimed by %s %q, which wins (%s); this route gets no traffic there", where, w.ep.Source, w.ep.ID, whyWins(w, l)),
					"give the routes different hosts or paths, or raise this route's priority"))
		}
	}
	return out
}

func whyWins(w, l *Route) string {
	switch {
	case w.ep.Priority != l.ep.Priority:
		return "higher priority"
	case !w.ep.Created.Equal(l.ep.Created):
		return "older"
	default:
		return "smaller id"
	}
}

func sameFilters(a, b *Route) bool {
	if a.ep.PathRegex != b.ep.PathRegex || len(a.methods) != len(b.methods) {
		return false
	}
	// Routes on different listeners (a plain and a TLS route for one
	// host, the usual pair) do not compete.
	if a.ep.TLS.Enabled != b.ep.TLS.Enabled || !slices.Equal(a.ep.Listeners, b.ep.Listeners) {
		return false
	}
	for _, m := range a.methods {
		if !slices.Contains(b.methods, m) {
			return false
		}
	}
	return true
}

// Match returns the route for a request, or nil. host may carry a port and
// any case; path is the decoded request path. It does not allocate for host
// names up to 256 bytes.
func (s *Snapshot) Match(method, host, path string) *Route {
	return s.matchWith(method, host, path, nil, nil)
}

// matchWith is Match among the routes that on accepts on l (all when on is
// nil).
func (s *Snapshot) matchWith(method, host, path string, l *Listener, on listenerFilter) *Route {
	var buf [256]byte
	return s.match(method, config.AppendRequestHost(buf[:0], host), path, l, on)
}

// match looks host up with m[string(b)] expressions, which the compiler
// performs without converting (allocating) the byte slice.
func (s *Snapshot) match(method string, host []byte, path string, l *Listener, on listenerFilter) *Route {
	if t, _ := s.exact.getBytes(host); t != nil {
		if r := t.match(method, path, l, on); r != nil {
			return r
		}
	}
	if s.wildcard.len() > 0 {
		// Walk the suffixes after each dot, longest first: the most
		// specific wildcard wins.
		for i := 0; i < len(host); i++ {
			if host[i] != '.' {
				continue
			}
			if t, _ := s.wildcard.getBytes(host[i+1:]); t != nil {
				if r := t.match(method, path, l, on); r != nil {
					return r
				}
			}
		}
	}
	if s.any != nil {
		return s.any.match(method, path, l, on)
	}
	return nil
}

// Route returns the route with the given entrypoint id.
func (s *Snapshot) Route(id string) (*Route, bool) {
	return s.byID.get(id)
}

// Routes returns every route, ghosts included, sorted by id.
func (s *Snapshot) Routes() []*Route { return slices.Clone(s.routes) }

func sortDiagnostics(ds []diagnostics.Diagnostic) {
	slices.SortStableFunc(ds, func(a, b diagnostics.Diagnostic) int {
		if c := strings.Compare(string(a.Code), string(b.Code)); c != 0 {
			return c
		}
		if c := strings.Compare(a.Source.Provider, b.Source.Provider); c != 0 {
			return c
		}
		if c := strings.Compare(a.Source.ObjectID, b.Source.ObjectID); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
}
