package store

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// The API's named policies live in the same store as its entrypoints: the
// same state file (its "policies" list), the same log (put_policy and
// del_policy in a record), the same fsync before the answer, the same
// re-decoding at start through the current validator. A change to a
// policy is handed to the router as the API source's complete set
// (Update), so every route using it changes in one snapshot.

// ErrNoPolicy is returned when a named policy is not in the store.
var ErrNoPolicy = errors.New("policy does not exist")

// PolicyEntry is one API policy as the store holds it.
type PolicyEntry struct {
	Policy config.Policy
	// Payload is its canonical JSON payload (config.EncodePolicy).
	Payload []byte
	// Diagnostics are the validator's findings about it.
	Diagnostics []diagnostics.Diagnostic
}

// policySource is the diagnostics source of API policy name.
func policySource(name string) diagnostics.Source {
	return diagnostics.Source{Provider: config.SourceAPI, ObjectID: "policy " + name, ObjectName: name, Service: "policy " + name}
}

// DecodePolicy validates an API policy payload as the store keeps it:
// its diagnostics name the policy.
func DecodePolicy(format config.Format, body []byte) (config.Policy, []diagnostics.Diagnostic, error) {
	p, ds, err := config.DecodePolicy(format, body, diagnostics.Source{Provider: config.SourceAPI})
	if err != nil {
		return p, ds, err
	}
	src := policySource(p.Name)
	for i := range ds {
		ds[i].Source = src
	}
	p.Origin = src
	return p, ds, nil
}

// loadPolicy decodes one stored policy into the set.
func (s *Store) loadPolicy(rec stateRecord) error {
	p, ds, err := DecodePolicy(config.FormatJSON, rec.Payload)
	if err != nil {
		return fmt.Errorf("policy %q: stored payload refused by the validator: %w", rec.ID, err)
	}
	if p.Name != rec.ID {
		return fmt.Errorf("policy %q: stored payload decodes to name %q", rec.ID, p.Name)
	}
	p.Created = rec.Created
	e, err := policyEntry(p, ds)
	if err != nil {
		return err
	}
	s.policies[p.Name] = e
	return nil
}

func policyEntry(p config.Policy, ds []diagnostics.Diagnostic) (PolicyEntry, error) {
	payload, err := config.EncodePolicy(p)
	if err != nil {
		return PolicyEntry{}, err
	}
	if ds == nil {
		ds = []diagnostics.Diagnostic{}
	}
	return PolicyEntry{Policy: p, Payload: payload, Diagnostics: ds}, nil
}

// Policy returns one API policy by name.
func (s *Store) Policy(name string) (PolicyEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.policies[name]
	return e, ok
}

// Policies returns every API policy, ordered by name.
func (s *Store) Policies() []PolicyEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sortedPolicies()
}

func (s *Store) sortedPolicies() []PolicyEntry {
	out := make([]PolicyEntry, 0, len(s.policies))
	for _, name := range slices.Sorted(maps.Keys(s.policies)) {
		out = append(out, s.policies[name])
	}
	return out
}

// PutPolicy creates or replaces a validated policy, durably, and hands the
// router the API's new set. A replaced policy keeps its creation time
// (which orders two declarations of one name); created says whether the
// name was new.
func (s *Store) PutPolicy(p config.Policy, ds []diagnostics.Diagnostic) (e PolicyEntry, created bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, created, err = s.policyPut(p, ds)
	if err != nil {
		return PolicyEntry{}, false, err
	}
	rec := Record{PutPolicy: []stateRecord{{ID: e.Policy.Name, Created: e.Policy.Created, Payload: e.Payload}}}
	if err := s.commitPolicies(rec, []PolicyEntry{e}); err != nil {
		return PolicyEntry{}, false, err
	}
	return e, created, nil
}

// PreviewPolicy is PutPolicy without the write (a dry run).
func (s *Store) PreviewPolicy(p config.Policy, ds []diagnostics.Diagnostic) (PolicyEntry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policyPut(p, ds)
}

// policyPut is the entry PutPolicy would store; the caller holds s.mu.
func (s *Store) policyPut(p config.Policy, ds []diagnostics.Diagnostic) (PolicyEntry, bool, error) {
	old, held := s.policies[p.Name]
	p.Source = config.SourceAPI
	if held {
		p.Created = old.Policy.Created
	} else {
		p.Created = s.now().UTC()
	}
	e, err := policyEntry(p, ds)
	if err != nil {
		return PolicyEntry{}, false, fmt.Errorf("put policy %q: %w", p.Name, err)
	}
	return e, !held, nil
}

// DeletePolicy removes a policy (else ErrNoPolicy); the routes that use it
// deny from then on (E007).
func (s *Store) DeletePolicy(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.policies[name]; !ok {
		return fmt.Errorf("delete policy %q: %w", name, ErrNoPolicy)
	}
	return s.commitPolicies(Record{DelPolicy: []string{name}}, nil)
}

// commitPolicies appends rec (which puts puts) to the log and, once it is
// on disk, makes it current and pushes the API's whole set. The caller
// holds s.mu.
func (s *Store) commitPolicies(rec Record, puts []PolicyEntry) error {
	if err := s.log.append(rec); err != nil {
		return fmt.Errorf("state file %s: %w", s.path, err)
	}
	for _, e := range puts {
		s.policies[e.Policy.Name] = e
	}
	for _, name := range rec.DelPolicy {
		delete(s.policies, name)
	}
	s.push()
	if s.log.size > max(s.compactMin, s.snapSize) {
		if err := s.compact(); err != nil {
			s.warn(fmt.Sprintf("state file %s: compaction failed, the log %s keeps every change: %v", s.path, s.log.path, err))
		}
	}
	return nil
}

// policyList is the set pushed to the router. The caller holds s.mu.
func (s *Store) policyList() ([]config.Policy, []diagnostics.Diagnostic) {
	var out []config.Policy
	var ds []diagnostics.Diagnostic
	for _, e := range s.sortedPolicies() {
		out = append(out, e.Policy)
		ds = append(ds, e.Diagnostics...)
	}
	return out, ds
}

// policyRecords are the stored policies for the state file. The caller
// holds s.mu.
func (s *Store) policyRecords() []stateRecord {
	var out []stateRecord
	for _, e := range s.sortedPolicies() {
		out = append(out, stateRecord{ID: e.Policy.Name, Created: e.Policy.Created, Payload: e.Payload})
	}
	return out
}
