package fleet

import (
	"sort"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// DiagnosticsSource is the provider name of the store's diagnostics.
const DiagnosticsSource = "breaker-store"

// diagnosticsLocked lists the current diagnostics: one per breaker that
// judges locally after a failure (075 unreachable, 076 garbage) or whose
// parameters differ from the fleet's (077).
func (s *Store) currentDiagnostics() []diagnostics.Diagnostic {
	var out []diagnostics.Diagnostic
	for _, m := range s.snapshotMembers() {
		m.mu.Lock()
		src := diagnostics.Source{Provider: DiagnosticsSource, ObjectName: m.name}
		switch {
		case m.local && m.why != "" && m.garbage:
			out = append(out, diagnostics.New(diagnostics.StoreGarbage, src, "", "", "local breaker",
				"the breaker store answered something unusable: "+m.why, "check the keys under the store prefix (another program may write them) and the store's logs"))
		case m.local && m.why != "":
			out = append(out, diagnostics.New(diagnostics.StoreUnreachable, src, "", "", "local breaker",
				"the breaker store is unreachable or slower than the flush timeout: "+m.why, "check the --breaker-store address and the store's health"))
		}
		if m.mismatch {
			out = append(out, diagnostics.New(diagnostics.StoreParamsMismatch, src, "", "", "the fleet's newer parameters",
				"this replica's breaker parameters differ from the fleet's, which were set more recently", "give every replica the same circuitBreaker.* settings"))
		}
		m.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Source.ObjectName != out[j].Source.ObjectName {
			return out[i].Source.ObjectName < out[j].Source.ObjectName
		}
		return out[i].Code < out[j].Code
	})
	return out
}

// publishDiagnostics calls OnDiagnostics when the set changed.
func (s *Store) publishDiagnostics() {
	if s.opts.OnDiagnostics == nil {
		return
	}
	s.diagMu.Lock()
	defer s.diagMu.Unlock()
	ds := s.currentDiagnostics()
	var sb strings.Builder
	for _, d := range ds {
		sb.WriteString(d.String())
		sb.WriteByte('\n')
	}
	if sb.String() == s.lastDiag {
		return
	}
	s.lastDiag = sb.String()
	s.opts.OnDiagnostics(ds)
}

// Diagnostics returns the store's current diagnostics.
func (s *Store) Diagnostics() []diagnostics.Diagnostic { return s.currentDiagnostics() }
