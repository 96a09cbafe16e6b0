package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/levee-proxy/levee/api/store"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// Bulk writes: POST /entrypoints/bulk applies many creates, replaces and
// deletes, and PUT /entrypoints makes the API set exactly the one given
// (what declarative tools want). Either is one durable write (one log
// record, see api/store/log.go) and all or nothing: every operation is decoded,
// validated and checked first, and one that fails (a bad payload, an id
// that exists or does not, another source's id, with ?strict=true a
// warning) fails the whole request with 422 and each operation's own
// status, error and diagnostics; nothing is stored. ?dry_run=true answers
// as the write would and stores nothing, as for single writes.

// MaxBulkBodyBytes bounds a bulk request body: 10,000 entrypoints of a
// typical size fit with room to spare.
const MaxBulkBodyBytes = 64 << 20

// bulkRequest is the POST /entrypoints/bulk body.
type bulkRequest struct {
	Operations []bulkOperation `json:"operations"`
}

// bulkOperation is one operation: create or replace with an entrypoint
// payload, or delete an id.
type bulkOperation struct {
	Op         string          `json:"op"`
	ID         string          `json:"id,omitempty"`
	Entrypoint json.RawMessage `json:"entrypoint,omitempty"`
}

// setRequest is the PUT /entrypoints body.
type setRequest struct {
	Entrypoints []json.RawMessage `json:"entrypoints"`
}

// bulkResult is one operation's outcome in the answer.
type bulkResult struct {
	Op          string                   `json:"op"`
	ID          string                   `json:"id"`
	Status      int                      `json:"status"`
	Error       string                   `json:"error,omitempty"`
	Entrypoint  json.RawMessage          `json:"entrypoint,omitempty"`
	Diagnostics []diagnostics.Diagnostic `json:"diagnostics"`
}

// bulkAnswer is the answer of both bulk writes. Diagnostics gathers the
// results' diagnostics, so that a refusal also reads as the API's error
// body (error and diagnostics).
type bulkAnswer struct {
	DryRun      bool                     `json:"dry_run"`
	Error       string                   `json:"error,omitempty"`
	Results     []bulkResult             `json:"results"`
	Diagnostics []diagnostics.Diagnostic `json:"diagnostics"`
}

// readBulkBody reads a JSON body of at most MaxBulkBodyBytes into v; on
// failure it has answered.
func readBulkBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if f, ok := formatOf(r.Header.Get("Content-Type")); !ok || f != config.FormatJSON {
		writeError(w, http.StatusUnsupportedMediaType,
			fmt.Sprintf("Content-Type %q is not supported for bulk writes: send application/json", r.Header.Get("Content-Type")), nil)
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBulkBodyBytes))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body is over the limit of %d bytes", MaxBulkBodyBytes), nil)
			return false
		}
		writeError(w, http.StatusBadRequest, "read body: "+err.Error(), nil)
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, "malformed bulk body: "+err.Error(), nil)
		return false
	}
	return true
}

// decodeOne decodes and validates one payload of a bulk body, like a
// single write's: the status and message say why it is refused.
func (s *Server) decodeOne(raw json.RawMessage, mode writeMode) (config.Entrypoint, []diagnostics.Diagnostic, int, string) {
	if len(raw) == 0 || string(raw) == "null" {
		return config.Entrypoint{}, nil, http.StatusBadRequest, "no entrypoint payload"
	}
	ep, ds, err := s.codec.Decode(config.FormatJSON, raw, diagnostics.Source{Provider: config.SourceAPI})
	if err != nil {
		status, msg, eds := inputFailure(err)
		return config.Entrypoint{}, eds, status, msg
	}
	ep, ds = store.OwnEntrypoint(ep, ds)
	ep, ds, status, msg := s.withStoredHashes(ep, ds, diagnostics.Source{Provider: config.SourceAPI})
	if status != 0 {
		return ep, ds, status, msg
	}
	if !config.NamePattern.MatchString(ep.ID) {
		return ep, ds, http.StatusUnprocessableEntity, fmt.Sprintf("name %q is not a valid id: want %s", ep.ID, config.NamePattern)
	}
	if mode.strict {
		if found := strictFindings(ds); len(found) > 0 {
			return ep, found, http.StatusUnprocessableEntity, fmt.Sprintf("strict: %d diagnostic(s) of warning level or above", len(found))
		}
	}
	return ep, ds, 0, ""
}

// storeStatus maps a store error of one change to its status.
func storeStatus(err error) int {
	switch {
	case errors.Is(err, ErrExists), errors.Is(err, ErrDuplicate):
		return http.StatusConflict
	case errors.Is(err, ErrAbsent):
		return http.StatusNotFound
	}
	return http.StatusUnprocessableEntity
}

// bulkEntrypoints is POST /entrypoints/bulk.
func (s *Server) bulkEntrypoints(w http.ResponseWriter, r *http.Request, who string) {
	mode, ok := readWriteMode(w, r)
	if !ok {
		return
	}
	var req bulkRequest
	if !readBulkBody(w, r, &req) {
		return
	}
	results := make([]bulkResult, len(req.Operations))
	changes := make([]Change, len(req.Operations))
	failed := 0
	for i, op := range req.Operations {
		res := &results[i]
		res.Op, res.ID, res.Diagnostics = op.Op, op.ID, []diagnostics.Diagnostic{}
		c := Change{Op: op.Op, ID: op.ID}
		switch op.Op {
		case OpCreate, OpReplace:
			ep, ds, status, msg := s.decodeOne(op.Entrypoint, mode)
			res.ID, res.Diagnostics = ep.ID, orEmpty(ds)
			if status == 0 && op.ID != "" && op.ID != ep.ID {
				status, msg = http.StatusUnprocessableEntity, fmt.Sprintf("id %q does not match the payload's name %q", op.ID, ep.ID)
			}
			if status == 0 {
				status, msg = s.ownerConflict(op.Op, ep.ID)
			}
			res.Status, res.Error = status, msg
			c.Entrypoint, c.Diagnostics = ep, ds
		case OpDelete:
			res.Status, res.Error = s.ownerConflict(op.Op, op.ID)
		default:
			res.Status, res.Error = http.StatusBadRequest, fmt.Sprintf("unknown op %q: want create, replace or delete", op.Op)
		}
		if res.Status != 0 {
			failed++
		}
		changes[i] = c
	}
	// With a refused operation the others are still checked against the
	// store (a dry run of them), so that every result says how it fares.
	checked := make([]int, 0, len(changes))
	for i := range results {
		if results[i].Status == 0 {
			checked = append(checked, i)
		}
	}
	batch := make([]Change, len(checked))
	for k, i := range checked {
		batch[k] = changes[i]
	}
	entries, errs, err := s.store.Apply(batch, mode.dryRun || failed > 0)
	if s.storeFailed(w, who, err, len(changes)) {
		return
	}
	for k, i := range checked {
		s.fillResult(&results[i], entries[k], errs[k], &failed)
	}
	msg := ""
	if failed > 0 {
		msg = fmt.Sprintf("nothing stored: %d of %d operations refused", failed, len(results))
	}
	if !mode.dryRun && failed == 0 {
		s.log.Info().Str("who", who).Int("operations", len(changes)).Msg("API bulk write applied")
	}
	s.answerBulk(w, mode, results, msg)
}

// ownerConflict checks that an id may be written through the API: a
// create needs an id no other source routes; replace and delete need one
// that another source does not own. It returns 0 when it may.
func (s *Server) ownerConflict(op, id string) (int, string) {
	if id == "" {
		return http.StatusBadRequest, "no id"
	}
	if _, ours := s.store.Get(id); ours {
		return 0, ""
	}
	owner := s.otherOwner(id)
	if owner == "" || owner == config.SourceAPI {
		return 0, ""
	}
	if op == OpCreate {
		return http.StatusConflict, fmt.Sprintf("entrypoint %q already exists (source %s)", id, owner)
	}
	return http.StatusForbidden, fmt.Sprintf("entrypoint %q belongs to source %s; change it there", id, owner)
}

// fillResult completes one result from what the store did, counting the
// failures.
func (s *Server) fillResult(res *bulkResult, e Entry, err error, failed *int) {
	if err != nil {
		res.Status, res.Error = storeStatus(err), err.Error()
		*failed++
		return
	}
	switch res.Op {
	case OpCreate:
		res.Status = http.StatusCreated
	case OpReplace, "unchanged":
		res.Status = http.StatusOK
	case OpDelete:
		res.Status = http.StatusNoContent
		return
	}
	shown, err := s.shownPayload(e)
	if err != nil {
		res.Status, res.Error = http.StatusInternalServerError, err.Error()
		*failed++
		return
	}
	res.Entrypoint, res.Diagnostics = shown, orEmpty(e.Diagnostics)
}

// storeFailed answers a store error that is not a refused operation (the
// state file could not be written); it reports whether it answered.
func (s *Server) storeFailed(w http.ResponseWriter, who string, err error, n int) bool {
	if err == nil || errors.Is(err, ErrRefused) {
		return false
	}
	s.log.Error().Err(err).Str("who", who).Int("operations", n).Msg("API bulk write not applied: state file write failed")
	writeError(w, http.StatusInternalServerError, "nothing stored: "+err.Error(), nil)
	return true
}

// answerBulk writes the answer: 200 when every operation passed (or would
// have, in a dry run), 422 with each operation's outcome otherwise.
func (s *Server) answerBulk(w http.ResponseWriter, mode writeMode, results []bulkResult, failure string) {
	status := http.StatusOK
	if failure != "" {
		status = http.StatusUnprocessableEntity
	}
	all := []diagnostics.Diagnostic{}
	for _, r := range results {
		all = append(all, r.Diagnostics...)
	}
	writeJSON(w, status, bulkAnswer{DryRun: mode.dryRun, Error: failure, Results: results, Diagnostics: all})
}

// setEntrypoints is PUT /entrypoints: the API set becomes exactly the
// entrypoints given.
func (s *Server) setEntrypoints(w http.ResponseWriter, r *http.Request, who string) {
	mode, ok := readWriteMode(w, r)
	if !ok {
		return
	}
	var req setRequest
	if !readBulkBody(w, r, &req) {
		return
	}
	if req.Entrypoints == nil {
		writeError(w, http.StatusBadRequest, `the body needs "entrypoints": [] (an empty list deletes every API entrypoint)`, nil)
		return
	}
	changes := make([]Change, len(req.Entrypoints))
	var refused []bulkResult
	for i, raw := range req.Entrypoints {
		ep, ds, status, msg := s.decodeOne(raw, mode)
		if status == 0 {
			status, msg = s.ownerConflict(OpCreate, ep.ID)
		}
		if status != 0 {
			refused = append(refused, bulkResult{Op: "set", ID: ep.ID, Status: status, Error: msg, Diagnostics: orEmpty(ds)})
		}
		changes[i] = Change{Op: OpCreate, Entrypoint: ep, Diagnostics: ds}
	}
	if len(refused) > 0 {
		s.answerBulk(w, mode, refused, fmt.Sprintf("nothing stored: %d of %d entrypoints refused", len(refused), len(changes)))
		return
	}
	results, errs, err := s.store.SetAll(changes, mode.dryRun)
	if s.storeFailed(w, who, err, len(changes)) {
		return
	}
	if errors.Is(err, ErrRefused) {
		for i, e := range errs {
			if e != nil {
				refused = append(refused, bulkResult{Op: "set", ID: changes[i].Entrypoint.ID, Status: storeStatus(e), Error: e.Error(), Diagnostics: []diagnostics.Diagnostic{}})
			}
		}
		s.answerBulk(w, mode, refused, fmt.Sprintf("nothing stored: %d of %d entrypoints refused", len(refused), len(changes)))
		return
	}
	out := make([]bulkResult, len(results))
	failed := 0
	for i, res := range results {
		out[i] = bulkResult{Op: res.Op, ID: res.ID, Diagnostics: []diagnostics.Diagnostic{}}
		s.fillResult(&out[i], res.Entry, nil, &failed)
	}
	if !mode.dryRun {
		s.log.Info().Str("who", who).Int("entrypoints", len(changes)).Msg("API entrypoint set applied")
	}
	s.answerBulk(w, mode, out, "")
}

func orEmpty(ds []diagnostics.Diagnostic) []diagnostics.Diagnostic {
	if ds == nil {
		return []diagnostics.Diagnostic{}
	}
	return ds
}
