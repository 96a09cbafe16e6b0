package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/levee-proxy/levee/router/status"
)

// events streams the router's bus as Server-Sent Events until the client
// goes (or the request context ends, e.g. at shutdown when the server's
// BaseContext is cancelled). Each event is
//
//	event: <type>
//	data: {"type":...,"time":...,"data":...}
//
// and an idle stream gets a ": heartbeat" comment every Heartbeat.
func (s *Server) events(w http.ResponseWriter, r *http.Request, _ string) {
	rc := http.NewResponseController(w)
	// The stream is long-lived: lift any server write deadline for it.
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		writeError(w, http.StatusInternalServerError, "cannot stream: "+err.Error(), nil)
		return
	}
	ch, cancel := s.router.Subscribe(s.buffer)
	defer cancel()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	// An opening comment tells the client the subscription is live.
	if _, err := w.Write([]byte(": subscribed\n\n")); err != nil {
		return
	}
	if rc.Flush() != nil {
		return
	}

	tick := time.NewTicker(s.heartbeat)
	defer tick.Stop()
	var buf bytes.Buffer
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if _, err := w.Write([]byte(": heartbeat\n\n")); err != nil {
				return
			}
		case ev, ok := <-ch:
			if !ok {
				return
			}
			buf.Reset()
			if err := writeEvent(&buf, ev); err != nil {
				s.log.Warn().Err(err).Str("type", ev.Type).Msg("event not sent over SSE: cannot encode")
				continue
			}
			if _, err := w.Write(buf.Bytes()); err != nil {
				return
			}
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// writeEvent renders one SSE event. JSON never contains a raw newline, so
// one data line holds it.
func writeEvent(buf *bytes.Buffer, ev status.Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	typ := ev.Type
	if typ == "" {
		typ = "message"
	}
	buf.WriteString("event: ")
	buf.WriteString(sanitizeLine(typ))
	buf.WriteString("\ndata: ")
	buf.Write(data)
	buf.WriteString("\n\n")
	return nil
}

// sanitizeLine keeps an event name on its line: a newline would end the
// field early and let the rest be read as another field.
func sanitizeLine(s string) string {
	return string(bytes.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, []byte(s)))
}
