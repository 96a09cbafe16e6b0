package proxy

import (
	"net/http"

	"github.com/levee-proxy/levee/router/policy"
)

// servePolicies runs the matched route's policy chain with the exchange as
// its last step: a policy either answers the request itself (a refusal,
// a redirect, a preflight), so that the breaker, the balancer and every
// backend never see it, or passes it on, possibly changed, to serve. A
// request a policy answered is never reported to a breaker or to passive
// health: nothing was attempted.
func (x *exchange) servePolicies(ch *policy.Chain) {
	x.pw = &policyWriter{ResponseWriter: x.w, p: x.p}
	ch.Serve(x.pw, x.req, x)
	if !x.pw.reached {
		// A policy answered: what it wrote is the access log's status
		// and diagnostic.
		x.status = x.pw.status
		x.diagnostic = x.pw.Header().Get(HeaderDiagnostic)
	}
}

// ServeHTTP is the chain's last step: the request (as the policies left
// it) goes to the route's backends.
func (x *exchange) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x.pw.reached = true
	if w == x.pw {
		w = x.pw.ResponseWriter // no policy wrapped it: write directly
	}
	x.w, x.req = w, r
	x.serve()
}

// policyWriter records the status a policy answered with, the user a
// policy authenticated and the body bytes that passed, and unwraps for
// http.ResponseController.
type policyWriter struct {
	http.ResponseWriter
	p      *Handler // serves other routes (ServeRoute)
	status int
	// reached: the policies passed the request on to the exchange.
	reached bool
	// authed: a policy authenticated the request as user.
	authed bool
	user   string
	// sent counts the body bytes written through the chain (after a
	// compress policy, the bytes the client gets).
	sent int64
}

// RecordUser implements policy.UserRecorder.
func (w *policyWriter) RecordUser(name string) { w.authed, w.user = true, name }

func (w *policyWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *policyWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.sent += int64(n)
	return n, err
}

// Flush passes a policy's flush on.
func (w *policyWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the server's writer.
func (w *policyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
