package api

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// Query parameters of the entrypoint writes (POST /entrypoints and
// PUT /entrypoints/{id}).
const (
	paramStrict = "strict"
	paramDryRun = "dry_run"
)

// writeParams documents the write query parameters. parseWriteMode accepts
// exactly these names, so the document cannot offer one the handler
// ignores.
func writeParams() []queryParam {
	const values = " Values: true/false, 1/0, yes/no, on/off; default false."
	return []queryParam{
		{name: paramStrict, typ: "boolean", doc: "Refuse the payload with 422 and the list of its diagnostics of warning level or above, instead of storing it with fallbacks; nothing is stored." + values},
		{name: paramDryRun, typ: "boolean", doc: "Validate and answer as the write would (status, normalised entrypoint, diagnostics), but store nothing and leave the router untouched. Combines with strict." + values},
	}
}

// writeMode is what the query of a write asks for.
type writeMode struct {
	// strict refuses a payload with any diagnostic of warning level or
	// above, so a script checking only the status cannot miss a fallback.
	strict bool
	// dryRun answers as the write would, without storing anything.
	dryRun bool
}

// parseWriteMode reads the query of a write. An unknown parameter is an
// error too: a misspelt dry_run must not turn a check into a real write.
func parseWriteMode(rawQuery string) (writeMode, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return writeMode{}, fmt.Errorf("query %q: %w", rawQuery, err)
	}
	var m writeMode
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names) // one error message for one query, whatever the map order
	for _, name := range names {
		var dst *bool
		switch name {
		case paramStrict:
			dst = &m.strict
		case paramDryRun:
			dst = &m.dryRun
		default:
			return writeMode{}, fmt.Errorf("unknown query parameter %q: a write takes %s and %s", name, paramStrict, paramDryRun)
		}
		if vs := q[name]; len(vs) != 1 {
			return writeMode{}, fmt.Errorf("query parameter %s is given %d times: give it once", name, len(vs))
		}
		b, err := config.ParseBool(q.Get(name))
		if err != nil {
			return writeMode{}, fmt.Errorf("query parameter %s: %w", name, err)
		}
		*dst = b
	}
	return m, nil
}

// readWriteMode parses the request's write mode; on failure it has answered
// 400 and returns false.
func readWriteMode(w http.ResponseWriter, r *http.Request) (writeMode, bool) {
	m, err := parseWriteMode(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return writeMode{}, false
	}
	return m, true
}

// strictFindings are the diagnostics strict refuses a payload for: warning
// and error level. Info diagnostics (a default applied quietly) are not
// problems, so they never block a write.
func strictFindings(ds []diagnostics.Diagnostic) []diagnostics.Diagnostic {
	var out []diagnostics.Diagnostic
	for _, d := range ds {
		if d.Severity >= diagnostics.Warn {
			out = append(out, d)
		}
	}
	return out
}

// refuseStrict answers 422 with the findings when strict is asked and the
// payload has any; it reports whether it answered.
func refuseStrict(w http.ResponseWriter, m writeMode, ds []diagnostics.Diagnostic) bool {
	if !m.strict {
		return false
	}
	found := strictFindings(ds)
	if len(found) == 0 {
		return false
	}
	codes := make([]string, len(found))
	for i, d := range found {
		codes[i] = strings.TrimSpace(string(d.Code) + " " + d.Key)
	}
	writeError(w, http.StatusUnprocessableEntity,
		fmt.Sprintf("strict: nothing stored: %d diagnostic(s) of warning level or above (%s)", len(found), strings.Join(codes, ", ")), found)
	return true
}
