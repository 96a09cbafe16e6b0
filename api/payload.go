package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/levee-proxy/levee/api/store"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// formatOf maps a Content-Type to a payload format; parameters such as
// charset are allowed.
func formatOf(contentType string) (config.Format, bool) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return 0, false
	}
	switch strings.ToLower(mt) {
	case "application/json":
		return config.FormatJSON, true
	case "application/yaml", "application/x-yaml", "text/yaml":
		return config.FormatYAML, true
	}
	return 0, false
}

// decodeEntry reads and validates an entrypoint payload. On failure it has
// answered the client (415, 413, 400, 422) and returns false. src names the
// object for diagnostics when it is already known (PUT).
func (s *Server) decodeEntry(w http.ResponseWriter, r *http.Request, src diagnostics.Source) (config.Entrypoint, []diagnostics.Diagnostic, bool) {
	format, body, ok := readPayload(w, r, "an entrypoint payload")
	if !ok {
		return config.Entrypoint{}, nil, false
	}
	src.Provider = config.SourceAPI
	ep, ds, err := s.codec.Decode(format, body, src)
	if err != nil {
		status, msg, eds := inputFailure(err)
		writeError(w, status, msg, eds)
		return config.Entrypoint{}, nil, false
	}
	ep, ds = store.OwnEntrypoint(ep, ds)
	ep, ds, status, msg := s.withStoredHashes(ep, ds, src)
	if status != 0 {
		writeError(w, status, msg, ds)
		return config.Entrypoint{}, nil, false
	}
	// The decoder enforces the name grammar too; checked again here because
	// the id becomes a URL path segment and a state file key.
	if !config.NamePattern.MatchString(ep.ID) {
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("name %q is not a valid id: want %s", ep.ID, config.NamePattern), ds)
		return config.Entrypoint{}, nil, false
	}
	return ep, ds, true
}

// readPayload reads a request's JSON or YAML body (what names what it
// should hold, for the error of an empty one), answering the request
// itself when it cannot.
func readPayload(w http.ResponseWriter, r *http.Request, what string) (config.Format, []byte, bool) {
	format, ok := formatOf(r.Header.Get("Content-Type"))
	if !ok {
		writeError(w, http.StatusUnsupportedMediaType,
			fmt.Sprintf("Content-Type %q is not supported: send application/json or application/yaml", r.Header.Get("Content-Type")), nil)
		return 0, nil, false
	}
	if r.ContentLength > MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body of %d bytes is over the limit of %d", r.ContentLength, MaxBodyBytes), nil)
		return 0, nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body is over the limit of %d bytes", MaxBodyBytes), nil)
			return 0, nil, false
		}
		writeError(w, http.StatusBadRequest, "read body: "+err.Error(), nil)
		return 0, nil, false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		writeError(w, http.StatusBadRequest, "empty body: send "+what, nil)
		return 0, nil, false
	}
	return format, body, true
}

// inputFailure turns a decoder error into the answer: a config.InputError keeps
// its status (400 or 422) and diagnostics; anything else is a malformed
// payload.
func inputFailure(err error) (status int, msg string, ds []diagnostics.Diagnostic) {
	var ie *config.InputError
	if errors.As(err, &ie) {
		status = ie.Status
		if status < 400 || status > 499 {
			status = http.StatusBadRequest
		}
		return status, ie.Message, ie.Diagnostics
	}
	return http.StatusBadRequest, err.Error(), nil
}

// storedBody is the 201/200 answer: the canonical payload's fields (as
// answers show them: redacted) and "diagnostics", spliced so the payload's
// field order is kept.
func (s *Server) storedBody(e Entry) ([]byte, error) {
	ds := e.Diagnostics
	if ds == nil {
		ds = []diagnostics.Diagnostic{}
	}
	dj, err := json.Marshal(ds)
	if err != nil {
		return nil, err
	}
	shown, err := s.shownPayload(e)
	if err != nil {
		return nil, err
	}
	p := bytes.TrimSpace(shown)
	inner := bytes.TrimSpace(p[1 : len(p)-1])
	var b bytes.Buffer
	b.Grow(len(p) + len(dj) + 20)
	b.WriteByte('{')
	if len(inner) > 0 {
		b.Write(inner)
		b.WriteByte(',')
	}
	b.WriteString(`"diagnostics":`)
	b.Write(dj)
	b.WriteByte('}')
	return b.Bytes(), nil
}
