package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// Sticky sessions (sticky.cookie.*) are part of the pick, not a chain
// policy: the balancer is asked only when the client's cookie names no
// backend that may take the attempt.
//
// The cookie names a backend by an opaque id: the first 16 hex digits of
// SHA-256 over the route id and the backend's address, so a client learns
// nothing of the network behind Levee, and every Levee replica and
// restart agrees on the id without shared state. A cookie is honoured only
// while its backend is still in the route, has a weight, and is eligible
// at the strictest level (healthy, not ejected, its breaker not open, not
// tried yet in this request); otherwise the balancer picks, as for a
// client without the cookie, and the response carries a new cookie for
// the backend it picked. A retry of the same request is thus re-pinned to
// the backend that answers it.

// stickyIDLen is the length of a backend's id in the cookie.
const stickyIDLen = 16

// stickyID is b's opaque id on the route.
func stickyID(route string, b *router.Backend) string {
	sum := sha256.Sum256([]byte(route + "\x00" + b.HostPort()))
	return hex.EncodeToString(sum[:stickyIDLen/2])
}

// stickyPick returns the backend the client's cookie names, when it may
// take this attempt.
func (x *exchange) stickyPick(s *config.Sticky) *router.Backend {
	if x.level > 0 {
		return nil
	}
	c, err := x.req.Cookie(s.CookieName)
	if err != nil || len(c.Value) != stickyIDLen {
		return nil
	}
	id := x.route.Config().ID
	for _, b := range x.route.Backends() {
		if b.Weight() > 0 && stickyID(id, b) == c.Value {
			if x.eligible(b) {
				return b
			}
			return nil
		}
	}
	return nil
}

// issueSticky has the response carry a cookie naming b. A later pick in
// the same request (a retry) replaces it.
func (x *exchange) issueSticky(s *config.Sticky, b *router.Backend) {
	c := &http.Cookie{Name: s.CookieName, Value: stickyID(x.route.Config().ID, b), Path: "/",
		Secure: s.Secure, HttpOnly: s.HTTPOnly}
	switch s.SameSite {
	case config.SameSiteNone:
		c.SameSite = http.SameSiteNoneMode
	case config.SameSiteLax:
		c.SameSite = http.SameSiteLaxMode
	case config.SameSiteStrict:
		c.SameSite = http.SameSiteStrictMode
	}
	if sw, ok := x.w.(*stickyWriter); ok {
		sw.cookie = c.String()
		return
	}
	x.w = &stickyWriter{ResponseWriter: x.w, cookie: c.String()}
}

// stickyWriter adds the sticky cookie to the response's header, beside
// the backend's own Set-Cookie lines, when the header goes out.
type stickyWriter struct {
	http.ResponseWriter
	cookie string
	done   bool
}

func (w *stickyWriter) WriteHeader(status int) {
	// Interim answers (103) do not carry it; a 101 never comes here (the
	// backend's is relayed on the hijacked connection as it came).
	if !w.done && status >= 200 {
		w.done = true
		h := w.ResponseWriter.Header()
		// Clip: the backend's slice is not appended to in place.
		h["Set-Cookie"] = append(slices.Clip(h["Set-Cookie"]), w.cookie)
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *stickyWriter) Write(b []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes on; the proxy asserts http.Flusher on its writer.
func (w *stickyWriter) Flush() {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap is for http.ResponseController (deadlines, hijacking).
func (w *stickyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
