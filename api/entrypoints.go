package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// entrypointView is one entrypoint as GET shows it: the router's status
// (entrypoint, backends with health, breakers, diagnostics) with its id and
// owning source on top, and, for API entrypoints, the stored payload, which
// can be edited and sent back with PUT.
//
// Entrypoint is the effective config as routed, encoded by the codec in the
// payload's own shape (every field explicit, durations as Go duration
// strings), whichever source built it: a client reads one shape everywhere
// and can POST what it read. It shadows the embedded status field, whose Go
// form would show durations as nanoseconds and hide the breaker's
// parameters.
type entrypointView struct {
	ID     string `json:"id"`
	Source string `json:"source"`
	status.EntrypointStatus
	Entrypoint json.RawMessage `json:"entrypoint"`
	Payload    json.RawMessage `json:"payload,omitempty"`
}

// entrypointList is the GET /entrypoints answer. Next, when set, is the
// after= of the next page.
type entrypointList struct {
	Entrypoints []entrypointView `json:"entrypoints"`
	Next        string           `json:"next,omitempty"`
}

func (s *Server) view(st status.EntrypointStatus) (entrypointView, error) {
	v := entrypointView{ID: st.Entrypoint.ID, Source: st.Entrypoint.Source, EntrypointStatus: st}
	ep, err := s.encodeShown(st.Entrypoint)
	if err != nil {
		return entrypointView{}, fmt.Errorf("view of entrypoint %q: %w", v.ID, err)
	}
	v.Entrypoint = ep
	if v.Source == config.SourceAPI {
		if e, ok := s.store.Get(v.ID); ok {
			if v.Payload, err = s.shownPayload(e); err != nil {
				return entrypointView{}, fmt.Errorf("view of entrypoint %q: %w", v.ID, err)
			}
		}
	}
	return v, nil
}

func (s *Server) listEntrypoints(w http.ResponseWriter, r *http.Request, _ string) {
	q, err := parseListQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	list := entrypointList{Entrypoints: []entrypointView{}}
	page, next := q.page(s.router.Entrypoints())
	list.Next = next
	for _, st := range page {
		v, err := s.view(st)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error(), nil)
			return
		}
		list.Entrypoints = append(list.Entrypoints, v)
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) getEntrypoint(w http.ResponseWriter, r *http.Request, _ string) {
	id := r.PathValue("id")
	st, ok := s.router.Entrypoint(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no entrypoint %q", id), nil)
		return
	}
	v, err := s.view(st)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), nil)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// owner says who owns id: "" when nobody, config.SourceAPI when the store
// holds it, else the router's view of its source. The store is asked
// first: it is the truth for API entrypoints, even while the router shows
// another source's entrypoint with the same id (a collision).
func (s *Server) owner(id string) string {
	if _, ok := s.store.Get(id); ok {
		return config.SourceAPI
	}
	return s.otherOwner(id)
}

// otherOwner is the source of id in the router's merged view, or "" when
// the router does not route it. An entrypoint that already left its source
// (still answering 503 for its grace period) belongs to nobody.
func (s *Server) otherOwner(id string) string {
	st, ok := s.router.Entrypoint(id)
	if !ok || st.Removed {
		return ""
	}
	if st.Entrypoint.Source == "" {
		return "another source"
	}
	return st.Entrypoint.Source
}

// createEntrypoint is POST /entrypoints. With ?strict=true a payload with
// warnings is refused (422) instead of stored with fallbacks; with
// ?dry_run=true the answer is what a real write would give, and nothing is
// stored. The strict check comes right after validation, so a dry run and
// a real write with the same query answer the same.
func (s *Server) createEntrypoint(w http.ResponseWriter, r *http.Request, who string) {
	mode, ok := readWriteMode(w, r)
	if !ok {
		return
	}
	ep, ds, ok := s.decodeEntry(w, r, diagnostics.Source{})
	if !ok {
		return
	}
	if refuseStrict(w, mode, ds) {
		return
	}
	id := ep.ID
	// The store checks its own ids atomically; other sources are checked
	// here, against the router's merged view.
	if owner := s.otherOwner(id); owner != "" && owner != config.SourceAPI {
		writeError(w, http.StatusConflict, fmt.Sprintf("entrypoint %q already exists (source %s)", id, owner), ds)
		return
	}
	create := s.store.Create
	if mode.dryRun {
		create = s.store.PreviewCreate
	}
	stored, err := create(ep, ds)
	if errors.Is(err, ErrExists) {
		writeError(w, http.StatusConflict, fmt.Sprintf("entrypoint %q already exists (source api); use PUT /entrypoints/%s to replace it", id, id), ds)
		return
	}
	if err != nil {
		s.log.Error().Err(err).Str("entrypoint", id).Str("who", who).Bool("dry_run", mode.dryRun).Msg("API entrypoint not created: state file write failed")
		writeError(w, http.StatusInternalServerError, "not created: "+err.Error(), ds)
		return
	}
	if mode.dryRun {
		// No Location: nothing was created there.
		s.log.Debug().Str("entrypoint", id).Str("who", who).Int("diagnostics", len(stored.Diagnostics)).Msg("API entrypoint dry run: would be created")
		s.writeStored(w, http.StatusCreated, stored)
		return
	}
	s.log.Info().Str("entrypoint", id).Str("who", who).Int("diagnostics", len(stored.Diagnostics)).Msg("API entrypoint created")
	w.Header().Set("Location", "/entrypoints/"+id)
	s.writeStored(w, http.StatusCreated, stored)
}

// replaceEntrypoint is PUT /entrypoints/{id}; strict and dry_run work as
// for createEntrypoint.
func (s *Server) replaceEntrypoint(w http.ResponseWriter, r *http.Request, who string) {
	mode, ok := readWriteMode(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if !s.mayChange(w, id) {
		return
	}
	ep, ds, ok := s.decodeEntry(w, r, diagnostics.Source{ObjectID: id, ObjectName: id})
	if !ok {
		return
	}
	if ep.ID != id {
		writeError(w, http.StatusUnprocessableEntity,
			fmt.Sprintf("name %q in the body does not match id %q in the path; renaming is DELETE + POST", ep.ID, id), ds)
		return
	}
	if refuseStrict(w, mode, ds) {
		return
	}
	replace := s.store.Replace
	if mode.dryRun {
		replace = s.store.PreviewReplace
	}
	stored, err := replace(ep, ds)
	if errors.Is(err, ErrAbsent) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no entrypoint %q", id), ds)
		return
	}
	if err != nil {
		s.log.Error().Err(err).Str("entrypoint", id).Str("who", who).Bool("dry_run", mode.dryRun).Msg("API entrypoint not replaced: state file write failed")
		writeError(w, http.StatusInternalServerError, "not replaced: "+err.Error(), ds)
		return
	}
	if mode.dryRun {
		s.log.Debug().Str("entrypoint", id).Str("who", who).Int("diagnostics", len(stored.Diagnostics)).Msg("API entrypoint dry run: would be replaced")
		s.writeStored(w, http.StatusOK, stored)
		return
	}
	s.log.Info().Str("entrypoint", id).Str("who", who).Int("diagnostics", len(stored.Diagnostics)).Msg("API entrypoint replaced")
	s.writeStored(w, http.StatusOK, stored)
}

func (s *Server) deleteEntrypoint(w http.ResponseWriter, r *http.Request, who string) {
	id := r.PathValue("id")
	if !s.mayChange(w, id) {
		return
	}
	err := s.store.Delete(id)
	if errors.Is(err, ErrAbsent) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no entrypoint %q", id), nil)
		return
	}
	if err != nil {
		s.log.Error().Err(err).Str("entrypoint", id).Str("who", who).Msg("API entrypoint not deleted: state file write failed")
		writeError(w, http.StatusInternalServerError, "not deleted: "+err.Error(), nil)
		return
	}
	s.log.Info().Str("entrypoint", id).Str("who", who).Msg("API entrypoint deleted")
	w.WriteHeader(http.StatusNoContent)
}

// mayChange answers 403 for another source's entrypoint and 404 for an
// unknown one, before the body is read.
func (s *Server) mayChange(w http.ResponseWriter, id string) bool {
	switch owner := s.owner(id); owner {
	case config.SourceAPI:
		return true
	case "":
		writeError(w, http.StatusNotFound, fmt.Sprintf("no entrypoint %q", id), nil)
	default:
		writeError(w, http.StatusForbidden, fmt.Sprintf("entrypoint %q belongs to source %s; change it there", id, owner), nil)
	}
	return false
}

func (s *Server) writeStored(w http.ResponseWriter, status int, e Entry) {
	body, err := s.storedBody(e)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encode response: "+err.Error(), nil)
		return
	}
	writeRaw(w, status, body)
}
