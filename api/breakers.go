package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/levee-proxy/levee/router/status"
)

// breakerList is the GET /breakers answer.
type breakerList struct {
	Breakers []status.BreakerStatus `json:"breakers"`
}

func (s *Server) listBreakers(w http.ResponseWriter, r *http.Request, _ string) {
	list := s.router.Breakers()
	if list == nil {
		list = []status.BreakerStatus{}
	}
	writeJSON(w, http.StatusOK, breakerList{Breakers: list})
}

func (s *Server) getBreaker(w http.ResponseWriter, r *http.Request, _ string) {
	name := r.PathValue("route")
	st, ok := s.router.Breaker(name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no breaker for route %q", name), nil)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// controlBreaker applies a manual action. The API logs who asked and
// passes who on, so the router's transition event says it too.
func (s *Server) controlBreaker(w http.ResponseWriter, r *http.Request, who, action string) {
	name := r.PathValue("route")
	if _, ok := s.router.Breaker(name); !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no breaker for route %q", name), nil)
		return
	}
	if err := s.router.ControlBreaker(name, action, who); err != nil {
		if errors.Is(err, status.ErrNotFound) {
			writeError(w, http.StatusNotFound, fmt.Sprintf("no breaker for route %q", name), nil)
			return
		}
		// The router refuses only an action it does not know, and the
		// route table sends only open, close and reset: a bug, not a
		// conflict the client could resolve.
		s.log.Error().Err(err).Str("route", name).Str("action", action).Str("who", who).Msg("breaker control refused")
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("%s breaker of route %q: %v", action, name, err), nil)
		return
	}
	// Manual control overrides what the breaker judged: warn, so it stands
	// out next to the transitions it causes.
	s.log.Warn().Str("route", name).Str("action", action).Str("who", who).Msg("breaker control")
	st, ok := s.router.Breaker(name)
	if !ok { // the route went away in between
		writeError(w, http.StatusNotFound, fmt.Sprintf("no breaker for route %q", name), nil)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// history serves the router's ring of breaker samples (the dashboard's
// sparklines).
func (s *Server) history(w http.ResponseWriter, r *http.Request, _ string) {
	writeJSON(w, http.StatusOK, s.router.History())
}
