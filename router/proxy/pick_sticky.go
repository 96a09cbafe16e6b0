package proxy

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/http"
	"slices"
	"sync"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// Sticky sessions (sticky.cookie.*) are part of the pick, not a chain
// policy: the balancer is asked only when the client's cookie names no
// backend that may take the attempt.
//
// The cookie names a backend by an opaque id: the first 16 hex digits of
// HMAC-SHA256, keyed by Options.StickySecret, over the route id and the
// backend's address. Keyed, so that a client learns nothing of the network
// behind Levee: an unkeyed hash of "route, address" is inverted offline by
// trying the few addresses of a private network. Replicas and restarts
// agree on the id when they share the secret (--sticky-secret); a cookie
// made with another secret (or by an older, unkeyed Levee) names no
// backend and is treated as no cookie. A cookie is honoured only while
// its backend is still in the route, has a weight, and is eligible at the
// strictest level (healthy, not ejected, its breaker not open, not tried
// yet in this request); otherwise the balancer picks, as for a client
// without the cookie, and the response carries a new cookie for the
// backend it picked. A retry of the same request is thus re-pinned to the
// backend that answers it.

// stickyIDLen is the length of a backend's id in the cookie (hex digits).
const stickyIDLen = 16

// stickyKey computes backend ids under one secret. Each hasher is keyed
// once and Reset between uses (the HMAC's keyed state is kept), so an id
// costs two SHA-256 blocks and no allocation.
type stickyKey struct {
	pool sync.Pool // *stickyHasher
}

type stickyHasher struct {
	mac hash.Hash
	buf []byte
}

func newStickyKey(secret []byte) *stickyKey {
	k := &stickyKey{}
	secret = bytes.Clone(secret)
	k.pool.New = func() any { return &stickyHasher{mac: hmac.New(sha256.New, secret)} }
	return k
}

// sum is the raw id of the backend at hostport on route.
func (k *stickyKey) sum(route, hostport string) (id [stickyIDLen / 2]byte) {
	h := k.pool.Get().(*stickyHasher)
	h.buf = append(append(append(h.buf[:0], route...), 0), hostport...)
	h.mac.Reset()
	h.mac.Write(h.buf)
	var out [sha256.Size]byte
	copy(id[:], h.mac.Sum(out[:0]))
	k.pool.Put(h)
	return id
}

// id is the cookie value naming the backend at hostport on route.
func (k *stickyKey) id(route, hostport string) string {
	sum := k.sum(route, hostport)
	return hex.EncodeToString(sum[:])
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
	var want [stickyIDLen / 2]byte
	if _, err := hex.Decode(want[:], []byte(c.Value)); err != nil {
		return nil
	}
	id := x.route.Config().ID
	for _, b := range x.route.Backends() {
		if b.Weight() > 0 && x.p.sticky.sum(id, b.HostPort()) == want {
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
	c := &http.Cookie{Name: s.CookieName, Value: x.p.sticky.id(x.route.Config().ID, b.HostPort()), Path: "/",
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
