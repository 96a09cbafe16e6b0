package api

import (
	"net/http"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// health is liveness: the process serves HTTP.
func (s *Server) health(w http.ResponseWriter, r *http.Request, _ string) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readiness is the /ready answer. When not ready it also carries the
// error-body fields (error, diagnostics), like every other non-2xx answer.
type readiness struct {
	Ready bool `json:"ready"`
	// Pending names what has not synced yet.
	Pending []string `json:"pending"`
	// Providers is every check with its connection, when it reports one.
	Providers []providerStatus `json:"providers"`
	Error     string           `json:"error,omitempty"`
}

// providerStatus is one entry of /ready's providers list. A provider that
// lost its source stays ready (its last routes keep serving), so the
// connection is shown here rather than turned into a 503.
type providerStatus struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
	*Connection
}

func (s *Server) readiness(w http.ResponseWriter, r *http.Request, _ string) {
	res := readiness{Ready: true, Pending: []string{}, Providers: []providerStatus{}}
	for _, c := range s.ready {
		st := providerStatus{Name: c.Name, Ready: c.Ready()}
		if c.Connection != nil {
			conn := c.Connection()
			st.Connection = &conn
		}
		res.Providers = append(res.Providers, st)
		if !st.Ready {
			res.Pending = append(res.Pending, c.Name)
		}
	}
	if len(res.Pending) > 0 {
		res.Ready = false
		res.Error = "waiting for the first sync of: " + strings.Join(res.Pending, ", ")
		writeJSON(w, http.StatusServiceUnavailable, struct {
			readiness
			Diagnostics []diagnostics.Diagnostic `json:"diagnostics"`
		}{res, []diagnostics.Diagnostic{}})
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request, _ string) {
	s.metricsHandler.ServeHTTP(w, r)
}

func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request, _ string) {
	writeRaw(w, http.StatusOK, s.openapi)
}

// sessionInfo is the GET /session answer: what the caller's token may do,
// so a client (the dashboard) can offer only the actions it can take. The
// server checks every request anyway.
type sessionInfo struct {
	Role     string `json:"role"`
	CanWrite bool   `json:"can_write"`
}

func (s *Server) session(w http.ResponseWriter, r *http.Request, _ string) {
	role := s.auth.role(r)
	writeJSON(w, http.StatusOK, sessionInfo{Role: role, CanWrite: role == roleAdmin || role == roleOpen})
}

// catalogueList is the GET /diagnostics/catalogue answer.
type catalogueList struct {
	Codes []diagnostics.Entry `json:"codes"`
}

func (s *Server) catalogue(w http.ResponseWriter, r *http.Request, _ string) {
	writeJSON(w, http.StatusOK, catalogueList{Codes: diagnostics.Catalogue()})
}
