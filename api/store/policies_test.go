package store

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/levee-proxy/levee/router/config"
)

// lastSink keeps the last complete set the store handed over.
type lastSink struct {
	mu   sync.Mutex
	last config.SourceUpdate
}

func (s *lastSink) Update(u config.SourceUpdate) { s.mu.Lock(); s.last = u; s.mu.Unlock() }
func (s *lastSink) Patch(config.SourcePatch)     {}

func (s *lastSink) policyNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.last.Policies {
		out = append(out, p.Name)
	}
	return out
}

func mustPolicy(t *testing.T, body string) config.Policy {
	t.Helper()
	p, _, err := DecodePolicy(config.FormatJSON, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A policy put is on disk before PutPolicy returns and survives a
// restart, from the log and from a compacted snapshot; a delete too; the
// router hears the whole set after each change.
func TestPoliciesPersist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	for _, compact := range []bool{false, true} {
		sink := &lastSink{}
		s, err := Open(Options{Path: path, Codec: fakeCodec(), Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		if compact {
			s.compactMin = 0
		}
		office := mustPolicy(t, `{"name":"office","config":{"ip_allow_list":{"source_range":"10.0.0.0/8"}}}`)
		if _, created, err := s.PutPolicy(office, nil); err != nil || !created {
			t.Fatalf("put: created %v, %v", created, err)
		}
		e1, _ := s.Policy("office")
		office2 := mustPolicy(t, `{"name":"office","config":{"ip_allow_list":{"source_range":"192.168.0.0/16"}}}`)
		if _, created, err := s.PutPolicy(office2, nil); err != nil || created {
			t.Fatalf("replace: created %v, %v", created, err)
		}
		if _, _, err := s.PutPolicy(mustPolicy(t, `{"name":"gone","config":{"compress":{"enabled":true}}}`), nil); err != nil {
			t.Fatal(err)
		}
		if err := s.DeletePolicy("gone"); err != nil {
			t.Fatal(err)
		}
		if got := sink.policyNames(); !slices.Equal(got, []string{"office"}) {
			t.Fatalf("router holds %v", got)
		}

		sink2 := &lastSink{}
		s2, err := Open(Options{Path: path, Codec: fakeCodec(), Sink: sink2})
		if err != nil {
			t.Fatalf("reopen (compacted %v): %v", compact, err)
		}
		e, ok := s2.Policy("office")
		if !ok || e.Policy.Access.IPAllowList == nil || !slices.Equal(e.Policy.Access.IPAllowList.SourceRange, []string{"192.168.0.0/16"}) {
			t.Fatalf("after a restart (compacted %v): %+v %v", compact, e.Policy, ok)
		}
		if !e.Policy.Created.Equal(e1.Policy.Created) {
			t.Errorf("replace changed the creation time: %v, was %v", e.Policy.Created, e1.Policy.Created)
		}
		if _, ok := s2.Policy("gone"); ok {
			t.Errorf("deleted policy came back")
		}
		if got := sink2.policyNames(); !slices.Equal(got, []string{"office"}) {
			t.Errorf("router after a restart holds %v", got)
		}
		if err := s2.DeletePolicy("office"); err != nil {
			t.Fatal(err)
		}
		if err := s2.DeletePolicy("office"); err == nil {
			t.Errorf("deleting an absent policy succeeded")
		}
	}
}
