// Package policy defines the traffic policies that run around one route's
// exchange: the pieces that admit or refuse a request (IP allow-list, rate
// and in-flight limits, basic and forward auth) and the pieces that change
// a request or its response (redirects, headers and CORS, path rewrites,
// compression).
//
// # The model
//
// A route's policies are compiled from its config.Entrypoint when the
// router builds a snapshot, sorted by Stage, and run as a chain: each
// Policy either answers the request itself (a refusal, a redirect, a CORS
// preflight) or calls next, possibly with a changed request or a wrapped
// ResponseWriter. The last next is the proxy's exchange: breaker
// admission, pick, attempts. A request that a policy answers never reaches
// the breaker or a backend and is never reported as a backend failure.
//
// Each policy lives in its own package below this one and has one job;
// this package holds only what they share: the interface, the fixed
// order, and how a refusal is answered and counted.
package policy

import "net/http"

// Stage is a policy's place in the chain; lower stages run first. The
// order is fixed and documented (docs/policies.md): cheap refusals first,
// so that a flood is turned away before it costs a bcrypt or an auth
// round trip, then the changes to the request, and compression last, so
// that it sees the response every other piece produced.
type Stage int

// The stages, in the order they run.
const (
	StageIPAllowList Stage = 10 * (iota + 1)
	StageRateLimit
	StageInFlight
	StageAuth
	StageRedirect
	StageHeaders
	StageRewrite
	StageCompress
)

// A Policy is one compiled per-route policy.
type Policy interface {
	// Name is the policy's name in metrics and logs (e.g. "basic-auth").
	Name() string
	// Stage places the policy in the chain.
	Stage() Stage
	// Serve either answers the request or calls next.ServeHTTP, once.
	Serve(w http.ResponseWriter, r *http.Request, next http.Handler)
}
