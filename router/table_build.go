package router

// Building a Snapshot: from scratch (NewSnapshot) or from the previous one,
// rebuilding only the host tables a change touched.

import (
	"hash/maphash"
	"maps"
	"slices"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/shardmap"
)

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
			b.byID.Delete(r.ep.ID)
		}
		for _, r := range c.fresh {
			b.byID.Set(r.ep.ID, r)
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
			b.byID.Set(r.ep.ID, r)
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
	s.tcp = indexTCP(routes)
	s.udp = indexUDP(routes)
	var diags []diagnostics.Diagnostic
	for h := range s.collided {
		diags = append(diags, s.lookup(h).diags...)
	}
	diags = append(diags, l4Collisions(s.tcp, s.udp)...)
	diags = append(diags, resolveFallbacks(s)...)
	diags = append(diags, resolveReferences(s)...)
	sortDiagnostics(diags)
	return s, diags
}

// snapshotBuild is a Snapshot being built: its indexes are edits of the
// previous snapshot's, which stays untouched.
type snapshotBuild struct {
	s               *Snapshot
	exact, wildcard *shardmap.Edit[*hostTable]
	byID            *shardmap.Edit[*Route]
	built           map[*hostTable]string // tables made by this build, with their host
}

func newSnapshotBuild(old *Snapshot, routes []*Route) *snapshotBuild {
	s := &Snapshot{routes: routes}
	if old == nil {
		seed := maphash.MakeSeed()
		old = &Snapshot{exact: shardmap.New[*hostTable](seed), wildcard: shardmap.New[*hostTable](seed), byID: shardmap.New[*Route](seed)}
	}
	s.any = old.any
	s.collided = maps.Clone(old.collided)
	if s.collided == nil {
		s.collided = map[string]bool{}
	}
	return &snapshotBuild{s: s, exact: old.exact.Edit(), wildcard: old.wildcard.Edit(), byID: old.byID.Edit(),
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
	t, _ := m.Get(key)
	if t == nil || b.built[t] == "" {
		t = &hostTable{byPrefix: make(map[string][]*Route)}
		m.Set(key, t)
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
		b.wildcard.Delete(host[2:])
	default:
		b.exact.Delete(host)
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
	b.s.exact, b.s.wildcard, b.s.byID = b.exact.Done(), b.wildcard.Done(), b.byID.Done()
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
		if prev, _ := old.byID.Get(r.ep.ID); prev != nil {
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
