package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

// The stale cache's key and its credentials.
//
// A shared cache must not reuse an answer given to one client's
// credentials for another (RFC 9111 3.5). The credentials of a request
// are Authorization and Cookie, and, on a route with an auth policy, every
// field that policy reads or sets: forward auth's authRequestHeaders (what
// the auth service decides on) and its authResponseHeaders (the identity
// it injects for the backend). Basic auth reads Authorization, which its
// removeHeader takes off before the backend, so the fields the policies
// read are taken before the policies run (noteStaleCredentials).
//
// Without serveStaleForCredentials, a request with credentials, and every
// request of a route with an auth policy, is neither answered from the
// cache nor recorded. With it, the key holds a SHA-256 of the credentials,
// so a client is only answered what was answered to the same ones. A
// forward-auth route without authRequestHeaders sends the auth service
// every field of the request: none can be left out of the credentials, so
// such a route keeps nothing.

// hasAuthPolicy reports whether a route decides who the client is: basic
// or forward auth. An IP allow-list admits or refuses but names nobody.
func hasAuthPolicy(ep *config.Entrypoint) bool {
	return ep.Access.BasicAuth != nil || ep.Access.ForwardAuth != nil
}

// hasBody reports whether a request carries a body (RFC 9112 6.3: a
// Content-Length other than 0, or a Transfer-Encoding).
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 || len(r.TransferEncoding) > 0
}

// carriesBody reports whether the exchange's request carries a body.
//
// One of unknown length (chunked, or an HTTP/2 or HTTP/3 GET whose stream
// may end just after its headers) on a method that gives it no meaning,
// which no attempt has read yet, is only met on the way to a stale answer
// (serveStale: the breaker refused, so nothing was sent). There the open
// breaker promises an answer at once, so the body is not read ahead
// within the client body's limits (readBody does that before dialling)
// but looked at once, for at most staleBodyWait (bodyEndsNow): ended
// without a byte, it is no body and the GET may be answered stale;
// anything else (bytes, a wait that ran out, a broken body) and it is
// taken to carry one, so it gets the open answer (a body may shape the
// answer, and the cache's key is the URL only). The client's body never
// reaches a breaker here: no attempt is made.
func (x *exchange) carriesBody() bool {
	if x.body == nil && x.stream == nil && x.attempts == 0 && x.req.ContentLength < 0 &&
		!methodDefinesBody(x.req.Method) && !isGRPC(x.req.Header) {
		return !x.bodyEndsNow()
	}
	if x.body != nil {
		return len(x.body) > 0
	}
	return hasBody(x.req)
}

// staleBodyWait bounds the look at a body of unknown length before a
// stale answer (carriesBody). A client that has no body ends its stream
// with the headers or in the packet after them: a longer wait would only
// hold back the open breaker's answer to a client whose body is slow or
// never comes. At most the client body's own timeout.
const staleBodyWait = 250 * time.Millisecond

// bodyEndsNow makes one read of the client's body, within staleBodyWait,
// and reports whether the body ended there without a byte; it is then
// the buffered empty body. A byte read is kept in front of the rest, as
// bufferBody keeps a part (x.stream). A read that failed or ran out of
// time leaves the body broken (badBody): the exchange only answers on
// Levee's behalf after it.
func (x *exchange) bodyEndsNow() bool {
	if x.req.Body == nil || x.req.Body == http.NoBody {
		return true
	}
	body := x.newClientBody()
	var b [1]byte
	x.peekingBody = true
	n, err := body.Read(b[:])
	x.peekingBody = false
	if n > 0 {
		x.stream = streamBody{Reader: io.MultiReader(bytes.NewReader(b[:n]), body), Closer: body}
		return false
	}
	if err == io.EOF {
		x.body, x.replayable = []byte{}, true
		return true
	}
	return false
}

// noteStaleCredentials hashes, before the route's policies run, the
// fields they read, when the route keeps stale answers for credentials:
// a policy may remove them from the request the backend gets. Other
// routes pay one check.
func (x *exchange) noteStaleCredentials() {
	ep := x.route.Config()
	cb := ep.CircuitBreaker
	if cb == nil || cb.Fallback.ServeStale <= 0 || !cb.Fallback.ServeStaleForCredentials || !hasAuthPolicy(ep) {
		return
	}
	if fa := ep.Access.ForwardAuth; fa != nil && len(fa.AuthRequestHeaders) == 0 {
		return // the auth service reads every field: nothing can be keyed
	}
	h := sha256.New()
	writeFields(h, x.req.Header, "Authorization", "Cookie")
	if fa := ep.Access.ForwardAuth; fa != nil {
		writeFields(h, x.req.Header, fa.AuthRequestHeaders...)
	}
	x.fallback().credentials = h.Sum(nil)
}

// staleKey is the cache key of the exchange's request: host and request
// target, and, for a request with credentials, a hash of them. ok is false
// when the request may not use the cache.
func (x *exchange) staleKey(cb *config.CircuitBreaker) (key string, ok bool) {
	req := x.req
	key = strings.ToLower(req.Host) + " " + req.URL.RequestURI()
	ep := x.route.Config()
	if !hasAuthPolicy(ep) {
		auth, cookie := req.Header["Authorization"], req.Header["Cookie"]
		if len(auth) == 0 && len(cookie) == 0 {
			return key, true
		}
		if !cb.Fallback.ServeStaleForCredentials {
			return "", false
		}
		h := sha256.New()
		writeFields(h, req.Header, "Authorization", "Cookie")
		return key + " " + hex.EncodeToString(h.Sum(nil)), true
	}
	if x.fb == nil || x.fb.credentials == nil {
		return "", false // no serveStaleForCredentials, or nothing to key by
	}
	h := sha256.New()
	h.Write(x.fb.credentials)
	if fa := ep.Access.ForwardAuth; fa != nil {
		// The identity forward auth set on the request (or removed).
		writeFields(h, req.Header, fa.AuthResponseHeaders...)
	}
	return key + " " + hex.EncodeToString(h.Sum(nil)), true
}

// writeFields writes the values of the named fields to h, each value
// ended by NUL and each field by SOH, so that no two different sets of
// values write the same bytes: a field value holds neither (RFC 9110 5.5;
// both HTTP servers refuse a request whose value does).
func writeFields(h hash.Hash, hdr http.Header, names ...string) {
	for _, name := range names {
		h.Write([]byte(http.CanonicalHeaderKey(name)))
		h.Write([]byte{0})
		for _, v := range hdr.Values(name) {
			h.Write([]byte(v))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
}
