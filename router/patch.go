package router

import (
	"slices"
	"strings"

	"github.com/levee-proxy/levee/router/config"
)

// patchMax is the most ids a patch rebuilds one by one; a larger change
// (a bulk write) takes a full rebuild, which costs the same then.
const patchMax = 256

// sourceSet is one source's entrypoints as the router holds them.
type sourceSet struct {
	eps []config.Entrypoint
	// index maps an id to its position in eps; nil until a patch needs
	// it (sources that only Update never build it).
	index map[string]int
}

func (s *sourceSet) indexed() map[string]int {
	if s.index == nil {
		s.index = make(map[string]int, len(s.eps))
		for i := range s.eps {
			if _, dup := s.index[s.eps[i].ID]; !dup {
				s.index[s.eps[i].ID] = i
			}
		}
	}
	return s.index
}

// put adds ep or replaces the entrypoint with its id.
func (s *sourceSet) put(ep config.Entrypoint) {
	idx := s.indexed()
	if i, ok := idx[ep.ID]; ok {
		s.eps[i] = ep
		return
	}
	idx[ep.ID] = len(s.eps)
	s.eps = append(s.eps, ep)
}

// remove deletes id, moving the last entrypoint into its place (the order
// within a source decides nothing between distinct ids).
func (s *sourceSet) remove(id string) {
	idx := s.indexed()
	i, ok := idx[id]
	if !ok {
		return
	}
	last := len(s.eps) - 1
	if i != last {
		s.eps[i] = s.eps[last]
		idx[s.eps[i].ID] = i
	}
	s.eps[last] = config.Entrypoint{}
	s.eps = s.eps[:last]
	delete(idx, id)
}

// Patch changes one source's entrypoints by id (config.SourcePatch) and
// rebuilds only the routes of those ids, plus the few that every rebuild
// compiles afresh (routes with a fallback, routes with a backend in its
// grace period): a write costs about the same at 10 routes as at 10,000.
// Whatever a patch cannot decide from its ids alone (an id claimed by two
// sources, a ghost, a route that would become one, a large change) takes
// the full rebuild that Update does; the result is the same either way
// (TestPatchEqualsUpdate).
func (r *Router) Patch(p config.SourcePatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.sources[p.Source]
	if set == nil {
		set = &sourceSet{}
		r.sources[p.Source] = set
	}
	ids := make([]string, 0, len(p.Put)+len(p.Delete))
	for _, id := range p.Delete {
		set.remove(id)
		ids = append(ids, id)
	}
	for _, ep := range p.Put {
		if ep.Source == "" {
			ep.Source = p.Source
		}
		set.put(ep)
		ids = append(ids, ep.ID)
	}
	if len(set.eps) == 0 {
		delete(r.sources, p.Source)
	}
	r.replaceDiagnostics(p.Source, p.Diagnostics)
	if r.usesPolicies() {
		// A route's policies may come from any source: the full
		// rebuild resolves every route against them.
		r.rebuild()
		return
	}
	r.rebuildIDs(ids)
}

// rebuildIDs rebuilds the routes of ids (and the volatile ones) on top of
// the current snapshot, or falls back to a full rebuild. Callers hold r.mu.
func (r *Router) rebuildIDs(ids []string) {
	old := r.snap.Load()
	work, ok := r.patchable(old, ids)
	if !ok {
		r.rebuild()
		return
	}
	r.patched++
	now := r.clock.Now()
	var fresh, gone []*Route
	var goneIDs []string
	for _, id := range work {
		delete(r.routeDiags, id)
		delete(r.volatile, id)
		ep := r.entrypoint(id)
		if ep == nil {
			if prev, _ := old.byID.Get(id); prev != nil {
				gone = append(gone, prev)
			}
			goneIDs = append(goneIDs, id)
			continue
		}
		if rt := reusable(old, ep); rt != nil {
			r.noteRouteDiags(id, rt.compileDiags)
			continue
		}
		rt := r.compile(ep, now)
		fresh = append(fresh, rt)
		if isVolatile(rt) {
			r.volatile[id] = true
		}
	}
	routes := patchRoutes(old.routes, fresh, gone)
	r.regexes.retain(routes)
	snap, tableDiags := buildSnapshotFrom(old, routes, change{fresh: fresh, gone: gone})
	r.snap.Store(snap)

	for _, id := range work {
		prev, _ := old.byID.Get(id)
		cur, _ := snap.byID.Get(id)
		r.announceRoute(prev, cur, now)
	}
	r.replaceDiagnostics(routerSource, r.routerDiagnostics(tableDiags))

	expired, earliest := r.reg.markAbsentIDs(goneIDs, now, r.opts.RemovedRouteGrace)
	for _, rs := range expired {
		r.drop(rs)
	}
	r.expiry.note(earliest)
	r.scheduleSweep(now)
}

// patchable returns the ids a patch of ids rebuilds (ids and the volatile
// routes, each once, sorted), or false when only a full rebuild can
// decide them. Callers hold r.mu.
func (r *Router) patchable(old *Snapshot, ids []string) ([]string, bool) {
	if len(ids) > patchMax {
		return nil, false
	}
	work := make([]string, 0, len(ids)+len(r.volatile))
	work = append(work, ids...)
	for id := range r.volatile {
		work = append(work, id)
	}
	slices.Sort(work)
	work = slices.Compact(work)
	for _, id := range work {
		if _, ok := r.ghosts[id]; ok {
			return nil, false
		}
		prev, _ := old.byID.Get(id)
		if prev != nil && prev.ghost {
			return nil, false
		}
		n := r.claims(id)
		if n > 1 {
			return nil, false // a collision: merge decides it
		}
		if n == 0 && prev != nil && prev.ep.Source != config.SourceAPI {
			return nil, false // the route becomes a ghost
		}
	}
	return work, true
}

// claims counts the sources' entrypoints with id.
func (r *Router) claims(id string) int {
	n := 0
	for _, set := range r.sources {
		if _, ok := set.indexed()[id]; ok {
			n++
		}
	}
	return n
}

// entrypoint returns the one entrypoint with id, or nil.
func (r *Router) entrypoint(id string) *config.Entrypoint {
	for _, set := range r.sources {
		if i, ok := set.indexed()[id]; ok {
			return &set.eps[i]
		}
	}
	return nil
}

// patchRoutes returns old (sorted by id) with the fresh routes in place of
// the routes with their ids, or inserted, and without the gone routes.
func patchRoutes(old, fresh, gone []*Route) []*Route {
	out := slices.Clone(old)
	find := func(id string) (int, bool) {
		return slices.BinarySearchFunc(out, id, func(rt *Route, id string) int { return strings.Compare(rt.ep.ID, id) })
	}
	for _, rt := range gone {
		if i, ok := find(rt.ep.ID); ok {
			out = slices.Delete(out, i, i+1)
		}
	}
	for _, rt := range fresh {
		if i, ok := find(rt.ep.ID); ok {
			out[i] = rt
		} else {
			out = slices.Insert(out, i, rt)
		}
	}
	return out
}
