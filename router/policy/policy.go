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
// order, how a refusal is answered and counted, and the Kind each
// package declares (kind.go) so that the router compiles a route by
// walking a list of kinds (router.DefaultPolicies) instead of naming
// each policy.
package policy

import (
	"io"
	"net/http"
)

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

// StageErrors is the error pages' stage: after the rewrites, before
// compression (between the fixed stages above, so that their values stay).
const StageErrors = StageRewrite + 5

// A Policy is one compiled per-route policy.
type Policy interface {
	// Name is the policy's name in metrics and logs (e.g. "basic-auth").
	Name() string
	// Stage places the policy in the chain.
	Stage() Stage
	// Serve either answers the request or calls next.ServeHTTP, once.
	Serve(w http.ResponseWriter, r *http.Request, next http.Handler)
}

// HeaderDiagnostic is the response header naming why Levee answered a
// request itself (the same header the proxy writes for its own answers).
const HeaderDiagnostic = "X-Levee-Diagnostic"

// The refusal reasons: the X-Levee-Diagnostic values of the access
// policies, and the reason label of levee_policy_refusals_total.
const (
	// ReasonUnauthorized: basic or forward auth did not accept the
	// request's credentials (401, or the auth service's own answer).
	ReasonUnauthorized = "unauthorized"
	// ReasonForbiddenIP: the client address is not in the IP allow-list.
	ReasonForbiddenIP = "forbidden-ip"
	// ReasonRateLimited: the client's token bucket is empty (429).
	ReasonRateLimited = "rate-limited"
	// ReasonTooManyInFlight: the in-flight limit is reached (429).
	ReasonTooManyInFlight = "too-many-in-flight"
	// ReasonAuthUnavailable: the forward-auth service could not be asked
	// (unreachable, timed out, broken answer); the request is refused,
	// never let through.
	ReasonAuthUnavailable = "auth-unavailable"
	// ReasonBadHeader: a credential field came twice (400), so that the
	// policy and the backend could read different ones.
	ReasonBadHeader = "bad-header"
	// ReasonAuthThrottled: the client address has failed basic auth too
	// often on the route; it is refused without a password check (429).
	ReasonAuthThrottled = "auth-throttled"
	// ReasonAuthBusy: every password-check slot of the process stayed busy
	// for the whole wait (503); the backend is not at fault.
	ReasonAuthBusy = "auth-busy"
	// ReasonPolicyMisconfigured: the policy's configuration is invalid
	// (a bad CIDR, a hash Levee cannot verify, an unreadable users file) and the
	// route denies every request rather than fail open.
	ReasonPolicyMisconfigured = "policy-misconfigured"
)

// Recorder counts refusals; the router implements it with the
// levee_policy_refusals_total{route,policy,reason} counter.
type Recorder interface {
	Refused(route, policy, reason string)
}

// Refuser answers and counts one policy's refusals on one route. Policies
// get it when they are compiled.
type Refuser struct {
	Route  string
	Policy string
	Rec    Recorder // nil: refusals are not counted
}

// Refuse answers the request with status, the X-Levee-Diagnostic reason
// and a short plain-text body, and counts the refusal. Headers the policy
// set on w before (Retry-After, WWW-Authenticate) are kept.
func (f Refuser) Refuse(w http.ResponseWriter, status int, reason, body string) {
	h := w.Header()
	h.Set(HeaderDiagnostic, reason)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
	f.Count(reason)
}

// Count counts a refusal the policy answered itself (forward auth relays
// the auth service's answer).
func (f Refuser) Count(reason string) {
	if f.Rec != nil {
		f.Rec.Refused(f.Route, f.Policy, reason)
	}
}
