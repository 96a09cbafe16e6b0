package diagnostics

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
)

func d(code Code, obj, key string) Diagnostic {
	return Diagnostic{Code: code, Severity: Warn, Source: Source{Provider: "docker", ObjectName: obj}, Key: key, Message: "m"}
}

func TestStoreReplaceReportsChangesOnly(t *testing.T) {
	s := NewStore()
	a, b, c := d(BadPort, "x", "port"), d(BadWeight, "x", "weight"), d(BadCircuitBreaker, "y", "cb")
	added, removed := s.Replace("docker", []Diagnostic{b, a, a})
	if !reflect.DeepEqual(added, []Diagnostic{a, b}) || removed != nil {
		t.Fatalf("first replace: added %v removed %v", added, removed)
	}
	// A resync with the same set (other order) reports nothing.
	added, removed = s.Replace("docker", []Diagnostic{a, b})
	if added != nil || removed != nil {
		t.Fatalf("same set: added %v removed %v", added, removed)
	}
	added, removed = s.Replace("docker", []Diagnostic{a, c})
	if !reflect.DeepEqual(added, []Diagnostic{c}) || !reflect.DeepEqual(removed, []Diagnostic{b}) {
		t.Fatalf("change: added %v removed %v", added, removed)
	}
	// A changed value is a removal and an addition.
	a2 := a
	a2.Value = "81a"
	added, removed = s.Replace("docker", []Diagnostic{a2, c})
	if !reflect.DeepEqual(added, []Diagnostic{a2}) || !reflect.DeepEqual(removed, []Diagnostic{a}) {
		t.Fatalf("value change: added %v removed %v", added, removed)
	}
	s.Replace("api", []Diagnostic{d(NoBackends, "app", "backends")})
	if got := s.Counts(); !reflect.DeepEqual(got, map[Code]int{BadPort: 1, BadCircuitBreaker: 1, NoBackends: 1}) {
		t.Errorf("counts %v", got)
	}
	all := s.All()
	if len(all) != 3 || all[0].Code != NoBackends || all[1] != a2 || all[2] != c {
		t.Errorf("All order: %v", all)
	}
	_, removed = s.Replace("api", nil)
	if len(removed) != 1 || len(s.All()) != 2 {
		t.Errorf("clearing a source: removed %v, all %v", removed, s.All())
	}
}

func TestStoreConcurrent(t *testing.T) {
	s := NewStore()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			src := fmt.Sprintf("s%d", i%3)
			for j := 0; j < 200; j++ {
				s.Replace(src, []Diagnostic{d(BadPort, src, fmt.Sprint(j%5))})
				_ = s.All()
				_ = s.Counts()
			}
		}(i)
	}
	wg.Wait()
	if got := s.Counts()[BadPort]; got != 3 {
		t.Errorf("after concurrent replaces: %d BadPort, want one per source (3)", got)
	}
}
