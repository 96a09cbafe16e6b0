package api

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// diagnosticsReport is the GET /diagnostics answer.
type diagnosticsReport struct {
	// Totals count the diagnostics shown (after filters): "all" and one
	// per severity.
	Totals map[string]int `json:"totals"`
	// ByCode counts the diagnostics shown per code.
	ByCode  map[diagnostics.Code]int `json:"by_code"`
	Objects []objectDiagnostics      `json:"objects"`
}

// objectDiagnostics is every diagnostic about one object (container, API
// entrypoint), in the router's order.
type objectDiagnostics struct {
	Provider    string                   `json:"provider"`
	ObjectID    string                   `json:"object_id,omitempty"`
	Object      string                   `json:"object"`
	Diagnostics []diagnostics.Diagnostic `json:"diagnostics"`
}

// diagnosticFilter keeps diagnostics of the listed severities and codes;
// an empty list keeps all.
type diagnosticFilter struct {
	severities []diagnostics.Severity
	codes      []diagnostics.Code
}

func (f diagnosticFilter) keep(d diagnostics.Diagnostic) bool {
	return (len(f.severities) == 0 || slices.Contains(f.severities, d.Severity)) &&
		(len(f.codes) == 0 || slices.Contains(f.codes, d.Code))
}

// parseDiagnosticFilter reads ?severity= and ?code=, each repeatable and
// comma-separated. Unknown severities and codes are errors, so a typo does
// not look like "no problems".
func parseDiagnosticFilter(r *http.Request) (diagnosticFilter, error) {
	var f diagnosticFilter
	q := r.URL.Query()
	for _, v := range splitValues(q["severity"]) {
		sev, err := diagnostics.ParseSeverity(v)
		if err != nil {
			return f, fmt.Errorf("severity filter: %w", err)
		}
		f.severities = append(f.severities, sev)
	}
	for _, v := range splitValues(q["code"]) {
		code := diagnostics.Code(strings.ToUpper(v))
		if _, ok := diagnostics.Lookup(code); !ok {
			return f, fmt.Errorf("code filter: unknown code %q (see levee explain)", v)
		}
		f.codes = append(f.codes, code)
	}
	return f, nil
}

func splitValues(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func (s *Server) listDiagnostics(w http.ResponseWriter, r *http.Request, _ string) {
	f, err := parseDiagnosticFilter(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	writeJSON(w, http.StatusOK, buildReport(s.router.Diagnostics(), f))
}

func buildReport(all []diagnostics.Diagnostic, f diagnosticFilter) diagnosticsReport {
	rep := diagnosticsReport{
		Totals:  map[string]int{"all": 0, "error": 0, "warn": 0, "info": 0},
		ByCode:  map[diagnostics.Code]int{},
		Objects: []objectDiagnostics{},
	}
	type key struct{ provider, id, name string }
	index := map[key]int{}
	for _, d := range all {
		if !f.keep(d) {
			continue
		}
		rep.Totals["all"]++
		rep.Totals[d.Severity.String()]++
		rep.ByCode[d.Code]++
		k := key{d.Source.Provider, d.Source.ObjectID, d.Source.ObjectName}
		i, ok := index[k]
		if !ok {
			i = len(rep.Objects)
			index[k] = i
			rep.Objects = append(rep.Objects, objectDiagnostics{Provider: k.provider, ObjectID: k.id, Object: k.name})
		}
		rep.Objects[i].Diagnostics = append(rep.Objects[i].Diagnostics, d)
	}
	slices.SortStableFunc(rep.Objects, func(a, b objectDiagnostics) int {
		return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Object, b.Object), cmp.Compare(a.ObjectID, b.ObjectID))
	})
	return rep
}
