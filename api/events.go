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
//	id: <id>
//	event: <type>
//	data: {"id":...,"type":...,"time":...,"data":...}
//
// and an idle stream gets a ": heartbeat" comment every Heartbeat. A
// client that names the last event it saw (the Last-Event-ID header, as
// the HTML standard's EventSource sends on reconnecting, or the after
// query parameter; GET /events/recent's last_id) first gets the
// remembered events that came later, then the live ones: nothing is lost
// or repeated in between.
func (s *Server) events(w http.ResponseWriter, r *http.Request, _ string) {
	rc := http.NewResponseController(w)
	// The stream is long-lived: lift any server write deadline for it.
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		writeError(w, http.StatusInternalServerError, "cannot stream: "+err.Error(), nil)
		return
	}
	after := r.Header.Get("Last-Event-ID")
	if q := r.URL.Query().Get("after"); q != "" {
		after = q
	}
	ch, missed, cancel := s.router.SubscribeAfter(s.buffer, after)
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

	var buf bytes.Buffer
	for _, ev := range missed {
		if !s.sendEvent(w, &buf, ev) {
			return
		}
	}
	if len(missed) > 0 && rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(s.heartbeat)
	defer tick.Stop()
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
			if !s.sendEvent(w, &buf, ev) {
				return
			}
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// sendEvent writes one event; false when the client is gone. An event
// that cannot be encoded is logged and skipped.
func (s *Server) sendEvent(w http.ResponseWriter, buf *bytes.Buffer, ev status.Event) bool {
	buf.Reset()
	if err := writeEvent(buf, ev); err != nil {
		s.log.Warn().Err(err).Str("type", ev.Type).Msg("event not sent over SSE: cannot encode")
		return true
	}
	_, err := w.Write(buf.Bytes())
	return err == nil
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
	if ev.ID != "" {
		buf.WriteString("id: ")
		buf.WriteString(sanitizeLine(ev.ID))
		buf.WriteString("\n")
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
