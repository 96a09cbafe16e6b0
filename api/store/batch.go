package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// Batches: many changes in one durable write, all or nothing.

// Kinds of Change.
const (
	OpCreate  = "create"
	OpReplace = "replace"
	OpDelete  = "delete"
)

// ErrDuplicate: a batch names the same id twice.
var ErrDuplicate = errors.New("the batch names this id more than once")

// ErrRefused: at least one change of a batch failed its checks; nothing
// was written.
var ErrRefused = errors.New("batch refused: nothing stored")

// Change is one change of a batch: create or replace a validated
// entrypoint, or delete an id.
type Change struct {
	Op          string
	ID          string // delete: the id; create and replace: Entrypoint's
	Entrypoint  config.Entrypoint
	Diagnostics []diagnostics.Diagnostic
}

// Apply checks every change against the current set (create: the id is not
// held, ErrExists; replace and delete: it is, ErrAbsent; no id twice,
// ErrDuplicate) and, when all pass and dryRun is false, writes them as one
// log record: they become current together or not at all. It returns, per
// change, the entry stored (or that would be; zero for a delete) and the
// error of that change; err is ErrRefused when any change failed, or the
// write's error.
func (s *Store) Apply(changes []Change, dryRun bool) (entries []Entry, errs []error, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries, errs = make([]Entry, len(changes)), make([]error, len(changes))
	seen := make(map[string]bool, len(changes))
	var puts []Entry
	var dels []string
	failed := false
	for i, c := range changes {
		id := c.ID
		if c.Op != OpDelete {
			id = c.Entrypoint.ID
			if id == "" {
				id = c.Entrypoint.Name
			}
		}
		if seen[id] {
			errs[i], failed = fmt.Errorf("%s %q: %w", c.Op, id, ErrDuplicate), true
			continue
		}
		seen[id] = true
		var e Entry
		switch c.Op {
		case OpCreate:
			e, errs[i] = s.creation(c.Entrypoint, c.Diagnostics)
		case OpReplace:
			e, errs[i] = s.replacement(c.Entrypoint, c.Diagnostics)
		case OpDelete:
			if _, ok := s.entries[id]; !ok {
				errs[i] = fmt.Errorf("delete %q: %w", id, ErrAbsent)
			}
		default:
			errs[i] = fmt.Errorf("unknown operation %q: want create, replace or delete", c.Op)
		}
		if errs[i] != nil {
			failed = true
			continue
		}
		entries[i] = e
		if c.Op == OpDelete {
			dels = append(dels, id)
		} else {
			puts = append(puts, e)
		}
	}
	if failed {
		return entries, errs, ErrRefused
	}
	if dryRun || len(puts)+len(dels) == 0 {
		return entries, errs, nil
	}
	return entries, errs, s.commit(puts, dels)
}

// SetResult is what SetAll did to one id.
type SetResult struct {
	ID    string
	Op    string // create, replace, delete, or "unchanged"
	Entry Entry  // zero for a delete
}

// SetAll makes the API set exactly eps (a declarative apply): an id not
// held is created, one held is replaced (keeping its creation time)
// unless its stored payload would not change, and every held id not in
// eps is deleted; all in one log record, or nothing with dryRun. The
// results are ordered by id. An id given twice fails the whole set
// (ErrRefused, with the per-entry errors in the order of eps).
func (s *Store) SetAll(eps []Change, dryRun bool) (results []SetResult, errs []error, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs = make([]error, len(eps))
	seen := make(map[string]bool, len(eps))
	var puts []Entry
	failed := false
	for i, c := range eps {
		ep, ds := OwnEntrypoint(c.Entrypoint, c.Diagnostics)
		if seen[ep.ID] {
			errs[i], failed = fmt.Errorf("set %q: %w", ep.ID, ErrDuplicate), true
			continue
		}
		seen[ep.ID] = true
		old, held := s.entries[ep.ID]
		var e Entry
		op := OpCreate
		if held {
			op = OpReplace
			e, errs[i] = s.replacement(ep, ds)
		} else {
			e, errs[i] = s.creation(ep, ds)
		}
		if errs[i] != nil {
			failed = true
			continue
		}
		if held && bytes.Equal(old.Payload, e.Payload) {
			results = append(results, SetResult{ID: ep.ID, Op: "unchanged", Entry: old})
			continue
		}
		results = append(results, SetResult{ID: ep.ID, Op: op, Entry: e})
		puts = append(puts, e)
	}
	if failed {
		return nil, errs, ErrRefused
	}
	var dels []string
	for id := range s.entries {
		if !seen[id] {
			dels = append(dels, id)
			results = append(results, SetResult{ID: id, Op: OpDelete})
		}
	}
	slices.Sort(dels)
	slices.SortFunc(results, func(a, b SetResult) int { return strings.Compare(a.ID, b.ID) })
	if dryRun || len(puts)+len(dels) == 0 {
		return results, errs, nil
	}
	return results, errs, s.commit(puts, dels)
}
