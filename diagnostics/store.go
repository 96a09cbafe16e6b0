package diagnostics

import (
	"sort"
	"sync"
)

// Store holds the current diagnostics of every config source. Sources replace
// their whole set on every sync; the store tells them what appeared and what
// went away so that logs and events show changes, not every resync again.
// It is safe for concurrent use.
type Store struct {
	mu      sync.RWMutex
	sources map[string][]Diagnostic
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{sources: make(map[string][]Diagnostic)}
}

// Replace sets source's diagnostics to ds and returns the diagnostics that
// were not there before (added) and those no longer there (removed). The
// comparison is by value (set semantics): duplicates in ds count once and
// order does not matter. A nil or empty ds clears the source.
func (s *Store) Replace(source string, ds []Diagnostic) (added, removed []Diagnostic) {
	next := make(map[Diagnostic]struct{}, len(ds))
	uniq := make([]Diagnostic, 0, len(ds))
	for _, d := range ds {
		if _, dup := next[d]; dup {
			continue
		}
		next[d] = struct{}{}
		uniq = append(uniq, d)
	}
	sortDiagnostics(uniq)

	s.mu.Lock()
	prev := s.sources[source]
	if len(uniq) == 0 {
		delete(s.sources, source)
	} else {
		s.sources[source] = uniq
	}
	s.mu.Unlock()

	old := make(map[Diagnostic]struct{}, len(prev))
	for _, d := range prev {
		old[d] = struct{}{}
		if _, still := next[d]; !still {
			removed = append(removed, d)
		}
	}
	for _, d := range uniq {
		if _, had := old[d]; !had {
			added = append(added, d)
		}
	}
	return added, removed
}

// All returns every current diagnostic of every source, ordered by source
// name, then provider, object, service, key and code.
func (s *Store) All() []Diagnostic {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.sources))
	n := 0
	for name, ds := range s.sources {
		names = append(names, name)
		n += len(ds)
	}
	sort.Strings(names)
	out := make([]Diagnostic, 0, n)
	for _, name := range names {
		out = append(out, s.sources[name]...)
	}
	return out
}

// Counts returns how many current diagnostics each code has (for the
// levee_diagnostics gauge).
func (s *Store) Counts() map[Code]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[Code]int)
	for _, ds := range s.sources {
		for _, d := range ds {
			out[d.Code]++
		}
	}
	return out
}

// Sort orders ds deterministically: by provider, object name, object id,
// service, key, code, value, then message.
func Sort(ds []Diagnostic) { sortDiagnostics(ds) }

func sortDiagnostics(ds []Diagnostic) {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		for _, p := range [][2]string{
			{a.Source.Provider, b.Source.Provider},
			{a.Source.ObjectName, b.Source.ObjectName},
			{a.Source.ObjectID, b.Source.ObjectID},
			{a.Source.Service, b.Source.Service},
			{a.Key, b.Key},
			{string(a.Code), string(b.Code)},
			{a.Value, b.Value},
			{a.Message, b.Message},
		} {
			if p[0] != p[1] {
				return p[0] < p[1]
			}
		}
		return false
	})
}
